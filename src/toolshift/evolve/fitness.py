"""The seed's six fitness functions of the completion rate c and the successful-trajectory length L.

c is the solver's mean completion over N attempts; L the mean length (tool calls) of its successful
attempts, 0 when none succeeded, so the length bonus max(1, L) is 1 then. A task no attempt solved
perfectly is infeasible: all six metrics count as 0 for selection (the raw values are kept). "Solved"
and "perfect" mean strict success (Δgold ⊆ Δagent and no collateral write; D117): the engine passes
strict verdicts, so a solver that also breaks other records lowers c.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

METRICS = (
    "target_difficulty",
    "learnability",
    "length_x_relaxed_band",
    "length_x_strict_band",
    "length_x_learnability",
    "length_x_target_difficulty",
)
"""The six metrics, in the seed's order."""

_BELL = 4.0 * math.log(10.0)


def target_difficulty(c: float) -> float:
    """exp(−4 ln10 (c − 0.5)²): 1 at c = 0.5, 0.1 at c = 0 and c = 1."""
    return math.exp(-_BELL * (c - 0.5) ** 2)


def learnability(c: float) -> float:
    """c(1 − c), sampling for learnability: the variance of a Bernoulli(c) outcome."""
    return c * (1.0 - c)


def length_bonus(length: float) -> float:
    return max(1.0, length)


def metrics(c: float, length: float) -> dict[str, float]:
    """The six metrics for completion rate `c` ∈ [0, 1] and successful-trajectory length `length` ≥ 0."""
    if not 0.0 <= c <= 1.0 or math.isnan(c):
        raise ValueError(f"completion rate {c!r} is outside [0, 1]")
    bonus = length_bonus(length)
    bell = target_difficulty(c)
    learn = learnability(c)
    return {
        "target_difficulty": bell,
        "learnability": learn,
        "length_x_relaxed_band": bonus * (1.0 if 0.3 <= c <= 0.7 else 0.0),
        "length_x_strict_band": bonus * (1.0 if 0.4 <= c <= 0.6 else 0.0),
        "length_x_learnability": bonus * learn,
        "length_x_target_difficulty": bonus * bell,
    }


@dataclass(frozen=True)
class Fitness:
    """One program's scores: c, L, the raw six metrics, feasibility, and what selection uses."""

    completion: float
    length: float
    raw: dict[str, float]
    feasible: bool
    attempts: int
    perfect: int
    variance: float
    """The population variance of the attempts' scores (c(1 − c) for pass/fail attempts)."""

    @property
    def scores(self) -> dict[str, float]:
        """The metrics selection ranks by: the raw ones, or all 0 for an infeasible task."""
        return dict(self.raw) if self.feasible else dict.fromkeys(METRICS, 0.0)

    @property
    def mean(self) -> float:
        """The mean of the six (gated) metrics: the "global" score."""
        s = self.scores
        return sum(s[m] for m in METRICS) / len(METRICS)


def score(
    attempt_scores: Sequence[float], perfect: Sequence[bool], lengths_of_successes: Sequence[float]
) -> Fitness:
    """Fitness from judged attempts: per-attempt scores in [0, 1], which were perfect, successful lengths."""
    n = len(attempt_scores)
    if n == 0:
        raise ValueError("no judged attempts")
    c = sum(attempt_scores) / n
    c = min(1.0, max(0.0, c))
    length = sum(lengths_of_successes) / len(lengths_of_successes) if lengths_of_successes else 0.0
    var = sum((s - c) ** 2 for s in attempt_scores) / n
    k = sum(1 for p in perfect if p)
    return Fitness(
        completion=c,
        length=length,
        raw=metrics(c, length),
        feasible=k > 0,
        attempts=n,
        perfect=k,
        variance=var,
    )
