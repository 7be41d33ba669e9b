"""τ²-bench's tasks as toolshift tasks: expected actions become gold calls, the user scenario the user's private instruction.

Each τ² task is replayed on a fresh world of its domain: its expected actions (those the agent
makes) run in order, every one even after a failure, as τ²-bench's evaluator replays them, and what
they change is the task's Δgold. Each task is judged by τ²-bench's reward (`judge: tau2-evaluator`,
`toolshift.world.tau2.evaluator`) over τ²'s own criteria, carried in `Task.criteria`. Every expected
action that fails on our world is reported with the task, the step, the tool and the world's error (`ImportReport.gold_errors`, and the task's
`difficulty.gold_errors`). A task whose expected actions need what the world does not have (the
telecom user's device) is left out with the reason (`ImportReport.skipped`). Nothing is dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.errors import BadInputError
from toolshift.models import ExpectedAction, GoldCall, JudgeCriteria, RowChange, Task, UserInstruction
from toolshift.world.tau2 import files
from toolshift.world.tau2.domains import Tau2World, tau2_world


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Tau2Action(_Loose):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: str | None = "assistant"
    action_id: str | None = None
    info: str | None = None
    compare_args: list[str] | None = None


class Tau2EnvCall(_Loose):
    env_type: str
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Tau2Instructions(_Loose):
    reason_for_call: str = ""
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str = ""


class Tau2Scenario(_Loose):
    persona: str | None = None
    instructions: Tau2Instructions | str


class Tau2Criteria(_Loose):
    actions: list[Tau2Action] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    env_assertions: list[Any] | None = None
    reward_basis: list[str] = Field(default_factory=list)


class Tau2InitialState(_Loose):
    initialization_data: dict[str, Any] | None = None
    initialization_actions: list[Tau2EnvCall] | None = None
    message_history: list[Any] | None = None


class Tau2Task(_Loose):
    """The parts of a τ²-bench task (`tau2.data_model.tasks.Task`) an import uses."""

    id: str
    user_scenario: Tau2Scenario
    initial_state: Tau2InitialState | None = None
    evaluation_criteria: Tau2Criteria | None = None
    ticket: str | None = None


@dataclass
class GoldFailure:
    """An expected action that fails on our world: the task, the step, the tool and the world's error.

    τ²-bench's own tasks expect some failing calls (a user giving a wrong email first; an exchange
    the gift card cannot pay for), and its evaluator replays them and ignores their errors, so the
    task is kept, with its failing steps reported here and in the task's `difficulty.gold_errors`.
    The agreement test checks that τ²-bench fails the same calls with the same messages.
    """

    task_id: str
    step: int
    tool: str
    reason: str


@dataclass
class ImportReport:
    world: str
    tasks: list[Task] = field(default_factory=list)
    gold_errors: list[GoldFailure] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(task id, why it could not be imported at all)."""


def read_tau2_tasks(world: Tau2World) -> list[Tau2Task]:
    """The world's τ²-bench task file, validated; a malformed task is one line naming file, record and field."""
    raw = files.read_json(world.tasks_file)
    source = str(files.shared_root() / world.tasks_file)
    if isinstance(raw, dict) and "tasks" in raw:
        raw = raw["tasks"]
    if not isinstance(raw, list):
        raise BadInputError("a τ²-bench task file is a JSON list of tasks", source=source)
    out: list[Tau2Task] = []
    for i, item in enumerate(raw):
        try:
            out.append(Tau2Task.model_validate(item))
        except ValidationError as exc:
            raise BadInputError.from_validation(exc, source=source, record=i) from None
    return out


def read_split(world: Tau2World) -> dict[str, str]:
    """Task id → `train` / `test` from τ²-bench's split file (tasks in neither have no split)."""
    if world.split_file is None:
        return {}
    split = files.read_json(world.split_file)
    out: dict[str, str] = {}
    for name in ("train", "test"):
        for task_id in split.get(name, []) if isinstance(split, dict) else []:
            out[str(task_id)] = name
    return out


_FACTS = (
    ("user id", re.compile(r"user id is:?\s*'?([a-z]+_[a-z]+_\d+)", re.I)),
    ("user id", re.compile(r"You are ([a-z]+_[a-z]+_\d+)", re.I)),
    ("name", re.compile(r"You are ([A-Z][a-z]+ [A-Z][a-z]+)\b")),
    ("zip code", re.compile(r"zip ?code (\d{5})", re.I)),
    ("email", re.compile(r"([\w.+-]+@[\w-]+\.[\w.]+)")),
    (
        "reservation id",
        re.compile(r"(?:confirmation|reservation) (?:number|id) is:?\s*([A-Z0-9]{6})\b", re.I),
    ),
    ("phone number", re.compile(r"phone number:? (\d{3}-\d{3}-\d{4})", re.I)),
)


