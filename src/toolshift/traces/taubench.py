"""Convert τ-bench (v1) historical trajectories (a JSON list of `EnvRunResult`) into episodes.

Choices (also in docs/formats.md):

- Domain: `--domain`, else `airline` / `retail` found in the file name, else the domain whose tool
  list covers every called tool, labelled `taubench-v1-<domain>` (τ-bench's tasks are not τ²-bench's
  tasks of the same name: task 1 of each is a different user and request, so they get their own
  namespace). Model and agent: the file name before the domain (`gpt-4o`); harness
  `tau-bench-v1/tool-calling`; `source.max_steps` = 30, τ-bench's step limit.
- `traj` messages map one to one (system, user, assistant, tool). `function.arguments` (a JSON
  string) is parsed into a dict. A tool message is paired with the assistant message right before it
  (ids repeat in these files); its name must match that call's name. `error` is set when the content
  starts with `Error`.
- Text sent alongside a tool call stays in the assistant message's `content` (τ-bench never showed it
  to the user); the turn counts as a call turn, not a reply.
- Outcome: `reward` as logged, `success = reward == 1`, `judged_by = "tau-bench-v1"`. `info` keeps
  the ground truth: `gold_actions` (`info.task.actions`, name + kwargs), `instruction`, `user_id`,
  `outputs`, and the verbatim `reward_info`. `user_cost` goes to `Episode.user_cost`.
- `termination_reason` (τ² vocabulary): `user_stop` when the last user message holds `###STOP###`,
  `agent_stop` when the run ended on `transfer_to_human_agents`, else `max_steps` (30 steps).
- A record whose agent crashed (`info.error`, empty `traj`) is kept: no messages, `termination_reason`
  `agent_error`, τ-bench's logged reward (0) and `info.error` (τ-bench counts it as a failed task).
- A tool call whose arguments are not a JSON object is kept, `malformed` (`read_call`).
- Nothing is skipped. Malformed records raise BadInputError naming the record and field, or are
  counted with `skip_bad`.
- Catalog: the domain's τ-bench tool table (`toolshift.traces.tau_tools`), origin `source`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import read_json, require_strict
from toolshift.traces.conversion import Conversion, read_call
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall
from toolshift.traces.tau_tools import TAU_BENCH_V1_TOOLS, tau_catalog

CONVERTER = "taubench-v1"
HARNESS = "tau-bench-v1/tool-calling"
DOMAIN_PREFIX = "taubench-v1-"
MAX_STEPS = 30
"""τ-bench v1's default step limit (`--max-num-steps`), which its published runs used."""


def taubench_domain(name: str) -> str:
    """The episode domain of a τ-bench v1 domain: `airline` → `taubench-v1-airline` (idempotent)."""
    return name if name.startswith(DOMAIN_PREFIX) else f"{DOMAIN_PREFIX}{name}"


_RUN_NAME = re.compile(
    r"^[-_]*(?:tool-calling|act|react|few-shot)-(.+?)(?:-\d+(?:\.\d+)?_range_.*|-\d+|_\d+)?$"
)
"""τ-bench's own run file name, `<strategy>-<model>-<temperature>_range_…_<time>` (a copy may keep only
`<strategy>-<model>_<time>`): the model is what follows the agent strategy."""


def _run_name_model(rest: str) -> str | None:
    m = _RUN_NAME.match(rest)
    return m.group(1) if m else None


def _domain_and_model(path: Path, calls: set[str], domain: str | None) -> tuple[str, str | None]:
    """(τ-bench domain name, model) from `--domain`, the file name or the tools called."""
    if domain is not None:
        domain = domain.removeprefix(DOMAIN_PREFIX)
    stem = path.name.split(".")[0]
    model = None
    for name in TAU_BENCH_V1_TOOLS:
        m = re.search(rf"(.*?)[-_]?{name}", stem)
        if m:
            model = m.group(1) or _run_name_model(stem[m.end() :])
            if domain is None:
                domain = name
            break
    else:
        model = _run_name_model(stem)
    if domain is None:
        fitting = [d for d, tools in TAU_BENCH_V1_TOOLS.items() if calls <= tools.keys()]
        if len(fitting) != 1:
            raise BadInputError(
                "cannot tell the domain (airline or retail) from the file name or the tools called; pass --domain",
                source=str(path),
            )
        domain = fitting[0]
    if domain not in TAU_BENCH_V1_TOOLS:
        raise BadInputError(f"unknown τ-bench domain {domain!r} (airline, retail)", source=str(path))
    return domain, model


