"""The feedback generator: why the solver's failed attempts failed, against the ground truth and the instruction.

Model-free (the default), each failed attempt becomes a structured diff — the calls it made against the
ground-truth calls (missing, made with other arguments, extra writes, failed calls) and the world
changes it left against Δgold (missing, wrong value, extra rows) — and the attempts' most common
findings are summarised in a few lines. The same diff assigns each failed attempt one failure mode of
the seed's taxonomy by rules; a task's failure mode is its attempts' most common one. Where a model is
configured, it writes the summary from the same diff (its call bounded by a hard timeout).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from toolshift.agents.users import END_CONVERSATION
from toolshift.models import RowChange, Task, missing_changes
from toolshift.traces.episode import Episode, paired_calls

FAILURE_MODES = (
    "missing_items",
    "commonsense_error",
    "constraint_violation",
    "incorrect_data_processing",
    "invalid_apis",
    "incompletion",
    "incorrect_search_assumptions",
    "hallucination",
    "formatting_errors",
    "incorrect_task_ordering",
)
"""The seed's ten solver failure modes (Table 2)."""


@dataclass
class AttemptDiff:
    """One failed attempt against the ground truth."""

    trial: int
    termination: str | None
    calls: list[tuple[str, dict[str, Any], str | None]]
    """(tool, arguments, error kind or None) in order."""
    missing_calls: list[str] = field(default_factory=list)
    wrong_arguments: list[str] = field(default_factory=list)
    extra_writes: list[str] = field(default_factory=list)
    failed_calls: list[str] = field(default_factory=list)
    missing_changes: list[str] = field(default_factory=list)
    wrong_values: list[tuple[RowChange, Any]] = field(default_factory=list)
    extra_rows: list[str] = field(default_factory=list)
    made_gold: list[str] = field(default_factory=list)
    """Tools of the ground-truth writes the attempt made exactly (one entry per call)."""
    missed_gold: list[str] = field(default_factory=list)
    """Tools of the ground-truth writes it did not make exactly."""
    unseen_values: list[str] = field(default_factory=list)
    """Argument values of the attempt's writes that appeared nowhere before in its conversation."""

    def findings(self) -> list[str]:
        out = [f"never called {c}" for c in self.missing_calls]
        out += self.wrong_arguments
        out += [f"extra write {w}" for w in self.extra_writes]
        out += [f"failed call {f}" for f in self.failed_calls]
        out += [
            f"left {c.table} {c.key}.{c.field} = {short_value(got)} instead of {short_value(c.after)}"
            for c, got in self.wrong_values
        ]
        out += [f"missing change {m}" for m in self.missing_changes]
        out += [f"changed {r}, which the task does not touch" for r in self.extra_rows]
        out += [f"used {v}, which nobody said" for v in self.unseen_values]
        if not self.calls:
            out.append("made no tool call")
        return out


def short_value(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_text(tool: str, args: dict[str, Any]) -> str:
    inner = ", ".join(f"{k}={short_value(v, 40)}" for k, v in args.items())
    return f"{tool}({inner})"


def _error_kind(content: str | None) -> str:
    text = (content or "").lower()
    if text.startswith("error: unknown tool"):
        return "unknown_tool"
    if text.startswith("error: invalid arguments") or text.startswith("error: arguments"):
        return "bad_arguments"
    if "not_found" in text or "no " in text[:40]:
        return "not_found"
    return "domain_error"


def diff_attempt(episode: Episode, task: Task, writes: set[str]) -> AttemptDiff:
    """The structured diff of one attempt: its calls and changes against the task's ground truth."""
    calls: list[tuple[str, dict[str, Any], str | None]] = []
    for _, call, result in paired_calls(episode):
        if call.name == END_CONVERSATION or call.requestor != "assistant":
            continue
        err = _error_kind(result.content) if result is not None and result.error else None
        calls.append((call.name, dict(call.arguments), err))
    d = AttemptDiff(trial=episode.trial, termination=episode.termination_reason, calls=calls)
    made = [(t, a) for t, a, e in calls if e is None]
    for g in task.gold_path:
        if g.tool not in writes:
            continue
        if (g.tool, g.arguments) in made:
            d.made_gold.append(g.tool)
            continue
        d.missed_gold.append(g.tool)
        same_tool = [a for t, a in made if t == g.tool]
        if not same_tool:
            d.missing_calls.append(call_text(g.tool, g.arguments))
            continue
        got = same_tool[0]
        diffs = [
            f"{k} {short_value(got.get(k))} instead of {short_value(v)}"
            for k, v in g.arguments.items()
            if got.get(k) != v
        ] + [
            f"{k} {short_value(v)} (not in the ground truth)" for k, v in got.items() if k not in g.arguments
        ]
        d.wrong_arguments.append(f"called {g.tool} with " + "; ".join(diffs[:4]))
    gold_calls = [(g.tool, g.arguments) for g in task.gold_path]
    for t, a in made:
        if t in writes and (t, a) not in gold_calls and not any(t == g for g, _ in gold_calls):
            d.extra_writes.append(call_text(t, a))
    d.failed_calls = [f"{t}: {e}" for t, _, e in calls if e is not None]
    diff = episode.world_diff or []
    at = {(c.table, c.key, c.field): c for c in diff}
    for c in missing_changes(diff, task.expected_changes):
        other = at.get((c.table, c.key, c.field))
        if other is not None:
            d.wrong_values.append((c, other.after))
        else:
            d.missing_changes.append(f"{c.table} {c.key}.{c.field} → {short_value(c.after)}")
    gold_rows = {(c.table, c.key) for c in task.expected_changes}
    d.extra_rows = sorted({f"{c.table} {c.key}" for c in diff if (c.table, c.key) not in gold_rows})[:5]
    d.unseen_values = _unseen_values(episode, writes)
    return d


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@\-]{3,}")