def user_instruction(task: Tau2Task) -> tuple[str, UserInstruction]:
    """The opening line and the private instruction of a τ² user scenario (τ²'s text kept whole in the rules)."""
    ins = task.user_scenario.instructions
    if isinstance(ins, str):
        return ins.strip().splitlines()[0] if ins.strip() else "", UserInstruction(intent=ins, rules=[ins])
    known = ins.known_info or ""
    facts: dict[str, str] = {}
    for name, pattern in _FACTS:
        found = pattern.search(known)
        if found and name not in facts:
            facts[name] = found.group(1)
    rules = [f"What you know: {known.strip()}"] if known.strip() else []
    if ins.unknown_info:
        rules.append(f"What you do not know: {ins.unknown_info.strip()}")
    if ins.task_instructions.strip():
        rules.append(ins.task_instructions.strip())
    if task.user_scenario.persona:
        rules.append(f"Persona: {task.user_scenario.persona.strip()}")
    intent = ins.reason_for_call.strip()
    opening = (task.ticket or "").strip() or intent
    return opening, UserInstruction(intent=intent, facts=facts, rules=rules)


def judge_criteria(task: Tau2Task) -> JudgeCriteria | None:
    """What τ²'s evaluator checks, as the task's data (`Task.criteria`, judge `tau2-evaluator`)."""
    c = task.evaluation_criteria
    if c is None:
        return None
    actions = None
    if c.actions is not None:
        actions = [
            ExpectedAction(
                name=a.name,
                arguments=a.arguments,
                compare_args=a.compare_args,
                action_id=a.action_id,
                requestor="user" if a.requestor == "user" else "assistant",
                info=a.info,
            )
            for a in c.actions
        ]
    return JudgeCriteria(
        actions=actions,
        communicate_info=c.communicate_info,
        nl_assertions=c.nl_assertions,
        reward_basis=list(c.reward_basis),
    )


def agent_actions(task: Tau2Task) -> list[Tau2Action]:
    actions = (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []
    return [a for a in actions if (a.requestor or "assistant") == "assistant"]


@dataclass
class Replay:
    """Expected actions replayed on a world: each call's outcome, and the net changes."""

    calls: list[tuple[str, dict[str, Any], bool, Any]]
    """(tool, arguments, ok, result or error)."""
    changes: list[RowChange]


def replay_actions(world: Any, actions: list[tuple[str, dict[str, Any]]]) -> Replay:
    """Run the calls in order on `world` (fresh), every one even after a failure, as τ²'s evaluator does."""
    before = world.snapshot()
    calls = []
    for name, arguments in actions:
        res = world.call(name, arguments)
        calls.append((name, arguments, res.ok, res.result if res.ok else res.error))
    changes = world.changes_since(before)
    before.close()
    return Replay(calls, changes)


def import_tasks(world_name: str, *, ids: list[str] | None = None) -> ImportReport:
    """Every τ² task of a world as a toolshift task, replayed on a fresh world; failures reported, never dropped silently."""
    from toolshift.world import World, load_domain
    from toolshift.world.tau2.evaluator import TAU2_JUDGE

    world = tau2_world(world_name)
    compiled = load_domain(world.name)
    split = read_split(world)
    report = ImportReport(world=world.name)
    for t in read_tau2_tasks(world):
        if ids is not None and t.id not in ids:
            continue
        why = world.cannot_import(t)
        if why is not None:
            report.skipped.append((t.id, why))
            continue
        actions = [(a.name, a.arguments) for a in agent_actions(t)]
        w = World(compiled)
        try:
            for call in world.initial_calls(t):
                res = w.call(*call)
                if not res.ok:
                    raise BadInputError(f"initial state call {call[0]} failed: {res.error}", record=t.id)
            replay = replay_actions(w, actions)
        finally:
            w.close()
        failures = [
            GoldFailure(t.id, i, name, f"{err.get('code')}: {err.get('message')}")
            for i, (name, _, ok, err) in enumerate(replay.calls)
            if not ok
        ]
        report.gold_errors.extend(failures)
        opening, instruction = user_instruction(t)
        gold = [GoldCall(tool=n, arguments=a, result=r, function=n) for n, a, _, r in replay.calls]
        report.tasks.append(
            Task(
                id=t.id,
                domain=compiled.spec.name,
                public_request=opening,
                instruction=instruction,
                gold_path=gold,
                base_functions=[c.tool for c in gold],
                expected_changes=replay.changes,
                split=split.get(t.id),  # type: ignore[arg-type]
                judge=TAU2_JUDGE,
                criteria=judge_criteria(t),
                difficulty={
                    "path_length": len(gold),
                    "writes": sum(1 for c in gold if compiled_effect(compiled, c.tool) == "write"),
                    "source": f"tau2-bench {world.tau2_domain} task {t.id}",
                    "reward_basis": list(t.evaluation_criteria.reward_basis) if t.evaluation_criteria else [],
                    "gold_errors": [{"step": f.step, "tool": f.tool, "error": f.reason} for f in failures],
                },
            )
        )
    return report


def compiled_effect(compiled: Any, tool: str) -> str:
    return next((t.effect for t in compiled.tools if t.name == tool), "unknown")
