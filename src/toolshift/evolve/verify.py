"""Verification before solving: a child's ground truth replayed on a fresh world, and its criteria checked.

A proposed task is kept for the solver only if its starting-state calls and every ground-truth call
succeed on a fresh world of its domain (a system error, an unknown tool, bad arguments or a policy
refusal rejects it, with the world's message as the reason), the ground truth changes the state,
any evaluation criteria the proposer wrote are met by the ground truth (a perfect score), a second
replay gives the same changes, the reads alone do not already satisfy it, and the user-facing text
names no tool. Δgold is what the ground truth changed, or only the criteria's changes when given; then
the ground truth may change nothing else, since an attempt solves a task only by strict success (no
change outside Δgold, D117) and a ground truth that could not is no task.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from toolshift.evolve.program import ChangeSpec, TaskSpec
from toolshift.models import GoldCall, RowChange, Task, covers, judge_diff
from toolshift.world import World, load_domain
from toolshift.world.toolerror import shorten


class Rejected(Exception):
    """A child that does not become a task: the stage it failed at and why, kept in its record."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = shorten(reason, 600)


@dataclass
class VerifiedTask:
    """A task ready for the solver, and the calls that set up its starting state."""

    task: Task
    initial_state: list[GoldCall] = field(default_factory=list)

    @property
    def setup(self) -> list[tuple[str, dict[str, Any]]]:
        return [(c.tool, c.arguments) for c in self.initial_state]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _replay(world: World, calls: list[tuple[str, dict[str, Any]]], what: str) -> list[GoldCall]:
    out = []
    for i, (tool, args) in enumerate(calls):
        res = world.call(tool, args)
        if not res.ok:
            err = res.error or {}
            raise Rejected(
                "verify", f"{what} step {i} {tool} failed: {err.get('code')}: {err.get('message')}"
            )
        out.append(GoldCall(tool=tool, arguments=dict(args), result=res.result, function=tool))
    return out


def _criteria_changes(criteria: list[ChangeSpec], gold: list[RowChange]) -> list[RowChange]:
    """The gold changes the criteria name; a criterion the ground truth does not meet rejects the task."""
    by_place = {(c.table, c.key, c.field): c for c in gold}
    kept: list[RowChange] = []
    for i, want in enumerate(criteria):
        got = by_place.get((want.table, want.key, want.field))
        if got is None:
            raise Rejected(
                "verify",
                f"criterion {i} ({want.table} {want.key}.{want.field}) is not changed by the ground truth",
            )
        if _canon(got.after) != _canon(want.after) or (want.op is not None and want.op != got.op):
            raise Rejected(
                "verify",
                f"criterion {i} wants {want.table} {want.key}.{want.field} = {want.after!r}; "
                f"the ground truth leaves {got.after!r}",
            )
        kept.append(got)
    return kept


def names_a_tool(text: str, tools: list[str], prefix: str = "") -> str | None:
    """The first tool name (with an underscore, as a whole word) the text mentions, or None."""
    low = text.lower()
    for name in sorted(tools, key=len, reverse=True):
        for n in {name, name.removeprefix(prefix)} if prefix else {name}:
            if "_" in n and re.search(rf"(?<![a-z0-9_]){re.escape(n.lower())}(?![a-z0-9_])", low):
                return name
    return None


def verify(task_id: str, domain: str, spec: TaskSpec, root: Task | None = None) -> VerifiedTask:
    """Replay and check a proposed task on fresh worlds of `domain`; `Rejected` says why it is not a task.

    `root` is the lineage's seed task: a τ² seed's judge and criteria are carried to the task (a seed
    keeps its own; a child's are carried over to its ground truth), and a BFCL or AgentDojo task is
    replayed on its seed's object world and judged by its benchmark's checker."""
    from toolshift.evolve.worlds import carry_judge, is_external_domain, verify_external

    if is_external_domain(domain):
        if root is None:
            raise Rejected("verify", f"a {domain} task is verified against its seed, and none is given")
        try:
            return VerifiedTask(task=verify_external(task_id, root, spec))
        except ValueError as exc:
            raise Rejected("verify", str(exc)) from None
    try:
        compiled = load_domain(domain)
    except Exception as exc:  # an unknown domain or a broken spec: the child names a world we cannot build
        raise Rejected("verify", f"no world {domain!r}: {exc}") from None
    setup = [(c.tool, c.arguments) for c in spec.initial_state]
    gold_calls = [(c.tool, c.arguments) for c in spec.ground_truth_calls]
    world = World(compiled)
    try:
        initial = _replay(world, setup, "initial_state")
        base = world.snapshot()
        gold = _replay(world, gold_calls, "ground truth")
        delta = world.diff(base)
        if not delta:
            raise Rejected(
                "verify", "the ground truth changes nothing (tasks are judged by the state they leave)"
            )
        expected = delta
        if spec.evaluation_criteria is not None:
            expected = _criteria_changes(spec.evaluation_criteria.expected_changes, delta)
            outside = judge_diff(delta, expected).collateral_rows()
            if outside:
                raise Rejected(
                    "verify",
                    f"the ground truth also changes {', '.join(outside[:5])}, which the criteria do not name: "
                    "following it would not be a strict success (no change outside the criteria)",
                )
        world.restore(base)
        reads = {t.name for t in world.tools if t.effect == "read"}
        for tool, args in gold_calls:
            if tool in reads:
                world.call(tool, args)
        if covers(world.diff(base), expected):
            raise Rejected("verify", "the ground truth's reads alone already satisfy the task")
        base.close()
    finally:
        world.close()
    again = World(compiled)
    try:
        _replay(again, setup, "initial_state")
        snap = again.snapshot()
        _replay(again, gold_calls, "ground truth (second replay)")
        if [c.model_dump(mode="json") for c in again.diff(snap)] != [
            c.model_dump(mode="json") for c in delta
        ]:
            raise Rejected("verify", "a second replay of the ground truth changes the world differently")
        snap.close()
    finally:
        again.close()
    instruction = spec.user_instruction()
    shown = " ".join(
        [spec.public_request, instruction.intent, instruction.motivation, *instruction.facts.values()]
    )
    tool = names_a_tool(shown, [t.name for t in compiled.tools], compiled.spec.tool_prefix)
    if tool is not None:
        raise Rejected("verify", f"the user's text names the tool {tool!r} (users never name tools)")
    task = Task(
        id=task_id,
        domain=domain,
        public_request=spec.public_request,
        instruction=instruction,
        gold_path=gold,
        base_functions=[c.tool for c in gold],
        expected_changes=expected,
    )
    task = carry_judge(task, root, is_seed=root is not None and task_id == root.id)
    return VerifiedTask(task=task, initial_state=initial)
