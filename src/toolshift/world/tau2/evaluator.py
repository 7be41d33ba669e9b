"""τ²-bench's reward for an episode on a τ² world, computed here as τ²'s evaluator computes it (judge `tau2-evaluator`).

Re-implemented from τ²-bench 1.0.1's `tau2.evaluator` (evaluator.py, evaluator_env.py,
evaluator_action.py, evaluator_communicate.py, evaluator_nl_assertions.py; docs/decisions.md D112),
never imported (τ² needs Python 3.12). For `EvaluationType.ALL`, its default:

- An episode that did not end by `agent_stop` or `user_stop` gets reward 0 and no checks.
- DB: the final database must EQUAL the one the task's expected actions leave when replayed on a fresh
  world (every action, errors ignored). τ² compares a SHA-256 of `json.dumps(db.model_dump(),
  sort_keys=True, default=str)`; here the records either side changed are compared as that JSON
  (types count: 100 and 100.0 differ), every other record being the initial one on both sides. A task
  with `actions: null` has `db_match: true` without a replay, as in τ².
- ACTION: each expected action must match some tool call of the conversation (assistant's or user's)
  by name and by `compare_args` (None: the arguments the call was given; none given matches).
- COMMUNICATE: each `communicate_info` string must occur, case-folded, in some assistant message's text
  with its commas removed.
- NL_ASSERTION: τ² asks an LLM. Not done here: a task with NL assertions and NL_ASSERTION in its
  reward_basis gets the product of its other factors, `nl_assertions: null`, and the assertions
  listed in `info.unjudged` (an upper bound on τ²'s reward; a task with none gets 1.0, as in τ²).
- The reward is the product of the factors the task's `reward_basis` names; `reward_breakdown` holds
  each evaluator's breakdown for the bases named, as τ² merges them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from toolshift.models import ExpectedAction, JudgeCriteria, RowChange, Task

TAU2_JUDGE = "tau2-evaluator"
"""`Task.judge` of an imported τ² task."""
JUDGED_BY = "tau2-reward"
"""`outcome.judged_by` of an episode τ²'s reward judged (as for episodes read from τ²'s results)."""
STOPS = ("agent_stop", "user_stop")
UNCHECKED = dict.fromkeys(
    ("db_check", "env_assertions", "action_checks", "nl_assertions", "communicate_checks", "reward_basis",
     "reward_breakdown"),
)  # fmt: skip
"""A RewardInfo's checks when none ran (τ²'s defaults, with `reward_basis: null` as τ² sets it)."""
TOOL_TYPES = {"calculate": "generic", "transfer_to_human_agents": "generic", "think": "think"}
"""τ²'s `ToolType` of the tools that are neither reads nor writes (the rest follow the tool's effect)."""


@dataclass(frozen=True)
class Call:
    """One tool call of the conversation, as τ²'s action check reads it."""

    name: str
    arguments: dict[str, Any]
    requestor: str = "assistant"


def action_matches(action: ExpectedAction, call: Call) -> bool:
    """τ²'s `Action.compare_with_tool_call`."""
    if action.name != call.name:
        return False
    keys = list(call.arguments) if action.compare_args is None else action.compare_args
    if not keys:
        return True
    mine = {k: v for k, v in call.arguments.items() if k in keys}
    theirs = {k: v for k, v in action.arguments.items() if k in keys}
    return mine == theirs


def action_dict(action: ExpectedAction) -> dict[str, Any]:
    """An expected action as τ²'s `Action` dumps it."""
    return {
        "action_id": action.action_id or "",
        "requestor": action.requestor,
        "name": action.name,
        "arguments": action.arguments,
        "info": action.info,
        "compare_args": action.compare_args,
    }


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


_domains: dict[str, Any] = {}
_domains_lock = threading.Lock()


def _compiled(world_name: str) -> Any:
    """The world's compiled domain, once per process (every episode's replay starts from its template)."""
    from toolshift.world import load_domain

    with _domains_lock:
        if world_name not in _domains:
            _domains[world_name] = load_domain(world_name)
        return _domains[world_name]