def _need(value: Any, kind: type | tuple[type, ...], path: Path, index: int, field: str) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in kinds):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise BadInputError(
            f"expected {names}, got {type(value).__name__}", source=str(path), record=index, field=field
        )
    return value


def _messages(traj: list[Any], path: Path, index: int) -> list[Message]:
    out: list[Message] = []
    pending: list[ToolCall] = []
    for j, raw in enumerate(traj):
        where = f"traj[{j}]"
        try:
            pending = _message(raw, path, index, where, out, pending)
        except ValidationError as exc:
            raise BadInputError.from_validation(exc, source=str(path), record=index, prefix=where) from exc
    return out


def _message(
    raw: Any, path: Path, index: int, where: str, out: list[Message], pending: list[ToolCall]
) -> list[ToolCall]:
    """Append one `traj` message to `out`; return the calls still waiting for their results."""
    _need(raw, dict, path, index, where)
    role = raw.get("role")
    if role in ("system", "user"):
        out.append(Message(role=role, content=raw.get("content")))
        return []
    if role == "assistant":
        calls = []
        raw_calls = _need(raw.get("tool_calls") or [], list, path, index, f"{where}.tool_calls")
        for k, tc in enumerate(raw_calls):
            f = f"{where}.tool_calls[{k}]"
            _need(tc, dict, path, index, f)
            fn = _need(tc.get("function"), dict, path, index, f"{f}.function")
            # Unreadable arguments or no name: kept, `malformed` (read_call), never a refused record.
            calls.append(
                read_call(str(tc.get("id") or ""), fn.get("name"), fn.get("arguments") or "{}",
                          source=str(path), record=index, field=f"{f}.function.arguments")
            )  # fmt: skip
        out.append(Message(role="assistant", content=raw.get("content"), tool_calls=calls or None))
        return list(calls)
    if role != "tool":
        raise BadInputError(f"unknown role {role!r}", source=str(path), record=index, field=f"{where}.role")
    if not pending:
        raise BadInputError(
            "tool result without a call before it", source=str(path), record=index, field=where
        )
    pending = list(pending)
    call = pending.pop(0)
    name = raw.get("name", call.name)
    if name != call.name:
        raise BadInputError(
            f"tool result for {name!r} follows a call of {call.name!r}",
            source=str(path),
            record=index,
            field=f"{where}.name",
        )
    content = raw.get("content")
    content = content if isinstance(content, str) or content is None else json.dumps(content)
    out.append(
        Message(
            role="tool",
            content=content,
            tool_call_id=str(raw.get("tool_call_id") or call.id),
            name=name,
            error=bool(content and content.startswith("Error")),
        )
    )
    return pending


def _termination(messages: list[Message]) -> str:
    last_user = next((m for m in reversed(messages) if m.role == "user"), None)
    if messages and messages[-1].role == "tool" and messages[-1].name == "transfer_to_human_agents":
        return "agent_stop"
    if last_user is not None and "###STOP###" in (last_user.content or ""):
        return "user_stop"
    return "max_steps"


def convert_taubench_v1(path: Path, *, domain: str | None = None, skip_bad: bool = False) -> Conversion:
    """Convert one τ-bench v1 trajectory file (see the module docstring for every choice made)."""
    path = Path(path)
    records = read_json(path, what="τ-bench trajectories", strict=False)  # each record is checked below
    if not isinstance(records, list):
        raise BadInputError("a τ-bench trajectory file is a JSON list of runs", source=str(path))
    called = {
        tc["function"].get("name")
        for r in records
        if isinstance(r, dict)
        for m in _list(r.get("traj"))
        if isinstance(m, dict)
        for tc in _list(m.get("tool_calls"))
        if isinstance(tc, dict) and isinstance(tc.get("function"), dict)
    }
    name, model = _domain_and_model(path, {c for c in called if isinstance(c, str)}, domain)
    conv = Conversion(converter=CONVERTER, records=len(records), inputs=[str(path)])
    domain = taubench_domain(name)
    conv.catalogs[domain] = tau_catalog(domain, TAU_BENCH_V1_TOOLS[name], "tau-bench v1 tool implementations")
    for index, record in enumerate(records):
        try:
            require_strict(record, source=str(path), record=index)
            episode = _episode(record, path, index, name, model)
        except BadInputError as exc:
            conv.skip_bad(exc, skip_bad=skip_bad)
            continue
        conv.keep(episode, source=str(path), record=index, skip_bad=skip_bad)
    conv.note_unknown_tools()
    return conv


