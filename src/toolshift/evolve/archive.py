"""The archive of evaluated programs, and how a step picks its parent and its five inspirations.

Every program a run evaluates — the seeds and each child, accepted or rejected — is one record
(`toolshift.evolve-program/1`). Selection follows the seed: a program is scored by six metrics; the
**global best** has the highest mean of the six, a **local best** the highest value of one. Each step
evolves one seed's lineage (round robin); its parent is that lineage's global best or one of its local
bests, chosen at random (or, with a small probability, any evaluated member, so a lineage whose every
task is infeasible still moves); its inspirations are five other programs drawn from the whole archive,
each draw taking the next best of the global ranking or of one metric's ranking. All draws come from
a seeded generator, so a run and its resume choose alike.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolshift.evolve.fitness import METRICS
from toolshift.evolve.solver import AttemptRecord
from toolshift.models import GoldCall, Task

PROGRAM_RECORD_FORMAT = "toolshift.evolve-program/1"
INSPIRATIONS = 5
EXPLORE = 0.15
"""Probability that a parent is any evaluated member of its lineage instead of a best."""


class Cost(BaseModel):
    """What one part of an evaluation spent: model calls, tokens, money (None when unpriced), time."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    seconds: float = 0.0

    def add(self, other: Cost) -> Cost:
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Cost(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=cost,
            seconds=self.seconds + other.seconds,
        )


class Mutation(BaseModel):
    """How a program was made from its parent."""

    proposer: str
    """`seed`, `structural`, or `model:<spec>`."""
    kind: Literal["seed", "structural", "diff", "rewrite"] = "seed"
    operator: str | None = None
    description: str = ""
    diff: str = ""
    """The change as a SEARCH/REPLACE block (the model's response for model proposals)."""
    added: dict[str, Any] = Field(default_factory=dict)
    """What a structural operator added (sentences, calls, facts), so its inverse can take it back."""


class ProgramRecord(BaseModel):
    """One program of the archive: its text, lineage, verification, attempts, scores and feedback."""

    format: Literal["toolshift.evolve-program/1"] = PROGRAM_RECORD_FORMAT
    id: str
    root: str
    """The seed task this program descends from."""
    parent: str | None = None
    generation: int = 0
    step: int | None = None
    domain: str
    program: str = ""
    mutation: Mutation
    status: Literal["evaluated", "rejected"]
    stage: str | None = None
    """For a rejected program: propose, parse, verify, rubric, duplicate or solve."""
    reason: str | None = None
    task: Task | None = None
    initial_state: list[GoldCall] = Field(default_factory=list)
    attempts: list[AttemptRecord] = Field(default_factory=list)
    completion: float | None = None
    """The solver's completion rate by strict success (no collateral write): what fitness uses (D117)."""
    sr_completion: float | None = None
    """The share of judged attempts with Δgold ⊆ Δagent (SR), collateral writes allowed; None in records
    written before strict success, whose `completion` is this SR rate."""
    length: float | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    """The six raw metrics; selection uses `scores` (all 0 when infeasible)."""
    feasible: bool = False
    variance: float | None = None
    feedback: str = ""
    feedback_by: str = ""
    features: list[str] = Field(default_factory=list)
    features_by: str = ""
    failure_mode: str | None = None
    failure_by: str = ""
    rubric_failed: list[str] | None = None
    """The naturalness rubric's failed rules on the task's text (`toolshift.evolve.render`); None: not
    scored (a record from before the rubric, or a program rejected before it had a task)."""
    rubric_why: str = ""
    costs: dict[str, Cost] = Field(default_factory=dict)
    """By part: proposer, verify, solver, feedback."""
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def evaluated(self) -> bool:
        return self.status == "evaluated"

    @property
    def scores(self) -> dict[str, float]:
        if not self.evaluated or not self.feasible:
            return dict.fromkeys(METRICS, 0.0)
        return {m: float(self.metrics.get(m, 0.0)) for m in METRICS}

    @property
    def mean(self) -> float:
        s = self.scores
        return sum(s.values()) / len(METRICS)

    def total_cost(self) -> Cost:
        total = Cost()
        for c in self.costs.values():
            total = total.add(c)
        return total


def _ranked(records: Sequence[ProgramRecord], by: str) -> list[ProgramRecord]:
    """Best first by the global mean (`by="mean"`) or one metric; ties by id, so the order is total."""
    if by == "mean":
        return sorted(records, key=lambda r: (-r.mean, r.id))
    return sorted(records, key=lambda r: (-r.scores[by], -r.mean, r.id))


def rankings(records: Sequence[ProgramRecord]) -> dict[str, list[ProgramRecord]]:
    return {by: _ranked(records, by) for by in ("mean", *METRICS)}


def global_best(records: Sequence[ProgramRecord]) -> ProgramRecord | None:
    ranked = _ranked(records, "mean")
    return ranked[0] if ranked else None


def local_bests(records: Sequence[ProgramRecord]) -> dict[str, ProgramRecord]:
    return {m: _ranked(records, m)[0] for m in METRICS} if records else {}


def choose_parent(
    archive: Sequence[ProgramRecord], root: str, rng: random.Random, explore: float = EXPLORE
) -> tuple[ProgramRecord, str]:
    """(parent, why) for a step on `root`'s lineage: its global best or a local best, or an explorer."""
    lineage = [r for r in archive if r.root == root and r.evaluated]
    if not lineage:
        raise ValueError(f"lineage {root!r} has no evaluated program")
    feasible = [r for r in lineage if r.feasible]
    if not feasible or rng.random() < explore:
        pick = lineage[rng.randrange(len(lineage))]
        return pick, "explore" if feasible else "explore (no feasible program in the lineage yet)"
    if rng.random() < 0.5:
        best = global_best(feasible)
        assert best is not None
        return best, "global best"
    metric = METRICS[rng.randrange(len(METRICS))]
    return local_bests(feasible)[metric], f"local best ({metric})"


def choose_inspirations(
    archive: Sequence[ProgramRecord], parent: ProgramRecord, rng: random.Random, k: int = INSPIRATIONS
) -> list[tuple[ProgramRecord, str]]:
    """Up to `k` distinct evaluated programs other than `parent`: each draw the next best of the global
    ranking (probability ½) or of a metric chosen at random; feasible programs rank above the rest."""
    pool = [r for r in archive if r.evaluated and r.id != parent.id]
    if not pool:
        return []
    ranks = rankings(pool)
    chosen: list[tuple[ProgramRecord, str]] = []
    taken: set[str] = set()
    while len(chosen) < min(k, len(pool)):
        by = "mean" if rng.random() < 0.5 else METRICS[rng.randrange(len(METRICS))]
        nxt = next((r for r in ranks[by] if r.id not in taken), None)
        if nxt is None:
            break
        taken.add(nxt.id)
        chosen.append((nxt, "global" if by == "mean" else f"local:{by}"))
    return chosen
