"""Convert BFCL multi-turn result files (`BFCL_v4_multi_turn_<category>_result.json`) into episodes.

BFCL writes one JSON object a line: `id`, `result` (turn → step → the model's response: for function-calling
models a list of `{function name: arguments as JSON text}`, else text), token counts and latencies per turn
and step, and `inference_log` (per turn the user's `begin_of_turn_query`, per step the assistant's response,
handler notes and the `tool` execution results; `state_info` entries between turns). One entry → one episode:

- messages: per turn the user's message (from the log, its text or the text blocks of its content; without a
  log, an empty user message marks the turn), per step an assistant message — calls when the response is a list of `{name: arguments}` (JSON
  text parsed, never evaluated), else its text — followed by one tool message per call, holding the
  execution result the log recorded (`error` when it starts `Error during execution`);
- a call the model wrote that is not a call — argument text that is not a JSON object, a name BFCL does not
  define (`cat<|channel|>commentary`) — is kept as written, never dropped: the failures are what a benchmark
  counts. Unreadable arguments make it `malformed` (`arguments = {"_raw": text}`, see `read_call`); BFCL then
  decodes none of that step's calls and runs none, so each of its tool messages is an error holding BFCL's
  decoding error from the log. An item of a step that is not an object is kept as the step's text;
- `task_id` = the entry id, `domain` = `bfcl`, `agent` / `model` = the result folder's model name,
  `harness` = `bfcl/multi-turn`, id `bfcl.<model>.<entry id>`;
- `termination_reason`: `max_steps` when the log says the model was forced to quit, else `user_stop`
  (BFCL's user ends after the last turn);
- `outcome`: none — BFCL scores in a separate evaluation step; `toolshift.world.external.judge_task`
  judges converted episodes with BFCL's own checker;
- `source`: converter, file, record, and `input_token_count`, `output_token_count`, `latency` verbatim;
- catalog: BFCL's own function docs where bfcl-eval is installed (`benchmark_catalogs.bfcl_catalog`), so
  every model's run has the same catalog identity; else the calls seen, labelled by verb (noted).

Only BFCL's own "Error during inference" entries (`result` is that text, not turns) are skipped, by reason. An
entry whose turns are the model's text (a prompting model's output, not decoded into steps) with no
`inference_log` is refused, naming the record: it recorded no call's result and no user message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.fileio import jsonl_lines, loads_json, open_input, require_regular
from toolshift.traces.benchmark_catalogs import bfcl_catalog
from toolshift.traces.catalog import CatalogTool, ToolCatalog, label_by_verb
from toolshift.traces.conversion import Conversion, read_call
from toolshift.traces.episode import Episode, Message, ToolCall

CONVERTER = "bfcl"
DOMAIN = "bfcl"
HARNESS = "bfcl/multi-turn"
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024
RESULT_GLOB = "*multi_turn*_result.json"
INFERENCE_ERROR = "Error during inference"
"""How BFCL's generation step writes an entry whose inference raised: `result` is this text and the traceback."""
NOT_DECODED = "Error decoding the model response"


def bfcl_files(path: Path) -> list[Path]:
    """A result file, or every multi-turn result file under a folder."""
    path = Path(path)
    if path.is_dir():
        return sorted(path.rglob(RESULT_GLOB))
    return [require_regular(path, what="BFCL result file or folder")]


