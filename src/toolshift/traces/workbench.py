"""Convert WorkBench results CSVs (`results/<domain>/<model>_<toolset>_<stamp>.csv`) into episodes.

Choices (also in docs/formats.md):

- Domain from the folder name, model and toolset (`all` / `domains`) from the file name; agent =
  model; harness `workbench/langchain-structured-chat/<toolset>`; `source` keeps file, row, toolset.
- Task id: the row's 0-based position in `processed/queries_and_answers/<domain>_queries_and_answers.csv`
  found by its query when that file is beside the results (`<root>/processed/...` for
  `<root>/results/<domain>/x.csv`); then the gold `answer` calls are kept in `outcome.info`.
  Without it, the row's position in the results file (the same order in every published file).
- The trajectory comes from `full_response`, parsed with `ast.parse` (never `eval`) as §2 of the
  format doc says: keys and `AgentAction` keywords by `literal_eval`; observations by `literal_eval`,
  else converted node by node (`array(x)` → x, `nan` → null, `Timestamp(s)` → s).
- Messages: the query as the user message; per step an assistant message (content = the model's raw
  `log`, one tool call, id `step<k>`) and a tool message (the observation: strings as they are,
  anything else as JSON). A string `tool_input` becomes `arguments = {"tool_input": <str>}`.
- The logged final `output` is the reply: one last assistant message without calls (a dict output
  is stored as JSON). Not when the run hit LangChain's limit (`Agent stopped due to iteration limit
  or time limit.` is the harness speaking, not the model).
- Tools that do not exist (`None`, `human`, `update_event` without its prefix, ...) are catalogued
  `neither` with `exists: false`; their tool message has `error: true`. Every
  send/reply/forward/create/update/delete/add tool is a `write` (the repo's side-effect lists).
- Outcome: WorkBench judges correctness by replaying calls in its sandbox, which this converter does
  not do: `reward`/`success` stay null, except `success = false` when `error` is set (an error makes
  a row wrong). `info` keeps `error`, `function_calls` and the gold `answer` calls.
- A row with an empty `full_response` (the agent raised before returning) is kept: the query as the
  only message, `termination_reason` `agent_error` (when `error` is set), `info.no_trajectory` naming
  the error's kind. Nothing is skipped. Malformed rows raise BadInputError (file, row, field) or are
  counted with `skip_bad`: text no parser can hold (a 100,000-term operator chain, unhashable set
  members, nesting past the parser's limit) and values the episode model refuses (a `log` that is
  not a string) included.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import read_text, require_regular, require_strict
from toolshift.models import Effect
from toolshift.traces.catalog import CatalogTool, ToolCatalog
from toolshift.traces.conversion import RAW_ARGUMENTS, Conversion
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall

CONVERTER = "workbench"
ITERATION_LIMIT = "Agent stopped due to iteration limit or time limit."
FILE_NAME = re.compile(
    r"^(?P<model>.+?)_(?P<toolset>all|domains)_(?P<stamp>\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})\.csv$"
)
COLUMNS = ("query", "function_calls", "full_response", "error")

WORKBENCH_TOOLS: dict[str, Effect] = {
    "calendar.get_event_information_by_id": "read",
    "calendar.search_events": "read",
    "calendar.create_event": "write",
    "calendar.delete_event": "write",
    "calendar.update_event": "write",
    "email.get_email_information_by_id": "read",
    "email.search_emails": "read",
    "email.send_email": "write",
    "email.delete_email": "write",
    "email.forward_email": "write",
    "email.reply_email": "write",
    "analytics.get_visitor_information_by_id": "read",
    "analytics.total_visits_count": "read",
    "analytics.engaged_users_count": "read",
    "analytics.traffic_source_count": "read",
    "analytics.get_average_session_duration": "read",
    "analytics.create_plot": "write",
    "project_management.get_task_information_by_id": "read",
    "project_management.search_tasks": "read",
    "project_management.create_task": "write",
    "project_management.delete_task": "write",
    "project_management.update_task": "write",
    "customer_relationship_manager.search_customers": "read",
    "customer_relationship_manager.add_customer": "write",
    "customer_relationship_manager.update_customer": "write",
    "customer_relationship_manager.delete_customer": "write",
    "company_directory.find_email_address": "read",
}


def workbench_catalog(domain: str, hallucinated: Iterable[str] = ()) -> ToolCatalog:
    """All 27 WorkBench tools (every `all`-toolset run offered them), plus names runs called that do not exist."""
    tools = [
        CatalogTool(name=n, effect=e, origin="source", note="WorkBench tools_with/without_side_effects")
        for n, e in WORKBENCH_TOOLS.items()
    ]
    tools += [
        CatalogTool(
            name=n,
            effect="neither",
            origin="source",
            exists=False,
            note="not a WorkBench tool: the harness refused it",
        )
        for n in sorted(set(hallucinated))
        if n not in WORKBENCH_TOOLS
    ]
    return ToolCatalog(
        domain=domain, tools=sorted(tools, key=lambda t: t.name), source="WorkBench 42f1b6d src/tools"
    )


def _error_kind(error: str) -> str:
    if not error:
        return "no error logged"
    if error.startswith("Context window exceeded"):
        return "context window exceeded"
    if error.startswith("An output parsing error"):
        return "output parsing error"
    if error.startswith("Agent stopped"):
        return "iteration or time limit"
    if error.startswith("Error code:"):
        return "API error"
    return "exception in the harness"


# --- the Python-repr parser -------------------------------------------------------------------


class _ReprError(ValueError):
    pass


_LITERAL_ERRORS = (ValueError, SyntaxError, TypeError, RecursionError, MemoryError)
"""What `ast.literal_eval` / `ast.parse` raise on crafted text: malformed, unhashable keys, too deep, too long."""


def _node_value(node: ast.AST, text: str) -> Any:
    """A repr node's value: literal_eval, else containers, `array(x)`, `nan`, `Timestamp(s)` by hand."""
    try:
        return ast.literal_eval(node)
    except _LITERAL_ERRORS:
        pass
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_node_value(e, text) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = _node_value(k, text) if k is not None else "**"
            out[key if isinstance(key, (str, int, float, bool)) or key is None else str(key)] = _node_value(
                v, text
            )
        return out
    if isinstance(node, ast.Name) and node.id in ("nan", "NaN", "NaT"):
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("array", "Timestamp", "Decimal")
        and node.args
    ):
        return _node_value(node.args[0], text)
    return ast.get_source_segment(text, node)