def _list(value: Any) -> list[Any]:
    """`value` if it is a list, else no items (the record's own check names the field later)."""
    return value if isinstance(value, list) else []


def _crashed(
    record: dict[str, Any],
    info: dict[str, Any],
    path: Path,
    index: int,
    name: str,
    model: str | None,
    task_id: int,
    trial: int,
    reward: float,
) -> Episode:
    """A run whose agent raised (`info.error`, empty `traj`): kept, no messages, τ-bench's own reward (0)."""
    error = info.get("error")
    return Episode(
        id=f"tau-bench-v1.{name}.{model or 'agent'}.task{task_id}.trial{trial}",
        task_id=str(task_id),
        trial=trial,
        domain=taubench_domain(name),
        agent=model,
        model=model,
        harness=HARNESS,
        termination_reason="agent_error",
        outcome=Outcome(
            reward=reward,
            success=reward == 1.0,
            judged_by="tau-bench-v1",
            info={"error": error if isinstance(error, str) else json.dumps(error, default=str)},
        ),
        source={"converter": CONVERTER, "file": path.name, "record": index, "max_steps": MAX_STEPS},
    )  # fmt: skip


def _episode(record: Any, path: Path, index: int, name: str, model: str | None) -> Episode:
    _need(record, dict, path, index, "record")
    task_id = _need(record.get("task_id"), int, path, index, "task_id")
    trial = _need(record.get("trial", 0), int, path, index, "trial")
    info = _need(record.get("info"), dict, path, index, "info")
    traj = _need(record.get("traj"), list, path, index, "traj")
    reward = _need(record.get("reward"), (int, float), path, index, "reward")
    if not math.isfinite(reward):
        raise BadInputError("reward is not a finite number", source=str(path), record=index, field="reward")
    if "error" in info and not traj:
        return _crashed(record, info, path, index, name, model, task_id, trial, float(reward))
    task = _need(info.get("task"), dict, path, index, "info.task")
    actions = _need(task.get("actions", []), list, path, index, "info.task.actions")
    for k, action in enumerate(actions):
        _need(action, dict, path, index, f"info.task.actions[{k}]")
        _need(action.get("name"), str, path, index, f"info.task.actions[{k}].name")
        _need(action.get("kwargs", {}), dict, path, index, f"info.task.actions[{k}].kwargs")
    _need(task.get("instruction"), (str, type(None)), path, index, "info.task.instruction")
    for k, output in enumerate(_need(task.get("outputs", []), list, path, index, "info.task.outputs")):
        _need(output, str, path, index, f"info.task.outputs[{k}]")
    messages = _messages(traj, path, index)
    outcome = Outcome(
        reward=float(reward),
        success=float(reward) == 1.0,
        judged_by="tau-bench-v1",
        info={
            "gold_actions": actions,
            "instruction": task.get("instruction"),
            "user_id": task.get("user_id"),
            "outputs": task.get("outputs", []),
            "reward_info": info.get("reward_info"),
        },
    )
    user_cost = info.get("user_cost")
    if user_cost is not None:
        _need(user_cost, (int, float), path, index, "info.user_cost")
    return Episode(
        id=f"tau-bench-v1.{name}.{model or 'agent'}.task{task_id}.trial{trial}",
        task_id=str(task_id),
        trial=trial,
        domain=taubench_domain(name),
        agent=model,
        model=model,
        harness=HARNESS,
        messages=messages,
        termination_reason=_termination(messages),
        outcome=outcome,
        user_cost=None if user_cost is None else float(user_cost),
        source={
            "converter": CONVERTER,
            "file": path.name,
            "record": index,
            "last_source": info.get("source"),
            "max_steps": MAX_STEPS,
        },
    )