def _unseen_values(episode: Episode, writes: set[str]) -> list[str]:
    """Identifier-like write arguments (with a digit) that no earlier message contained."""
    seen = ""
    out: list[str] = []
    for m in episode.messages:
        if m.role == "assistant" and m.tool_calls:
            for call in m.tool_calls:
                if call.name not in writes:
                    continue
                for v in call.arguments.values():
                    if (
                        isinstance(v, str)
                        and any(ch.isdigit() for ch in v)
                        and _TOKEN.fullmatch(v)
                        and v.lower() not in seen
                    ):
                        out.append(v)
        seen += " " + (m.content or "").lower()
    return out[:3]


def _norm(value: Any) -> str:
    return re.sub(r"[\W_]+", "", str(value).lower())


def failure_mode(d: AttemptDiff, task: Task, features: list[str]) -> str:
    """One failure mode of the seed's taxonomy for a failed attempt, by rules over its diff."""
    if d.wrong_values:
        if all(_norm(c.after) == _norm(got) for c, got in d.wrong_values):
            return "formatting_errors"
        if "reasoning" in features:
            return "commonsense_error"
        return "incorrect_data_processing"
    repeated = Counter(g.tool for g in task.gold_path)
    if any(repeated[t] > 1 and t in d.made_gold for t in d.missed_gold):
        return "missing_items"
    if d.extra_rows or (d.wrong_arguments and not d.missing_calls):
        if d.unseen_values:
            return "hallucination"
        if "constraint_filter" in features:
            return "constraint_violation"
        return "incorrect_data_processing"
    if any(e in ("unknown_tool", "bad_arguments") for _, _, e in d.calls):
        return "invalid_apis"
    if d.unseen_values:
        return "hallucination"
    wrote = [t for t, _, e in d.calls if e is None]
    gold_order = [g.tool for g in task.gold_path]
    if wrote and set(gold_order) <= set(wrote) and wrote != gold_order:
        return "incorrect_task_ordering"
    if any(e == "not_found" for _, _, e in d.calls):
        return "incorrect_search_assumptions"
    return "incompletion"


def summarise(diffs: list[AttemptDiff], n_attempts: int, limit: int = 700) -> str:
    """A short text: how many attempts failed and their most common findings, with counts."""
    if not diffs:
        return f"all {n_attempts} attempts succeeded."
    counts: Counter[str] = Counter()
    for d in diffs:
        counts.update(dict.fromkeys(d.findings(), 1))
    ends = Counter(d.termination or "unknown" for d in diffs)
    top = "; ".join(f"{text} ({k})" for text, k in counts.most_common(5))
    how = ", ".join(f"{k} {v}" for k, v in ends.most_common(3))
    text = f"{len(diffs)} of {n_attempts} attempts failed (ended by {how}). Most common: {top}."
    return text if len(text) <= limit else text[: limit - 3] + "..."


def task_failure_mode(diffs: list[AttemptDiff], task: Task, features: list[str]) -> str | None:
    if not diffs:
        return None
    modes = Counter(failure_mode(d, task, features) for d in diffs)
    best = max(modes.values())
    return next(m for m in FAILURE_MODES if modes.get(m) == best)


FEEDBACK_PROMPT = (
    "You review a solver agent's failed attempts at a tool-use task. Given the user's instruction, the "
    "ground-truth tool calls, the state changes they must leave, and a structured diff of what the failed "
    "attempts did, explain in at most three sentences the main reason the solver failed. Be concrete "
    "(name the step, the value, the record); do not suggest fixes to the solver."
)


def feedback_messages(task: Task, diffs: list[AttemptDiff], n_attempts: int) -> list[dict[str, str]]:
    gold = "\n".join(f"- {call_text(g.tool, g.arguments)}" for g in task.gold_path)
    changes = "\n".join(
        f"- {c.table} {c.key}.{c.field} → {short_value(c.after)}" for c in task.expected_changes[:20]
    )
    attempts = "\n".join(
        f"- attempt {d.trial}: calls {[call_text(t, a) for t, a, _ in d.calls][:8]}; "
        + "; ".join(d.findings()[:6])
        for d in diffs[:4]
    )
    user = (
        f"Instruction (the user's opening): {task.public_request}\nUser's goal: {task.instruction.intent}\n\n"
        f"Ground-truth calls:\n{gold}\n\nRequired changes:\n{changes}\n\n"
        f"{len(diffs)} of {n_attempts} attempts failed. Failed attempts:\n{attempts}"
    )
    return [{"role": "system", "content": FEEDBACK_PROMPT}, {"role": "user", "content": user}]
