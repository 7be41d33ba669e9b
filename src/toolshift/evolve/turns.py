"""Children of BFCL multi-turn tasks: the entry's turns dropped, merged or split, judged by BFCL's checker.

A BFCL task is judged against its entry's own ground truth, turn by turn, so a child may only regroup
the entry's turns: `merge_turns` (harder: two consecutive requests in one message), `drop_turn`
(easier: the last turn and its calls left out) and `split_turn` (easier: a merged turn split again).
Each child turn names the entry turns it stands for (`TurnSpec.of`); its text and ground truth are
theirs, joined. Verification checks exactly that and replays the calls on the entry's own world; the
judge then runs BFCL's `multi_turn_checker` on the regrouped entry (`bfcl.grouped_entry`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from toolshift.evolve.edits import EditError
from toolshift.evolve.program import CallSpec, TaskSpec, TurnSpec
from toolshift.models import GoldCall, ScriptedTurn, Task, UserInstruction

HARDER = ("merge_turns",)
EASIER = ("drop_turn", "split_turn")


@dataclass
class TurnProposal:
    spec: TaskSpec
    operator: str
    description: str


def groups_of(spec: TaskSpec) -> list[list[int]]:
    return [list(t.of) for t in spec.turns]


def regrouped(spec: TaskSpec, root: Task, groups: list[list[int]]) -> TaskSpec:
    """The task with the root entry's turns grouped as `groups`: texts and calls joined per group."""
    paths = root.turn_paths()
    texts = [t.text for t in root.turns]
    turns = [
        TurnSpec(text="\n".join(texts[i] for i in g), calls=sum(len(paths[i]) for i in g), of=list(g))
        for g in groups
    ]
    calls = [CallSpec(tool=c.tool, arguments=dict(c.arguments)) for g in groups for i in g for c in paths[i]]
    if not calls:
        raise EditError("the turns left would have no ground-truth calls")
    instruction = spec.instruction.model_copy(update={"intent": turns[0].text})
    return spec.model_copy(
        update={
            "turns": turns,
            "ground_truth_calls": calls,
            "public_request": turns[0].text,
            "instruction": instruction,
        }
    )


def drop_turn(groups: list[list[int]], rng: random.Random) -> tuple[list[list[int]], str] | None:
    if len(groups) < 2:
        return None
    return groups[:-1], f"dropped the last turn (entry turns {groups[-1]})"


def merge_turns(groups: list[list[int]], rng: random.Random) -> tuple[list[list[int]], str] | None:
    if len(groups) < 2:
        return None
    i = rng.randrange(len(groups) - 1)
    merged = [*groups[:i], groups[i] + groups[i + 1], *groups[i + 2 :]]
    return merged, f"merged turns {i} and {i + 1} into one message (entry turns {groups[i] + groups[i + 1]})"


def split_turn(groups: list[list[int]], rng: random.Random) -> tuple[list[list[int]], str] | None:
    merged = [i for i, g in enumerate(groups) if len(g) > 1]
    if not merged:
        return None
    i = merged[rng.randrange(len(merged))]
    cut = rng.randrange(1, len(groups[i]))
    split = [*groups[:i], groups[i][:cut], groups[i][cut:], *groups[i + 1 :]]
    return split, f"split turn {i} back into two (entry turns {groups[i][:cut]} and {groups[i][cut:]})"


OPERATORS = {"merge_turns": merge_turns, "drop_turn": drop_turn, "split_turn": split_turn}


def propose_turns(
    spec: TaskSpec,
    root: Task,
    completion: float | None,
    rng: random.Random,
    known: Callable[[TaskSpec], bool],
) -> TurnProposal:
    """One child of a BFCL task, in the direction the parent's completion rate calls for (as the
    structural proposer chooses: above 0.7 harder, below 0.3 easier, between either)."""
    c = 0.0 if completion is None else completion
    if c > 0.7:
        family = list(HARDER)
    elif c < 0.3:
        family = list(EASIER)
    else:
        family = list(HARDER if rng.random() < 0.5 else EASIER)
    rng.shuffle(family)
    tried = []
    for op in family:
        made = OPERATORS[op](groups_of(spec), rng)
        if made is None:
            tried.append(f"{op}: does not apply")
            continue
        groups, description = made
        try:
            child = regrouped(spec, root, groups)
        except EditError as exc:
            tried.append(f"{op}: {exc}")
            continue
        if known(child):
            tried.append(f"{op}: makes a program the archive holds")
            continue
        return TurnProposal(child, op, description)
    raise EditError("no operator applies (" + "; ".join(tried) + ")")


def turns_child(task_id: str, root: Task, spec: TaskSpec) -> tuple[Task, list[tuple[str, dict]]]:
    """A BFCL child checked against its entry: its turns are the entry's, regrouped, with their own text
    and calls. Returns the task (before the replay fills in results) and its calls. `ValueError` says why not."""
    from toolshift.world.external import bfcl

    groups = groups_of(spec)
    if not groups:
        raise ValueError("a BFCL task's program must keep its turns")
    try:
        bfcl.grouped_entry(bfcl.entry(root.id), groups)
    except Exception as exc:
        raise ValueError(str(exc)) from None
    want = regrouped(spec, root, groups)
    for i, (got, expect) in enumerate(zip(spec.turns, want.turns, strict=True)):
        if got.text != expect.text or got.calls != expect.calls:
            raise ValueError(
                f"turn {i} must be the entry's turns {expect.of} as they are (BFCL judges against them)"
            )
    if [(c.tool, c.arguments) for c in spec.ground_truth_calls] != [
        (c.tool, c.arguments) for c in want.ground_truth_calls
    ]:
        raise ValueError(
            "the ground truth must be the entry's own calls for its turns (BFCL's checker judges by them)"
        )
    new_tools = [[t for i in g for t in root.turns[i].new_tools] for g in groups]
    task = root.model_copy(
        update={
            "id": task_id,
            "public_request": spec.turns[0].text,
            "instruction": UserInstruction(intent=spec.turns[0].text),
            "turns": [
                ScriptedTurn(text=t.text, gold_calls=t.calls, new_tools=n)
                for t, n in zip(spec.turns, new_tools, strict=True)
            ],
            "difficulty": {
                **root.difficulty,
                "bfcl_entry": root.id,
                "bfcl_turn_groups": groups,
                "turns": len(groups),
                "path_length": len(spec.ground_truth_calls),
            },
            "gold_path": [
                GoldCall(tool=c.tool, arguments=dict(c.arguments), function=c.tool)
                for c in spec.ground_truth_calls
            ],
        }
    )
    return task, [(c.tool, dict(c.arguments)) for c in spec.ground_truth_calls]
