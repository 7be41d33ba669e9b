"""Convert AgentDojo run logs (`<logdir>/<pipeline>/<suite>/<user task>/<attack>/<injection task>.json`) into episodes.

AgentDojo's `TraceLogger` writes one JSON file per task run: `suite_name`, `pipeline_name`, `user_task_id`,
`injection_task_id`, `attack_type`, `injections`, `messages` (system, user, assistant with `tool_calls`
`{function, args, id}`, tool with `tool_call`, `error`; contents as lists of `{type, content}` blocks, or
strings in older logs), `error`, `utility`, `security`, `duration`, `benchmark_version`. One file → one episode:

- messages map one to one; text blocks are joined, other blocks (thinking) left out; a tool message gets
  `name` from its `tool_call` and `error` when AgentDojo recorded one (the error text is its content);
- `task_id` = `<suite>.<user task>`, `domain` = `agentdojo-<suite>`, `agent` / `model` = the pipeline name,
  `harness` = `agentdojo/<benchmark version>`, id `agentdojo.<pipeline>.<suite>.<user task>`;
- `termination_reason`: `agent_error` when the run logged an error, else `agent_stop`;
- `outcome`: `success` = AgentDojo's `utility`, `reward` 1/0, `judged_by` = `agentdojo-utility`, `info` with
  `security`, `duration`, `error`, `benchmark_version`; a log whose `utility` is null (never judged: some of
  the Mixtral pipeline's) keeps no verdict (`success` and `reward` null), and the conversion's notes count them;
- a tool call that is not a named call with an object of `args` is kept, `malformed` (see `read_call`);
- catalog: the suite's own functions where agentdojo is installed (`benchmark_catalogs.agentdojo_catalog`),
  the same for every pipeline's logs; else the calls seen, labelled by verb (noted);
- skipped by reason: runs with an injection task or an attack (AgentDojo's security benchmark: only benign
  utility runs are converted).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.fileio import loads_json, read_text, require_regular
from toolshift.traces.benchmark_catalogs import agentdojo_catalog
from toolshift.traces.catalog import CatalogTool, ToolCatalog, label_by_verb
from toolshift.traces.conversion import Conversion, read_call
from toolshift.traces.episode import Episode, Message, Outcome

CONVERTER = "agentdojo"
JUDGE = "agentdojo-utility"
MAX_FILE_BYTES = 64 * 1024 * 1024
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")


def agentdojo_files(path: Path) -> list[Path]:
    """A log file, or every log file under a log folder."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.rglob("*.json") if not p.is_dir())  # a FIFO is refused where it is read
    return [require_regular(path, what="AgentDojo log file or folder")]


def convert_agentdojo(path: Path, *, skip_bad: bool = False) -> Conversion:
    path = Path(path)
    conv = Conversion(converter=CONVERTER, inputs=[str(path)])
    conv.records += 1
    try:
        text = read_text(path, what="AgentDojo log", max_bytes=MAX_FILE_BYTES)
        raw = loads_json(text, source=str(path))
        if not isinstance(raw, dict):
            raise BadInputError("an AgentDojo log must be a JSON object", source=str(path))
        if raw.get("injection_task_id") is not None or raw.get("attack_type") not in (None, "none"):
            conv.skip("injection run (AgentDojo security benchmark; only benign runs are converted)")
            return conv
        episode = _episode(raw, path)
    except BadInputError as exc:
        conv.skip_bad(exc, skip_bad=skip_bad)
        return conv
    conv.keep(episode, source=str(path), record=0, skip_bad=skip_bad)
    if episode.outcome is not None and episode.outcome.success is None:
        conv.notes.append(f"{path}: no utility verdict (null): kept without one")
    conv.catalogs[episode.domain] = _catalog(episode, conv)
    conv.note_unknown_tools()
    return conv