_free: dict[str, list[tuple[Any, Any]]] = {}
"""Per world name, replay worlds not in use, each with the snapshot of its initial state."""


@contextmanager
def _replayed(world_name: str, calls: list[Call]) -> Iterator[tuple[Any, list[RowChange]]]:
    """A world in its initial state with `calls` made in order (failures change nothing, as in τ²'s replay),
    and every change the calls reported, one after another: each record whose state differs from the
    initial one is among them (a record changed and changed back is too, and compares equal).

    The world is one of the process's replay worlds of that name, in its initial state (D152): making a
    world compiles its validators and installs its change tracking. The replay runs inside one transaction
    that is rolled back when the block ends (each call keeps its own savepoint inside it), which undoes
    only what the calls wrote; should any write outlive the rollback (the world's log of touched rows,
    D153, is not empty), the world is restored from its initial snapshot. Then it goes back to the free list.
    """
    from toolshift.world import World

    with _domains_lock:
        free = _free.setdefault(world_name, [])
        taken = free.pop() if free else None
    if taken is None:
        world = World(_compiled(world_name))
        taken = (world, world.snapshot())
    world = taken[0]
    world.conn.execute("BEGIN")
    try:
        changes: list[RowChange] = []
        for call in calls:
            changes += world.call(call.name, call.arguments).changes
        yield world, changes
    finally:
        if world.conn.in_transaction:
            world.conn.execute("ROLLBACK")
        if world.conn.execute("SELECT 1 FROM temp._ts_touched LIMIT 1").fetchone() is not None:
            world.restore(taken[1])
        with _domains_lock:
            _free[world_name].append(taken)


def db_match(task: Task, calls: list[Call], world: Any = None, diff: list[RowChange] | None = None) -> bool:
    """Whether the final database equals the expected actions' (see the module docstring).

    `world` is the episode's own world and `diff` its net changes; without them the conversation's
    assistant calls are replayed on a fresh world, as τ²'s evaluator replays the trajectory. The records
    compared are those either side changed: every other record is the initial one on both sides, so τ²'s
    hash of the whole database matches exactly when these do.
    """
    from toolshift.world.tau2.domains import tau2_world

    spec = tau2_world(task.domain)
    criteria = task.criteria or JudgeCriteria()
    gold_calls = [Call(a.name, a.arguments) for a in criteria.actions or [] if a.requestor == "assistant"]
    with ExitStack() as stack:
        if world is None or diff is None:
            mine = [c for c in calls if c.requestor == "assistant"]
            world, diff = stack.enter_context(_replayed(spec.name, mine))
        gold, gold_changes = stack.enter_context(_replayed(spec.name, gold_calls))
        keys = spec.changed_records(list(diff or []))
        for table, changed in spec.changed_records(gold_changes).items():
            keys[table] = keys.get(table, set()) | changed
        ours = spec.export(world.conn, keys, ordered=False)
        return _canonical(ours) == _canonical(spec.export(gold.conn, keys, ordered=False))


def _effects(domain: str) -> dict[str, str]:
    from toolshift.world.tau2.domains import tau2_world

    return {t.name: t.effect for t in _compiled(tau2_world(domain).name).tools}


