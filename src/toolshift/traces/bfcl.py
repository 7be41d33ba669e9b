"""Convert BFCL multi-turn result files (`BFCL_v4_multi_turn_<category>_result.json`) into episodes.

BFCL writes one JSON object a line: `id`, `result` (turn → step → the model's response: for function-calling
models a list of `{function name: arguments as JSON text}`, else text), token counts and latencies per turn
and step, and `inference_log` (per turn the user's `begin_of_turn_query`, per step the assistant's response,
handler notes and the `tool` execution results; `state_info` entries between turns). One entry → one episode:

- messages: per turn the user's message (from the log; without a log, an empty user message marks the
  turn), per step an assistant message — calls when the response is a list of `{name: arguments}` (JSON
  text parsed, never evaluated), else its text — followed by one tool message per call, holding the
  execution result the log recorded (`error` when it starts `Error during execution`);
- `task_id` = the entry id, `domain` = `bfcl`, `agent` / `model` = the result folder's model name,
  `harness` = `bfcl/multi-turn`, id `bfcl.<model>.<entry id>`;
- `termination_reason`: `max_steps` when the log says the model was forced to quit, else `user_stop`
  (BFCL's user ends after the last turn);
- `outcome`: none — BFCL scores in a separate evaluation step; `toolshift.world.external.judge_task`
  judges converted episodes with BFCL's own checker;
- `source`: converter, file, record, and `input_token_count`, `output_token_count`, `latency` verbatim.

Records whose `result` is not a list (BFCL's "Error during inference" strings) are skipped by reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.fileio import jsonl_lines, loads_json
from toolshift.traces.catalog import CatalogTool, ToolCatalog, label_by_verb
from toolshift.traces.conversion import Conversion
from toolshift.traces.episode import Episode, Message, ToolCall

CONVERTER = "bfcl"
DOMAIN = "bfcl"
HARNESS = "bfcl/multi-turn"
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024
RESULT_GLOB = "*multi_turn*_result.json"


def bfcl_files(path: Path) -> list[Path]:
    """A result file, or every multi-turn result file under a folder."""
    path = Path(path)
    if path.is_dir():
        return sorted(path.rglob(RESULT_GLOB))
    if not path.is_file():
        raise BadInputError("no such BFCL result file or folder", source=str(path))
    return [path]


def convert_bfcl(path: Path, *, skip_bad: bool = False) -> Conversion:
    path = Path(path)
    conv = Conversion(converter=CONVERTER, inputs=[str(path)])
    if path.stat().st_size > MAX_FILE_BYTES:
        raise BadInputError(f"larger than {MAX_FILE_BYTES // 2**20} MiB", source=str(path))
    model = path.parent.parent.name if path.parent.name == "multi_turn" else path.stem
    with path.open("rb") as fh:
        for line in jsonl_lines(fh, source=str(path), max_line_bytes=MAX_LINE_BYTES):
            if line.is_blank():
                continue
            index = line.number - 1
            conv.records += 1
            try:
                raw = loads_json(line.data, source=str(path), record=index)
                episode = _episode(raw, path, index, model)
            except BadInputError as exc:
                conv.skip_bad(exc, skip_bad=skip_bad)
                continue
            if episode is None:
                conv.skip("inference failed (result is not a list of turns)")
                continue
            conv.episodes.append(episode)
    conv.catalogs[DOMAIN] = _catalog(conv.episodes)
    return conv


def _episode(raw: Any, path: Path, index: int, model: str) -> Episode | None:
    def bad(field: str, why: str) -> BadInputError:
        record = raw.get("id", index) if isinstance(raw, dict) else index
        return BadInputError(why, source=str(path), record=record, field=field)

    if not isinstance(raw, dict):
        raise BadInputError("a record must be a JSON object", source=str(path), record=index)
    entry_id = raw.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        raise bad("id", "must be a non-empty string")
    result = raw.get("result")
    if not isinstance(result, list):
        return None
    log = raw.get("inference_log")
    turn_logs = [t for t in log if isinstance(t, dict)] if isinstance(log, list) else []
    messages: list[Message] = []
    forced = False
    for t, turn in enumerate(result):
        if not isinstance(turn, list):
            raise bad(f"result[{t}]", "a turn must be a list of steps")
        turn_log = turn_logs[t] if t < len(turn_logs) else {}
        query = turn_log.get("begin_of_turn_query")
        texts = [m.get("content") for m in query if isinstance(m, dict)] if isinstance(query, list) else []
        if any(not isinstance(x, str) for x in texts):
            raise bad(f"inference_log[{t}].begin_of_turn_query", "messages must have text content")
        messages.append(Message(role="user", content="\n".join(texts), requestor="user"))
        for s, response in enumerate(turn):
            step_log = turn_log.get(f"step_{s}", [])
            step_log = step_log if isinstance(step_log, list) else []
            forced |= any(
                isinstance(e, dict) and "forced to quit" in str(e.get("content", "")) for e in step_log
            )
            results = [e.get("content") for e in step_log if isinstance(e, dict) and e.get("role") == "tool"]
            messages += _step(response, results, f"result[{t}][{s}]", bad, t, s)
    return Episode(
        id=f"bfcl.{model}.{entry_id}",
        task_id=entry_id,
        trial=0,
        domain=DOMAIN,
        agent=model,
        model=model,
        harness=HARNESS,
        messages=messages,
        termination_reason="max_steps" if forced else "user_stop",
        source={
            "converter": CONVERTER,
            "file": str(path),
            "record": index,
            **{k: raw[k] for k in ("input_token_count", "output_token_count", "latency") if k in raw},
        },
    )


def _step(response: Any, results: list[Any], where: str, bad: Any, t: int, s: int) -> list[Message]:
    if isinstance(response, dict):
        response = [response]
    if not isinstance(response, list):
        return [Message(role="assistant", content=str(response), requestor="assistant")]
    calls: list[ToolCall] = []
    for i, item in enumerate(response):
        if not isinstance(item, dict):
            raise bad(f"{where}[{i}]", "a call must be an object {name: arguments}")
        for name, args in item.items():
            if isinstance(args, str):
                try:
                    args = loads_json(args)
                except BadInputError as exc:
                    raise bad(f"{where}[{i}].{name}", f"arguments are not JSON: {exc.detail}") from None
            if not isinstance(args, dict):
                raise bad(f"{where}[{i}].{name}", "arguments must be a JSON object")
            calls.append(ToolCall(id=f"t{t}s{s}c{len(calls)}", name=str(name), arguments=args))
    if not calls:
        return [Message(role="assistant", content="", requestor="assistant")]
    out = [Message(role="assistant", tool_calls=calls, requestor="assistant")]
    for k, call in enumerate(calls):
        text = results[k] if k < len(results) else None
        content = text if isinstance(text, str) else (None if text is None else json.dumps(text))
        out.append(
            Message(
                role="tool",
                content=content,
                tool_call_id=call.id,
                name=call.name,
                error=bool(content and content.startswith("Error during execution")),
                requestor="assistant",
            )
        )
    return out


def _catalog(episodes: list[Episode]) -> ToolCatalog:
    names = sorted({c.name for e in episodes for m in e.messages for c in m.tool_calls or []})
    tools = []
    for name in names:
        labelled = label_by_verb(name)
        effect, note = labelled or ("write", "no verb rule: assumed to write")
        tools.append(CatalogTool(name=name, effect=effect, origin="verb-rule", note=note))
    return ToolCatalog(domain=DOMAIN, tools=tools, source="tools called in BFCL result files")