class RawInput(str):
    """A step's `tool_input` as written, when JSON cannot carry it faithfully: the call is kept malformed."""


def _faithful(node: ast.AST) -> bool:
    """Whether a repr says in JSON exactly what it says in Python: every mapping key a string literal (an int
    key would meet a string key of the same text; `{[1]: 2}` has no JSON key at all), no `nan`/`NaT` read as
    null, no call but `array`/`Timestamp`/`Decimal` (issue 56: such an input is flagged, never rewritten)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Dict) and not all(
            isinstance(k, ast.Constant) and isinstance(k.value, str) for k in sub.keys
        ):
            return False
        if isinstance(sub, ast.Name) and sub.id in ("nan", "NaN", "NaT"):
            return False
        if isinstance(sub, ast.Call) and not (
            isinstance(sub.func, ast.Name) and sub.func.id in ("array", "Timestamp", "Decimal")
        ):
            return False
    return True


def parse_full_response(text: str) -> dict[str, Any]:
    """`{'input', 'output', 'intermediate_steps': [(AgentAction(...), obs), ...]}` without eval.

    Returns `{"input", "output", "steps": [{"tool", "tool_input", "log", "observation"}]}`.
    Raises `_ReprError(field, message)` on a shape it does not know.
    """
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise _ReprError("full_response", f"not a Python repr: {exc.msg}") from exc
    except (RecursionError, MemoryError, ValueError) as exc:
        raise _ReprError(
            "full_response", f"not a Python repr a parser can hold ({type(exc).__name__})"
        ) from None
    try:
        return _response(tree, text)
    except (RecursionError, MemoryError):
        raise _ReprError("full_response", "nested too deeply to read") from None


def _response(tree: ast.Expression, text: str) -> dict[str, Any]:
    body = tree.body
    if not isinstance(body, ast.Dict):
        raise _ReprError("full_response", "not a dict repr")
    out: dict[str, Any] = {"steps": []}
    for key_node, value_node in zip(body.keys, body.values, strict=True):
        try:
            key = ast.literal_eval(key_node) if key_node is not None else None
        except _LITERAL_ERRORS as exc:
            raise _ReprError("full_response", "a key is not a literal") from exc
        if key == "intermediate_steps":
            if not isinstance(value_node, ast.List):
                raise _ReprError("full_response.intermediate_steps", "not a list")
            for k, step in enumerate(value_node.elts):
                out["steps"].append(_step(step, text, k))
        elif key in ("input", "output"):
            out[key] = _node_value(value_node, text)
    return out


def _step(step: ast.AST, text: str, k: int) -> dict[str, Any]:
    where = f"full_response.intermediate_steps[{k}]"
    if not isinstance(step, ast.Tuple) or len(step.elts) != 2:
        raise _ReprError(where, "a step is an (AgentAction, observation) pair")
    action, observation = step.elts
    if not (
        isinstance(action, ast.Call) and isinstance(action.func, ast.Name) and action.func.id == "AgentAction"
    ):
        raise _ReprError(f"{where}[0]", "not an AgentAction(...)")
    fields: dict[str, Any] = {}
    for kw in action.keywords:
        try:
            fields[kw.arg or ""] = ast.literal_eval(kw.value)
        except _LITERAL_ERRORS:
            fields[kw.arg or ""] = _node_value(kw.value, text)
    if not isinstance(fields.get("tool"), str):
        raise _ReprError(f"{where}[0].tool", "missing or not a string")
    given = next((kw.value for kw in action.keywords if kw.arg == "tool_input"), None)
    if given is not None and not _faithful(given):
        fields["tool_input"] = RawInput(ast.get_source_segment(text, given) or "")
    if fields.get("log") is not None and not isinstance(fields["log"], str):
        raise _ReprError(f"{where}[0].log", f"not a string (it is {type(fields['log']).__name__})")
    return {
        "tool": fields["tool"],
        "tool_input": fields.get("tool_input"),
        "log": fields.get("log"),
        "observation": _node_value(observation, text),
    }


# --- rows to episodes -------------------------------------------------------------------------


def _gold_tasks(csv_path: Path, domain: str) -> dict[str, tuple[int, list[str]]]:
    """query → (task index, gold answer calls) from the processed task CSV beside the results, if any."""
    tasks = (
        csv_path.parent.parent.parent
        / "processed"
        / "queries_and_answers"
        / f"{domain}_queries_and_answers.csv"
    )
    if not tasks.is_file():
        return {}
    out: dict[str, tuple[int, list[str]]] = {}
    with io.StringIO(read_text(tasks, what="WorkBench task CSV"), newline="") as fh:
        reader = csv.DictReader(fh)
        for i, row in _csv_rows(reader, tasks, ("query", "answer")):
            try:
                answer = ast.literal_eval(row["answer"] or "[]")
            except _LITERAL_ERRORS as exc:
                raise BadInputError(
                    f"answer is not a Python list repr: {exc}", source=str(tasks), record=i, field="answer"
                ) from exc
            if not isinstance(answer, list):
                raise BadInputError(
                    f"answer is not a list of calls (it is {type(answer).__name__})",
                    source=str(tasks),
                    record=i,
                    field="answer",
                )
            if row["query"] is not None:
                out.setdefault(row["query"], (i, [str(a) for a in answer]))
    return out


def _csv_rows(
    reader: csv.DictReader[str], path: Path, columns: tuple[str, ...]
) -> Iterator[tuple[int, dict]]:
    """(0-based row, row) of a CSV that must have `columns`; a missing column or malformed CSV is bad input."""
    try:
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise BadInputError("missing column", source=str(path), record="header", field=missing[0])
        yield from enumerate(reader)
    except csv.Error as exc:
        raise BadInputError(f"not a readable CSV (line {reader.line_num}): {exc}", source=str(path)) from exc


def _content(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def convert_workbench_csv(path: Path, *, skip_bad: bool = False) -> Conversion:
    """Convert one results CSV (see the module docstring for every choice made)."""
    path = Path(path)
    m = FILE_NAME.match(path.name)
    if not m:
        raise BadInputError(
            "file name is not <model>_<all|domains>_<YYYY-MM-DD_HH-MM-SS>.csv", source=str(path)
        )
    model, toolset, stamp = m["model"], m["toolset"], m["stamp"]
    domain = path.parent.name
    gold = _gold_tasks(path, domain)
    conv = Conversion(converter=CONVERTER, inputs=[str(path)])
    hallucinated: set[str] = set()
    csv.field_size_limit(sys.maxsize)
    with io.StringIO(read_text(path, what="WorkBench results CSV"), newline="") as fh:
        for index, row in _csv_rows(csv.DictReader(fh), path, COLUMNS):
            conv.records += 1
            try:
                episode = _checked_row_episode(row, index, path, domain, model, toolset, stamp, gold)
            except BadInputError as exc:
                conv.skip_bad(exc, skip_bad=skip_bad)
                continue
            hallucinated |= {
                c.name
                for msg in episode.messages
                for c in msg.tool_calls or []
                if c.name not in WORKBENCH_TOOLS
            }
            conv.keep(episode, source=str(path), record=index, skip_bad=skip_bad)
    conv.catalogs[domain] = workbench_catalog(domain, hallucinated)
    conv.note_unknown_tools()
    return conv


def _checked_row_episode(
    row: dict[str, str], index: int, path: Path, domain: str, model: str, toolset: str, stamp: str,
    gold: dict[str, tuple[int, list[str]]],
) -> Episode | str:  # fmt: skip
    """`_row_episode`, with a value the episode model refuses reported as bad input naming the row and field."""
    try:
        episode = _row_episode(row, index, path, domain, model, toolset, stamp, gold)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path), record=index, prefix="episode") from None
    if not isinstance(episode, str):  # a Python repr's '\ud800' escape is text no file can hold: name it
        require_strict(episode.model_dump(mode="python"), source=str(path), record=index, prefix="episode")
    return episode


def _row_episode(
    row: dict[str, str],
    index: int,
    path: Path,
    domain: str,
    model: str,
    toolset: str,
    stamp: str,
    gold: dict[str, tuple[int, list[str]]],
) -> Episode:
    query, error, text = row["query"], row["error"] or "", row["full_response"] or ""
    # An empty trajectory (the agent raised before returning) is kept: the query alone, and the error.
    parsed: dict[str, Any] = {"steps": []}
    if text.strip():
        try:
            parsed = parse_full_response(text)
        except _ReprError as exc:
            raise BadInputError(str(exc.args[1]), source=str(path), record=index, field=exc.args[0]) from exc
    try:
        logged_calls = ast.literal_eval(row["function_calls"] or "[]")
    except _LITERAL_ERRORS as exc:
        raise BadInputError(
            "not a Python list repr", source=str(path), record=index, field="function_calls"
        ) from exc
    messages = [Message(role="user", content=query)]
    for k, step in enumerate(parsed["steps"]):
        tool_input = step["tool_input"]
        if isinstance(tool_input, RawInput):  # flagged: kept as written, reaching no tool
            call = ToolCall(
                id=f"step{k}", name=step["tool"], arguments={RAW_ARGUMENTS: str(tool_input)}, malformed=True
            )
        else:
            arguments = tool_input if isinstance(tool_input, dict) else {"tool_input": tool_input}
            call = ToolCall(id=f"step{k}", name=step["tool"], arguments=arguments)
        messages.append(Message(role="assistant", content=step["log"], tool_calls=[call]))
        observation = step["observation"]
        messages.append(
            Message(
                role="tool",
                content=_content(observation),
                tool_call_id=call.id,
                name=call.name,
                error=call.name not in WORKBENCH_TOOLS,
            )
        )
    output = parsed.get("output")
    if output is not None and output != ITERATION_LIMIT:
        messages.append(Message(role="assistant", content=_content(output)))
    task_index, answer = gold.get(query, (index, None))
    info: dict[str, Any] = {"error": error or None, "function_calls": logged_calls}
    if not text.strip():
        info["no_trajectory"] = f"agent raised before returning ({_error_kind(error)})"
    if answer is not None:
        info["gold_calls"] = answer
    return Episode(
        id=f"workbench.{domain}.{model}_{toolset}.{task_index}",
        task_id=str(task_index),
        domain=domain,
        agent=model,
        model=model,
        harness=f"workbench/langchain-structured-chat/{toolset}",
        messages=messages,
        termination_reason="max_steps"
        if output == ITERATION_LIMIT
        else ("agent_error" if error else "agent_stop"),
        outcome=Outcome(
            success=False if error else None,
            judged_by="workbench: error means wrong" if error else None,
            info=info,
        ),
        source={
            "converter": CONVERTER,
            "file": path.name,
            "record": index,
            "toolset": toolset,
            "run": stamp,
            "query": query,
        },
    )


def workbench_files(path: Path) -> list[Path]:
    """The results CSVs a path names: the file itself, a domain folder's `*.csv`, or a results folder's `*/*.csv`."""
    path = Path(path)
    if not path.is_dir():
        return [require_regular(path, what="WorkBench results file or folder")]
    files = sorted(path.glob("*.csv")) or sorted(path.glob("*/*.csv"))
    if not files:
        raise BadInputError("no WorkBench results CSVs here", source=str(path))
    return files


def convert_workbench(path: Path, *, skip_bad: bool = False) -> Conversion:
    """Convert a results CSV, or every results CSV under a results folder (or one domain's folder)."""
    conv = Conversion(converter=CONVERTER)
    for file in workbench_files(path):
        conv.extend(convert_workbench_csv(file, skip_bad=skip_bad))
    conv.note_unknown_tools()
    return conv