def _text(content: Any, path: Path, field: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadInputError("content must be text or a list of blocks", source=str(path), field=field)
    parts = []
    for block in content:
        if not isinstance(block, dict):
            raise BadInputError("a content block must be an object", source=str(path), field=field)
        if block.get("type") == "text":
            if not isinstance(block.get("content"), str):
                raise BadInputError("a text block's content must be text", source=str(path), field=field)
            parts.append(block["content"])
    return "\n".join(parts)


def _episode(raw: dict[str, Any], path: Path) -> Episode:
    def field(name: str) -> str:
        value = raw.get(name)
        if not isinstance(value, str) or not _NAME.match(value):
            raise BadInputError("must be a short name", source=str(path), field=name)
        return value

    suite, task, pipeline = field("suite_name"), field("user_task_id"), field("pipeline_name")
    utility = raw.get("utility")
    if utility is not None and not isinstance(utility, bool):
        raise BadInputError("must be true, false or null (not judged)", source=str(path), field="utility")
    items = raw.get("messages")
    if not isinstance(items, list):
        raise BadInputError("must be a list", source=str(path), field="messages")
    messages: list[Message] = []
    for i, m in enumerate(items):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise BadInputError(
                "must be a system, user, assistant or tool message", source=str(path), field=where
            )
        content = _text(m.get("content"), path, f"{where}.content")
        if m["role"] == "assistant":
            raw_calls = m.get("tool_calls") or []
            if not isinstance(raw_calls, list):
                raise BadInputError("must be a list", source=str(path), field=f"{where}.tool_calls")
            calls = []
            for k, c in enumerate(raw_calls):
                c = c if isinstance(c, dict) else {"args": c}
                calls.append(read_call(str(c.get("id") or f"m{i}c{k}"), c.get("function"), c.get("args"),
                                       source=str(path), field=f"{where}.tool_calls[{k}].args"))  # fmt: skip
            messages.append(
                Message(role="assistant", content=content, tool_calls=calls or None, requestor="assistant")
            )
        elif m["role"] == "tool":
            call = m.get("tool_call") if isinstance(m.get("tool_call"), dict) else {}
            error = m.get("error")
            messages.append(
                Message(
                    role="tool",
                    content=error if isinstance(error, str) and error else content,
                    tool_call_id=str(m.get("tool_call_id") or call.get("id") or "") or None,
                    name=call.get("function") if isinstance(call.get("function"), str) else None,
                    error=bool(error),
                    requestor="assistant",
                )
            )
        else:
            messages.append(
                Message(role=m["role"], content=content, requestor="user" if m["role"] == "user" else None)
            )
    version = str(raw.get("benchmark_version") or "unknown")
    duration = raw.get("duration") if isinstance(raw.get("duration"), int | float) else None
    return Episode(
        id=f"agentdojo.{pipeline}.{suite}.{task}",
        task_id=f"{suite}.{task}",
        trial=0,
        domain=f"agentdojo-{suite}",
        agent=pipeline,
        model=pipeline,
        harness=f"agentdojo/{version}",
        messages=messages,
        termination_reason="agent_error" if raw.get("error") else "agent_stop",
        outcome=Outcome(
            reward=None if utility is None else float(utility),
            success=utility,
            judged_by=JUDGE,
            info={"security": raw.get("security"), "error": raw.get("error"), "benchmark_version": version},
        ),
        duration=duration,
        source={"converter": CONVERTER, "file": str(path), "record": 0},
    )


def _catalog(episode: Episode, conv: Conversion) -> ToolCatalog:
    """The suite's own functions where agentdojo is installed, else the tools called, labelled by verb."""
    names = sorted({c.name for m in episode.messages for c in m.tool_calls or []})
    suite = episode.domain.removeprefix("agentdojo-")
    version = str((episode.outcome.info if episode.outcome else {}).get("benchmark_version") or "")
    catalog = agentdojo_catalog(episode.domain, suite, version, names)
    if catalog is not None:
        return catalog
    conv.notes.append(
        f"agentdojo is not installed (or has no suite {suite!r}): the {episode.domain} catalog lists only the "
        "tools these logs called, labelled by verb, so a flow learned on another model's logs will not match "
        "it (pip install 'toolshift[agentdojo]')"
    )
    tools = []
    for name in names:
        effect, note = label_by_verb(name) or ("write", "no verb rule: assumed to write")
        tools.append(CatalogTool(name=name, effect=effect, origin="verb-rule", note=note))
    return ToolCatalog(
        domain=episode.domain,
        tools=tools,
        source="tools called in AgentDojo logs (agentdojo not installed)",
        results="yaml",
    )
