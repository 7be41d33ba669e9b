"""Judges: the final dataset's trivial-failure filter, and task-feature / failure-mode labels by a model.

Trivial failures (the seed's Figure 9): the solver basically did the right thing and failed on a minor
string detail — a harmless formatting or wording difference — which points at an ambiguous instruction,
not at the solver. By rules, a failed attempt is trivial when every change it got wrong is right up to
case, spacing and punctuation and nothing else is missing; a task is filtered out when at least half of
its failed attempts are trivial. A configured model judges the same from the failure summary and the
attempts' diffs and answers `{"score": 0|1, "justification": ...}`. Every verdict keeps its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolshift.evolve.archive import Cost
from toolshift.evolve.feedback import FAILURE_MODES, AttemptDiff, call_text, short_value
from toolshift.evolve.modelcalls import ModelCallFailed, complete, json_object
from toolshift.evolve.taxonomy import FEATURES
from toolshift.models import Task


@dataclass
class Verdict:
    trivial: bool
    reason: str
    by: str
    cost: Cost


def _norm(value: object) -> str:
    return re.sub(r"[\W_]+", "", str(value).lower())


def attempt_is_trivial(d: AttemptDiff) -> bool:
    """Wrong only in form: every wrong value equal up to case, spacing and punctuation, nothing missing."""
    return (
        bool(d.wrong_values)
        and all(_norm(c.after) == _norm(got) for c, got in d.wrong_values)
        and not d.missing_calls
        and not d.missing_changes
        and not d.extra_rows
    )


def rule_verdict(diffs: list[AttemptDiff]) -> Verdict:
    if not diffs:
        return Verdict(False, "no failed attempt to judge", "rules", Cost())
    trivial = [d for d in diffs if attempt_is_trivial(d)]
    if 2 * len(trivial) >= len(diffs):
        example = trivial[0].wrong_values[0]
        c, got = example
        return Verdict(
            True,
            f"{len(trivial)} of {len(diffs)} failures differ from the ground truth only in form "
            f"(e.g. {c.field} {short_value(got)} for {short_value(c.after)})",
            "rules",
            Cost(),
        )
    return Verdict(
        False, f"{len(diffs) - len(trivial)} of {len(diffs)} failures are material", "rules", Cost()
    )


JUDGE_PROMPT = (
    "You are an expert judge of a tool-use agent's failures. Decide whether the failure described is a "
    "trivial failure: the agent basically did the right thing but failed on a minor string-matching detail, "
    "an overly strict check or a harmless deviation (for example writing 'Refund for movies' where "
    "'Accidental request refund' was expected). Processing only 4 of 5 requested records, or acting on the "
    'wrong record, is not trivial. Answer in JSON only: {"score": 1 if trivial else 0, "justification": '
    '"one short sentence"}.'
)


def _case(task: Task, summary: str, diffs: list[AttemptDiff]) -> str:
    gold = "\n".join(f"- {call_text(g.tool, g.arguments)}" for g in task.gold_path)
    changes = "\n".join(
        f"- {c.table} {c.key}.{c.field} → {short_value(c.after)}" for c in task.expected_changes[:20]
    )
    attempts = "\n".join(f"- attempt {d.trial}: " + "; ".join(d.findings()[:6]) for d in diffs[:5])
    return (
        f"Instruction: {task.public_request} / {task.instruction.intent}\nExpected final state changes:\n{changes}\n"
        f"Ground-truth tool calls:\n{gold}\nFailure reason summary: {summary}\nFailure trajectories:\n{attempts}"
    )


def model_verdict(
    spec: str, task: Task, summary: str, diffs: list[AttemptDiff], *, timeout: float, seed: int = 0
) -> Verdict:
    if not diffs:
        return Verdict(False, "no failed attempt to judge", spec, Cost())
    messages = [
        {"role": "system", "content": JUDGE_PROMPT},
        {"role": "user", "content": _case(task, summary, diffs)},
    ]
    try:
        text, cost = complete(spec, messages, timeout=timeout, seed=seed)
        answer = json_object(text)
        score = int(answer.get("score", 0))
    except (ModelCallFailed, TypeError, ValueError) as exc:
        # a judge that cannot answer filters nothing out; the reason says so
        return Verdict(False, f"judge gave no verdict ({exc}); kept", spec, Cost())
    return Verdict(score == 1, str(answer.get("justification", ""))[:300] or "(no justification)", spec, cost)


LABEL_PROMPT = (
    "Label a tool-use task. Task features (any that apply): "
    "specification (the output must take an exact form), reasoning (a step no tool does: sorting, arithmetic, "
    "picking digits), distractor (irrelevant information or records to filter out), intermediate_tool_call "
    "(needed information must first be looked up), constraint_filter (conditions, filters, exceptions). "
    "Failure modes (exactly one, for the failed attempts): " + ", ".join(FAILURE_MODES) + ". "
    'Answer in JSON only: {"features": [...], "failure_mode": "..." or null}.'
)


def model_labels(
    spec: str, task: Task, summary: str, diffs: list[AttemptDiff], *, timeout: float, seed: int = 0
) -> tuple[list[str], str | None, Cost]:
    """(features, failure mode, cost) from a model; `ModelCallFailed` when it gives no usable answer."""
    messages = [
        {"role": "system", "content": LABEL_PROMPT},
        {"role": "user", "content": _case(task, summary, diffs)},
    ]
    text, cost = complete(spec, messages, timeout=timeout, seed=seed)
    answer = json_object(text)
    features = [f for f in FEATURES if f in (answer.get("features") or [])]
    mode = answer.get("failure_mode")
    return features, (mode if mode in FAILURE_MODES and diffs else None), cost
