"""Choose a decision rule on training tasks only: recalibration per site and a threshold per decision.

Leave one task out over the training tasks, as `toolshift.flows.crossval` does: learn the flow and the costs
on the other tasks, replay the task left out with every lookup weighed (its scores and whether the agent
used them: the out-of-fold decision log). Per site the recalibration is fitted on the other tasks' log rows
(the fewest rows a site needs for its own map chosen by cross-validation over the same rows, `choose_min_count`),
so no lookup is scored on its own outcome. Every candidate rule — one θ or a threshold per decision (λ), on
the model's scores or recalibrated ones — is then replayed on each task left out and summed. The selection
is fixed in advance: per decider and rule family, the largest share of the ceiling within the detour budget
(ties: fewer detours, then the larger θ or λ, then re-reads allowed). Each candidate is tried both ways on
re-reads: whether a read the agent already has in context (made, or delivered by a lookup, earlier in the
episode) may be proposed again after a write. The held-out test tasks are never read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from toolshift.errors import BadInputError
from toolshift.flows.calibration import SiteCalibrator, choose_min_count, fit_site_calibrator, site_key
from toolshift.flows.ceiling import anatomy
from toolshift.flows.crossval import SavingFigures
from toolshift.flows.decide import DECIDERS, Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import Flow
from toolshift.flows.pricing import Price
from toolshift.flows.replay import WeighedLookup, replay
from toolshift.flows.rule import CostModel, Rule, learn_costs
from toolshift.flows.timeline import Catalog, Timeline

THETAS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
LAMS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
MAX_DETOURS = 0.5
FAMILIES = ("θ", "θ, recalibrated", "per decision", "per decision, recalibrated")
LOG_THETA = 0.3
"""The θ of the replays whose weighed lookups make the out-of-fold log (`--explore 0`, as the seed's)."""


def log_rows(log: Sequence[WeighedLookup]) -> list[tuple[str, str, float, bool]]:
    """(task, site, model score, used) per weighed lookup."""
    return [(x.task, site_key(x.tool, x.depth, x.position), x.raw, x.used) for x in log]


@dataclass(frozen=True)
class Candidate(SavingFigures):
    decider: str
    family: str
    value: float
    """θ for a single-θ family, λ for a per-decision one."""
    reread: bool
    """Whether a read the agent already has in context may be proposed again (after a write)."""
    saved: int
    ceiling: int
    detours: int
    episodes: int


@dataclass
class Fold:
    task: str
    held: list[Timeline]
    flow: Flow
    costs: CostModel


@dataclass
class RuleChoice:
    """What cross-validation over the training tasks chose, and the rows behind it."""

    candidates: list[Candidate]
    min_count: dict[str, int]
    brier_by_min_count: dict[str, dict[int, float]]
    oof: dict[str, list[tuple[str, str, float, bool]]]
    """Per decider: the out-of-fold decision log (task, site, model score, used)."""
    oof_recalibrated: dict[str, list[float]]
    """Per decider, row by row: the score recalibrated without the row's own task."""
    calibrator: dict[str, SiteCalibrator]
    costs: CostModel
    max_detours: float
    folds: int
    episodes: int
    best: dict[tuple[str, str], Candidate] = field(default_factory=dict)

    def rule(self, decider: str, family: str) -> Rule:
        """The chosen rule of a family, fitted on every training task."""
        c = self.best.get((decider, family))
        cal = self.calibrator[decider] if family.endswith("recalibrated") else None
        reread = c.reread if c else True
        if family.startswith("per decision"):
            return Rule("priced", lam=c.value if c else 1.0, calibrator=cal, costs=self.costs, reread=reread)
        return Rule("theta", theta=c.value if c else LOG_THETA, calibrator=cal, reread=reread)


def _rule(family: str, value: float, cal: SiteCalibrator, costs: CostModel, reread: bool) -> Rule:
    recal = cal if family.endswith("recalibrated") else None
    if family.startswith("per decision"):
        return Rule("priced", lam=value, calibrator=recal, costs=costs, reread=reread)
    return Rule("theta", theta=value, calibrator=recal, reread=reread)


def choose_rule(timelines: Sequence[Timeline], catalog: Catalog, *, walk_ranks: int, price: Price,
                deciders: Sequence[str] = DECIDERS, max_detours: float = MAX_DETOURS,
                learn_from_all: bool = False, thetas: Sequence[float] = THETAS, lams: Sequence[float] = LAMS,
                progress: Callable[[], None] | None = None) -> RuleChoice:  # fmt: skip
    """Leave-one-task-out over `timelines` (the training tasks only): the out-of-fold log, the per-site
    recalibration, every candidate rule's summed figures, and the choice."""
    tasks = sorted({t.task_id for t in timelines})
    if len(tasks) < 3:
        raise BadInputError(f"choosing a rule needs at least 3 training tasks, got {len(tasks)}")
    _, per_episode = anatomy(timelines)
    folds: list[Fold] = []
    oof: dict[str, list[tuple[str, str, float, bool]]] = {d: [] for d in deciders}
    for task in tasks:
        rest = [t for t in timelines if t.task_id != task]
        held = [t for t in timelines if t.task_id == task]
        if not any(learn_from_all or t.success for t in rest):
            continue
        flow = learn_flow(rest, catalog, learn_from_all=learn_from_all, walk_ranks=walk_ranks)
        folds.append(Fold(task, held, flow, learn_costs(rest, price)))
        for d in deciders:
            oof[d] += log_rows(replay(held, Decider(flow, d, LOG_THETA), weigh_all=True).log)  # type: ignore[arg-type]
        if progress is not None:
            progress()
    min_count: dict[str, int] = {}
    brier: dict[str, dict[int, float]] = {}
    per_fold_cal: dict[tuple[str, str], SiteCalibrator] = {}
    recalibrated: dict[str, list[float]] = {}
    for d in deciders:
        min_count[d], brier[d] = choose_min_count(oof[d])
        for fold in folds:
            fit = [(s, x, u) for t, s, x, u in oof[d] if t != fold.task]
            per_fold_cal[(d, fold.task)] = fit_site_calibrator(fit, min_count[d])
        recalibrated[d] = [
            per_fold_cal[(d, t)](s, x) if (d, t) in per_fold_cal else x for t, s, x, _ in oof[d]
        ]
    grid = [(f, v, rr) for f in FAMILIES for v in (lams if f.startswith("per decision") else thetas)
            for rr in (True, False)]  # fmt: skip
    sums = {(d, f, v, rr): [0, 0] for d in deciders for f, v, rr in grid}
    ceiling = episodes = 0
    for fold in folds:
        ceiling += sum(per_episode[t.episode_id].ceiling for t in fold.held)
        episodes += len(fold.held)
        for d in deciders:
            cal = per_fold_cal[(d, fold.task)]
            for f, v, rr in grid:
                r = replay(fold.held, Decider(fold.flow, d, rule=_rule(f, v, cal, fold.costs, rr)))  # type: ignore[arg-type]
                acc = sums[(d, f, v, rr)]
                acc[0] += r.saved
                acc[1] += r.detours
    candidates = [
        Candidate(d, f, v, rr, s, ceiling, det, episodes) for (d, f, v, rr), (s, det) in sums.items()
    ]
    choice = RuleChoice(candidates, min_count, brier, oof, recalibrated,
                        {d: fit_site_calibrator([(s, x, u) for _, s, x, u in oof[d]], min_count[d]) for d in deciders},
                        learn_costs(timelines, price), max_detours, len(folds), episodes)  # fmt: skip
    for d in deciders:
        for f in FAMILIES:
            ok = [
                c
                for c in candidates
                if c.decider == d and c.family == f and c.detours_per_episode <= max_detours
            ]
            best = min(ok, key=lambda c: (-c.share_of_ceiling, c.detours_per_episode, -c.value, -c.reread),
                       default=None)  # fmt: skip
            if best is not None:
                choice.best[(d, f)] = best
    return choice