def evaluate(
    task: Task,
    calls: list[Call],
    assistant_texts: list[str],
    termination: str | None,
    *,
    world: Any = None,
    diff: list[RowChange] | None = None,
    tool_effects: dict[str, str] | None = None,
) -> dict[str, Any]:
    """τ²'s `RewardInfo` for one episode, as a dict τ²'s model loads (`info.unjudged` when an LLM was due)."""
    tau2_reason = {"max_turns": "max_steps", "world_error": "infrastructure_error"}.get(
        termination or "", termination
    )
    if termination not in STOPS:
        note = f"Simulation terminated prematurely. Termination reason: {tau2_reason}"
        return {**UNCHECKED, "reward": 0.0, "info": {"note": note}}
    criteria = task.criteria
    if criteria is None:
        return {**UNCHECKED, "reward": 1.0, "info": {"note": "No evaluation criteria"}}
    basis = set(criteria.reward_basis)
    effects = tool_effects if tool_effects is not None else _effects(task.domain)

    # DB (and ENV_ASSERTION: these worlds' tasks have none, so that factor is 1.0 as in τ²).
    env_info: dict[str, Any] | None = None
    if criteria.actions is None:
        db = {"db_match": True, "db_reward": 1.0}
        env_assertions, env_breakdown = None, None
        env_info = {"note": "No expected actions or env assertions"}
        env_reward = 1.0
    else:
        matched = db_match(task, calls, world, diff)
        db = {"db_match": matched, "db_reward": float(matched)}
        env_assertions, env_breakdown = [], {}
        env_reward = 1.0
        if "DB" in basis:
            env_breakdown["DB"] = db["db_reward"]
            env_reward *= db["db_reward"]
        if "ENV_ASSERTION" in basis:
            env_breakdown["ENV_ASSERTION"] = 1.0

    # ACTION
    action_checks: list[dict[str, Any]] | None = None
    action_info: dict[str, Any] | None = None
    if not criteria.actions:
        action_reward, action_info = 1.0, {"note": "No actions to evaluate"}
    else:
        action_checks = []
        for action in criteria.actions:
            found = any(action_matches(action, c) for c in calls)
            kind = TOOL_TYPES.get(action.name) or (
                effects.get(action.name) if effects.get(action.name) in ("read", "write") else None
            )
            action_checks.append(
                {
                    "action": action_dict(action),
                    "action_match": found,
                    "action_reward": float(found),
                    "tool_type": kind,
                }
            )
        action_reward = float(all(c["action_match"] for c in action_checks))

    # COMMUNICATE
    communicate_checks: list[dict[str, Any]] | None = None
    communicate_info: dict[str, Any] | None = None
    if not criteria.communicate_info:
        communicate_reward, communicate_info = 1.0, {"note": "No communicate_info to evaluate"}
    else:
        communicate_checks = []
        for needle in criteria.communicate_info:
            said = next(
                (t for t in assistant_texts if t.strip() and needle.lower() in t.lower().replace(",", "")),
                None,
            )
            communicate_checks.append(
                {
                    "info": needle,
                    "met": said is not None,
                    "justification": f"Information '{needle}' communicated in the message:\n '{said}'"
                    if said is not None
                    else f"Information '{needle}' not communicated.",
                }
            )
        communicate_reward = float(all(c["met"] for c in communicate_checks))

    # NL_ASSERTION: evaluated by τ² only when in the basis; here only when there is nothing to ask an LLM.
    unjudged: list[str] = []
    nl_checks: list[Any] | None = None
    nl_info: dict[str, Any] | None = None
    nl_reward: float | None = None
    if "NL_ASSERTION" in basis:
        if not criteria.nl_assertions:
            nl_checks, nl_reward = [], 1.0
            nl_info = {"note": "No nl_assertions to evaluate"}
        else:
            unjudged = list(criteria.nl_assertions)
            nl_info = {"note": "not evaluated: τ²-bench asks an LLM judge, and toolshift runs none"}

    reward, breakdown = 1.0, {}
    if basis & {"DB", "ENV_ASSERTION"}:
        breakdown.update(env_breakdown or {})
        reward *= env_reward
    if "ACTION" in basis:
        breakdown["ACTION"] = action_reward
        reward *= action_reward
    if "NL_ASSERTION" in basis and nl_reward is not None:
        breakdown["NL_ASSERTION"] = nl_reward
        reward *= nl_reward
    if "COMMUNICATE" in basis:
        breakdown["COMMUNICATE"] = communicate_reward
        reward *= communicate_reward
    info: dict[str, Any] = {
        "env": env_info,
        "nl": nl_info,
        "communicate": communicate_info,
        "action": action_info,
    }
    if unjudged:
        info["unjudged"] = {"NL_ASSERTION": unjudged}
    return {
        "reward": reward,
        "db_check": db,
        "env_assertions": env_assertions,
        "action_checks": action_checks,
        "nl_assertions": nl_checks,
        "communicate_checks": communicate_checks,
        "reward_basis": list(criteria.reward_basis),
        "reward_breakdown": breakdown,
        "info": info,
    }
