"""Which world a lineage's programs run in, and how another benchmark's tasks keep that benchmark's rules.

Our worlds and τ²-bench's (`tau2-airline`, `tau2-retail`) load with `load_domain`: the structural
operators, verification and the solver work on them alike. A τ² task is judged by τ²'s reward
(`tau2-evaluator`): a seed keeps its own evaluation criteria; a child's are the seed's carried over to
its new ground truth (`tau2_child_criteria`). BFCL multi-turn and AgentDojo tasks each run in their own
object world (`bfcl:<entry>`, `agentdojo:<suite>.<task>`) and are judged by those benchmarks' checkers
against the entry's own ground truth: a BFCL child regroups its entry's turns (`toolshift.evolve.turns`)
and is judged by BFCL's checker on the regrouped entry; an AgentDojo task's utility check is code written
for that task, so its lineage is evaluated as given (its seed), with no children.
"""

from __future__ import annotations

import json
from typing import Any

from toolshift.evolve.program import TaskSpec
from toolshift.models import ExpectedAction, GoldCall, JudgeCriteria, Task

TAU2_DOMAINS = {"tau2_airline": "tau2-airline", "tau2_retail": "tau2-retail"}


def is_external_domain(domain: str) -> bool:
    """BFCL's and AgentDojo's tasks (`bfcl`, `agentdojo-<suite>`): one object world per task."""
    return domain == "bfcl" or domain.startswith("agentdojo-")


def external_world(task: Task) -> str:
    """The object world of a BFCL or AgentDojo seed task (children keep their seed's)."""
    from toolshift.world.external import JUDGES

    family = JUDGES.get(task.judge or "")
    if family is None:
        raise ValueError(f"task {task.id!r} has no external judge")
    return f"{family}:{task.difficulty.get('bfcl_entry') or task.id}"


def write_tools(domain: str, root: Task | None = None) -> set[str]:
    """The world's writing tools (what a failed attempt's diff and the features read)."""
    if is_external_domain(domain):
        from toolshift.world.external import load_external

        assert root is not None, "an external lineage needs its seed task"
        return {t.name for t in load_external(external_world(root)).tools if t.effect == "write"}
    from toolshift.world import load_domain

    return {t.name for t in load_domain(domain).tools if t.effect == "write"}


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def tau2_child_criteria(seed: JudgeCriteria | None, gold: list[GoldCall]) -> JudgeCriteria | None:
    """τ²'s criteria for a child of a τ² seed: the expected actions are the child's ground truth (an
    action the seed also expected keeps its `compare_args`), the basis is the seed's, and what the agent
    must say (`communicate_info`) is kept where the child's ground truth still reads it. NL assertions
    are dropped: they speak of the seed's conversation (and are not judged here, D112)."""
    if seed is None:
        return None
    by_call = {(a.name, _canon(a.arguments)): a for a in seed.actions or []}
    actions = [
        by_call.get((c.tool, _canon(c.arguments)), ExpectedAction(name=c.tool, arguments=dict(c.arguments)))
        for c in gold
    ]
    read = " ".join(_canon(c.result) for c in gold).lower()
    said = [s for s in seed.communicate_info or [] if s.lower().replace(",", "") in read.replace(",", "")]
    basis = [b for b in seed.reward_basis if b != "NL_ASSERTION" and (b != "COMMUNICATE" or said)]
    return JudgeCriteria(
        actions=[a.model_copy(update={"action_id": None}) for a in actions]
        if seed.actions is not None
        else None,
        communicate_info=said or None,
        nl_assertions=None,
        reward_basis=basis or ["DB"],
    )


def carry_judge(task: Task, root: Task | None, *, is_seed: bool) -> Task:
    """The task judged as its seed's benchmark judges: τ²'s reward (the seed's criteria, or a child's
    carried over); a seed of ours stays with the world diff (judge None)."""
    from toolshift.world.tau2.evaluator import TAU2_JUDGE

    if root is None or root.judge != TAU2_JUDGE:
        return task
    criteria = root.criteria if is_seed else tau2_child_criteria(root.criteria, task.gold_path)
    return task.model_copy(update={"judge": TAU2_JUDGE, "criteria": criteria})


def verify_external(task_id: str, root: Task, spec: TaskSpec | None = None) -> Task:
    """A BFCL or AgentDojo task replayed on a fresh object world of its seed's: every gold call must
    succeed, and a seed's recorded changes be made again. A seed is its benchmark's task as given; a
    BFCL child regroups its entry's turns (`toolshift.evolve.turns`). `ValueError` says why not."""
    from toolshift.world.external import load_external
    from toolshift.world.external.objects import ObjectWorld

    if task_id == root.id:
        task, calls = root, [(c.tool, dict(c.arguments)) for c in root.gold_path]
    elif root.judge == "bfcl-multi-turn-checker" and spec is not None:
        from toolshift.evolve.turns import turns_child

        task, calls = turns_child(task_id, root, spec)
    else:
        raise ValueError(
            f"{root.domain} tasks are judged by AgentDojo's code for the task as given (no children)"
        )
    world = ObjectWorld(load_external(external_world(root)))
    before = world.snapshot()
    gold: list[GoldCall] = []
    for i, (tool, args) in enumerate(calls):
        res = world.call(tool, args)
        if not res.ok:
            err = res.error or {}
            raise ValueError(f"ground truth step {i} {tool} failed: {err.get('code')}: {err.get('message')}")
        gold.append(GoldCall(tool=tool, arguments=dict(args), result=res.result, function=tool))
    changes = world.changes_since(before)
    if task_id != root.id:
        if not changes:
            raise ValueError("the ground truth changes nothing (tasks are judged by the state they leave)")
        return task.model_copy(
            update={"gold_path": gold, "base_functions": [c.tool for c in gold], "expected_changes": changes}
        )
    # AgentDojo keeps only the changes a second replay reproduces, so the recorded ones are a subset
    made = {(c.table, c.key, c.field) for c in changes}
    if not {(c.table, c.key, c.field) for c in root.expected_changes} <= made:
        raise ValueError("a replay of the ground truth does not make the task's recorded changes")
    return task.model_copy(update={"gold_path": gold})