def convert_bfcl(path: Path, *, skip_bad: bool = False) -> Conversion:
    path = Path(path)
    conv = Conversion(converter=CONVERTER, inputs=[str(path)])
    if path.stat().st_size > MAX_FILE_BYTES:
        raise BadInputError(f"larger than {MAX_FILE_BYTES // 2**20} MiB", source=str(path))
    model = path.parent.parent.name if path.parent.name == "multi_turn" else path.stem
    with open_input(path, what="BFCL results") as fh:
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
                conv.skip("BFCL: Error during inference (no turns were recorded)")
                continue
            conv.keep(episode, source=str(path), record=index, skip_bad=skip_bad)
    conv.catalogs[DOMAIN] = _catalog(conv)
    conv.note_unknown_tools()
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
    if isinstance(result, str) and result.startswith(INFERENCE_ERROR):
        return None
    if not isinstance(result, list):
        raise bad("result", f"must be a list of turns, or BFCL's {INFERENCE_ERROR!r} text")
    log = raw.get("inference_log")
    turn_logs = [t for t in log if isinstance(t, dict)] if isinstance(log, list) else []
    messages: list[Message] = []
    forced = False
    if not turn_logs and any(isinstance(turn, str) for turn in result):
        raise bad(
            "result",
            "each turn is the model's text, not decoded steps, and there is no inference_log: no call's "
            "result and no user message was recorded to convert",
        )
    for t, turn in enumerate(result):
        if not isinstance(turn, list):
            raise bad(f"result[{t}]", "a turn must be a list of steps")
        turn_log = turn_logs[t] if t < len(turn_logs) else {}
        query = turn_log.get("begin_of_turn_query")
        texts = (
            [_query_text(m.get("content")) for m in query if isinstance(m, dict)]
            if isinstance(query, list)
            else []
        )
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
            not_decoded = next(
                (
                    e
                    for e in step_log
                    if isinstance(e, dict) and str(e.get("content", "")).startswith(NOT_DECODED)
                ),
                None,
            )
            messages += _step(response, results, not_decoded, t, s, (str(path), entry_id))
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


def _query_text(content: Any) -> Any:
    """A user message's text: a string as it is, or the text blocks of a list of content blocks joined
    (Anthropic's models log `[{"type": "text", "text": …}]`); anything else as it is (refused by the caller)."""
    if not isinstance(content, list):
        return content
    if not content or not all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return None
    texts = [b.get("text") for b in content]
    return "\n".join(texts) if all(isinstance(x, str) for x in texts) else None


def _step(
    response: Any, results: list[Any], not_decoded: Any, t: int, s: int, where: tuple[str, str]
) -> list[Message]:
    """One step's assistant message and a tool message per call (see the module docstring)."""
    if isinstance(response, dict):
        response = [response]
    if not isinstance(response, list):
        return [Message(role="assistant", content=str(response), requestor="assistant")]
    calls: list[ToolCall] = []
    texts: list[str] = []
    for i, item in enumerate(response):
        if not isinstance(item, dict):
            texts.append(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False, default=str))
            continue
        for name, args in item.items():
            field = f"result[{t}][{s}][{i}].{name}"
            calls.append(
                read_call(f"t{t}s{s}c{len(calls)}", name, args, source=where[0], record=where[1], field=field)
            )
    content = "\n".join(texts) or None
    if not calls:
        return [Message(role="assistant", content=content or "", requestor="assistant")]
    out = [Message(role="assistant", content=content, tool_calls=calls, requestor="assistant")]
    undecoded = not_decoded is not None or any(c.malformed for c in calls) or bool(texts)
    why = None
    if undecoded:
        detail = not_decoded.get("error") if isinstance(not_decoded, dict) else None
        why = f"{NOT_DECODED}: {detail}" if isinstance(detail, str) and detail else f"{NOT_DECODED}."
    for k, call in enumerate(calls):
        text = results[k] if k < len(results) else None
        content = text if isinstance(text, str) else (None if text is None else json.dumps(text))
        if undecoded and content is None:
            content = why
        out.append(
            Message(
                role="tool",
                content=content,
                tool_call_id=call.id,
                name=call.name,
                error=undecoded or bool(content and content.startswith("Error during execution")),
                requestor="assistant",
            )
        )
    return out


def _catalog(conv: Conversion) -> ToolCatalog:
    """BFCL's own function docs where bfcl-eval is installed, else the tools called, labelled by verb."""
    names = sorted({c.name for e in conv.episodes for m in e.messages for c in m.tool_calls or []})
    catalog = bfcl_catalog(DOMAIN, names)
    if catalog is not None:
        return catalog
    conv.notes.append(
        "bfcl-eval is not installed: the bfcl catalog lists only the tools these runs called, labelled by "
        "verb, so a flow learned on another model's run will not match it (pip install 'toolshift[bfcl]')"
    )
    tools = []
    for name in names:
        labelled = label_by_verb(name)
        effect, note = labelled or ("write", "no verb rule: assumed to write")
        tools.append(CatalogTool(name=name, effect=effect, origin="verb-rule", note=note))
    return ToolCatalog(
        domain=DOMAIN,
        tools=tools,
        source="tools called in BFCL result files (bfcl-eval not installed)",
        results="python",
    )
