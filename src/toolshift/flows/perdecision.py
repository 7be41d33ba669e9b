"""Choose a decision rule on training tasks only: recalibration per site and a threshold per decision.

Leave one task out over the training tasks, as `toolshift.flows.crossval` does: learn the flow and the costs
on the other tasks, replay the task left out with every lookup weighed (its scores and whether the agent
used them: the out-of-fold decision log). Per site the recalibration is fitted on the other tasks' log rows
(the fewest rows a site needs for its own map chosen by cross-validation over the same rows, `choose_min_count`),
so no lookup is scored on its own outcome. Every candidate rule — one θ or a threshold per decision (λ), on
the model's scores or recalibrated ones — is then replayed on each task left out and summed. The selection
is fixed in advance: per decider and rule family, the largest share of the ceiling within the detour budget,
met with a margin (detours an episode plus one standard error over the folds, `crossval.MARGIN`) (ties: fewer detours, then the larger θ or λ, then re-reads allowed). Each candidate is tried both ways on
re-reads: whether a read the agent already has in context (made, or delivered by a lookup, earlier in the
episode) may be proposed again after a write. Two more families condition the recalibration on the request's
intent words as well (toolshift.flows.intent: per site × intent where the other tasks' log holds enough of
it). The held-out test tasks are never read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from toolshift.errors import BadInputError
from toolshift.flows.calibration import SiteCalibrator, choose_min_count, fit_site_calibrator, site_key
from toolshift.flows.ceiling import anatomy
from toolshift.flows.crossval import MARGIN, SavingFigures, task_folds
from toolshift.flows.decide import DECIDERS, Decider
from toolshift.flows.intent import (
    IntentCalibrator,
    choose_intent_min_count,
    fit_intent_calibrator,
    intent_vocabulary,
)
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import Flow, Weighting
from toolshift.flows.pricing import Price
from toolshift.flows.replay import WeighedLookup, replay
from toolshift.flows.rule import CostModel, Rule, learn_costs
from toolshift.flows.timeline import Catalog, Timeline

THETAS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7)
LAMS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)
MAX_DETOURS = 0.5
FoldBy = Literal["task", "agent"]
"""What cross-validation leaves out, a fold at a time: tasks, or agents (a rule for agents it never saw)."""
FAMILIES = ("θ", "θ, recalibrated", "per decision", "per decision, recalibrated", "θ, recalibrated by intent",
            "per decision, recalibrated by intent")  # fmt: skip
LOG_THETA = 0.3
"""The θ of the replays whose weighed lookups make the out-of-fold log (`--explore 0`, as the seed's)."""


def log_rows(log: Sequence[WeighedLookup], by: FoldBy = "task") -> list[tuple[str, str, float, bool]]:
    """(fold key, site, model score, used) per weighed lookup; the fold key is the lookup's task, or its agent
    where the folds are agents (`by`)."""
    return [(x.agent if by == "agent" else x.task, site_key(x.tool, x.depth, x.position), x.raw, x.used)
            for x in log]  # fmt: skip


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
    fold_counts: tuple[tuple[int, int], ...] = ()
    """Per fold: (detours, episodes), for the margin (`SavingFigures.detours_bound`)."""
    fold_saves: tuple[tuple[int, int], ...] = ()
    """Per fold: (saved, ceiling), for the nested figures (`toolshift.flows.nested`)."""


@dataclass
class Fold:
    tasks: frozenset[str]
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
    intent_calibrator: dict[str, IntentCalibrator] = field(default_factory=dict)
    vocabulary: tuple[str, ...] = ()
    """The catalog's intent words (toolshift.flows.intent)."""
    oof_intent: dict[str, list[str]] = field(default_factory=dict)
    """Per decider, row by row of `oof`: the request's intent at the decision."""
    intent_min_count: dict[str, int] = field(default_factory=dict)
    """Per decider: the fewest rows a site × intent needs for its own map (cross-validated by Brier score)."""
    margin: dict[str, float] = field(default_factory=dict)
    """Per decider: the margin its choice was made with (standard errors over the folds; `crossval.MARGIN`)."""
    nested: dict[str, Any] = field(default_factory=dict)
    """Per decider, with `choose_rule(nested=True)`: the `nested.NestedChoice` that picked its margin."""

    def choose(self, decider: str, margin: float) -> dict[str, Candidate]:
        """Per family: the largest share of the ceiling within the budget, met with `margin` standard errors
        (ties: fewer detours, then the larger θ or λ, then re-reads allowed)."""
        best: dict[str, Candidate] = {}
        for f in FAMILIES:
            ok = [c for c in self.candidates if c.decider == decider and c.family == f
                  and c.detours_bound(margin) <= self.max_detours]  # fmt: skip
            pick = min(ok, key=lambda c: (-c.share_of_ceiling, c.detours_per_episode, -c.value, -c.reread),
                       default=None)  # fmt: skip
            if pick is not None:
                best[f] = pick
        return best

    def without(self, fold: int) -> RuleChoice:
        """The candidates with fold `fold`'s counts left out (the calibrators and logs kept as they are)."""
        from toolshift.flows.nested import without_fold

        kept = [without_fold(c, fold) for c in self.candidates]
        return replace(self, candidates=kept, best={}, folds=self.folds - 1,
                       episodes=kept[0].episodes if kept else 0)  # fmt: skip

    def overall(self, decider: str) -> str | None:
        """The family whose chosen candidate saves the largest share of the training ceiling within the budget
        (ties: fewer detours, then the earlier, simpler family); None when no family has one."""
        return overall_family({f: self.best[(decider, f)] for f in FAMILIES if (decider, f) in self.best})

    def fallback(self, decider: str) -> Candidate:
        """The candidate a decider runs with no family within the budget: one θ of `LOG_THETA`, re-reads on (the
        θ tried nearest it when the grid lacks it)."""
        plain = [c for c in self.candidates if (c.decider, c.family, c.reread) == (decider, "θ", True)]
        if not plain:
            raise BadInputError(f"no single-θ candidate for {decider} to fall back on", field="candidates")
        return min(plain, key=lambda c: (abs(c.value - LOG_THETA), c.value))

    def rule(self, decider: str, family: str) -> Rule:
        """The chosen rule of a family, fitted on every training task."""
        c = self.best.get((decider, family))
        value = c.value if c else (1.0 if family.startswith("per decision") else LOG_THETA)
        return _rule(family, value, self.calibrator[decider], self.intent_calibrator.get(decider), self.costs,
                     c.reread if c else True, self.vocabulary)  # fmt: skip


def overall_family(best: dict[str, Candidate]) -> str | None:
    """Of the families' chosen candidates, the one saving the largest share (ties: fewer detours, then the
    earlier, simpler family); None for none."""
    if not best:
        return None
    return min(
        best, key=lambda f: (-best[f].share_of_ceiling, best[f].detours_per_episode, FAMILIES.index(f))
    )


def nested_rule(choice: RuleChoice, decider: str, margins: Sequence[float] | None = None) -> Any:
    """The nested figures (`toolshift.flows.nested`) of the overall pick (`RuleChoice.overall`) at each margin,
    each fold scored by the pick made with it left out, and the margin they pick."""
    from toolshift.flows.nested import MARGINS, NestedChoice, nested_figures, pick_margin

    if choice.folds < 3:
        raise BadInputError(
            f"nested cross-validation needs at least 3 folds, got {choice.folds}", field="folds"
        )
    reduced = [choice.without(g) for g in range(choice.folds)]
    by_margin = {}
    for m in MARGINS if margins is None else margins:

        def pick(g: int, m: float = m) -> dict[str, tuple[Candidate, str]]:
            best = reduced[g].choose(decider, m)
            family = overall_family(best)
            c = best[family] if family else reduced[g].fallback(decider)
            full = next(x for x in choice.candidates
                        if (x.decider, x.family, x.value, x.reread) == (c.decider, c.family, c.value, c.reread))  # fmt: skip
            return {decider: (full, f"{full.family}, {full.value:g}{'' if full.reread else ', no re-reads'}")}

        by_margin[m] = nested_figures(choice.folds, pick, (decider,))
    return NestedChoice(pick_margin(by_margin, choice.max_detours), by_margin, choice.max_detours)


def _rule(family: str, value: float, cal: SiteCalibrator, by_intent: IntentCalibrator | None, costs: CostModel,
          reread: bool, vocabulary: tuple[str, ...] = ()) -> Rule:  # fmt: skip
    recal: SiteCalibrator | IntentCalibrator | None = None
    intent: tuple[str, ...] = ()
    if family.endswith("by intent") and by_intent is not None:
        recal, intent = by_intent, vocabulary
    elif family.endswith("recalibrated"):
        recal = cal
    if family.startswith("per decision"):
        return Rule("priced", lam=value, calibrator=recal, costs=costs, reread=reread, intent=intent)
    return Rule("theta", theta=value, calibrator=recal, reread=reread, intent=intent)


def choose_rule(timelines: Sequence[Timeline], catalog: Catalog, *, walk_ranks: int, price: Price,
                deciders: Sequence[str] = DECIDERS, max_detours: float = MAX_DETOURS,
                learn_from_all: bool = False, thetas: Sequence[float] = THETAS, lams: Sequence[float] = LAMS,
                folds: int | None = None, walk_prior: float = 0.0, records: bool = False,
                ints: bool = False, fallbacks: bool = False, asks: bool = False, older: bool = False,
                margin: float = MARGIN, named: bool = False,
                progress: Callable[[], None] | None = None, nested: bool = False,
                by: FoldBy = "task", weighting: Weighting = "episodes") -> RuleChoice:  # fmt: skip
    """Leave-one-task-out over `timelines` (the training tasks only): the out-of-fold log, the per-site
    recalibration, every candidate rule's summed figures, and the choice. With `nested`, each decider's margin
    is not `margin` but the one nested cross-validation over the folds' counts picks (`nested_rule`). With
    `by="agent"` the folds are agents instead of tasks (leave one agent out, and the calibrations' own
    cross-validation folds by agent too): a rule is then chosen for agents it never saw. `weighting`: the flows'
    (`toolshift.flows.weights`)."""
    key = (lambda t: t.agent) if by == "agent" else (lambda t: t.task_id)
    tasks = sorted({key(t) for t in timelines})
    if len(tasks) < 3:
        raise BadInputError(f"choosing a rule needs at least 3 training {by}s, got {len(tasks)}")
    _, per_episode = anatomy(timelines)
    groups: list[Fold] = []
    vocabulary = intent_vocabulary(catalog)
    oof: dict[str, list[tuple[str, str, float, bool]]] = {d: [] for d in deciders}
    oof_intent: dict[str, list[str]] = {d: [] for d in deciders}
    for group in task_folds(tasks, folds):
        out = frozenset(group)
        rest = [t for t in timelines if key(t) not in out]
        held = [t for t in timelines if key(t) in out]
        if not any(learn_from_all or t.success for t in rest):
            continue
        flow = learn_flow(
            rest,
            catalog,
            learn_from_all=learn_from_all,
            walk_ranks=walk_ranks,
            walk_prior=walk_prior,
            records=records,
            ints=ints,
            fallbacks=fallbacks,
            asks=asks,
            older=older,
            named=named,
            weighting=weighting,
        )
        groups.append(Fold(out, held, flow, learn_costs(rest, price)))
        for d in deciders:
            logged = replay(held, Decider(flow, d, LOG_THETA, intents=vocabulary), weigh_all=True).log  # type: ignore[arg-type]
            oof[d] += log_rows(logged, by)
            oof_intent[d] += [x.intent for x in logged]
        if progress is not None:
            progress()
    min_count: dict[str, int] = {}
    brier: dict[str, dict[int, float]] = {}
    per_fold_cal: dict[tuple[str, int], SiteCalibrator] = {}
    per_fold_intent: dict[tuple[str, int], IntentCalibrator] = {}
    recalibrated: dict[str, list[float]] = {}
    intent_min: dict[str, int] = {}
    for d in deciders:
        min_count[d], brier[d] = choose_min_count(oof[d])
        intent_min[d], _ = choose_intent_min_count(
            [(t, s, k, x, u) for (t, s, x, u), k in zip(oof[d], oof_intent[d], strict=True)], min_count[d]
        )
        fold_of = {t: i for i, fold in enumerate(groups) for t in fold.tasks}
        for i, fold in enumerate(groups):
            fit = [(s, x, u) for t, s, x, u in oof[d] if t not in fold.tasks]
            per_fold_cal[(d, i)] = fit_site_calibrator(fit, min_count[d])
            per_fold_intent[(d, i)] = fit_intent_calibrator(
                [
                    (s, k, x, u)
                    for (t, s, x, u), k in zip(oof[d], oof_intent[d], strict=True)
                    if t not in fold.tasks
                ],
                min_count[d],
                intent_min_count=intent_min[d],
            )
        recalibrated[d] = [
            per_fold_cal[(d, fold_of[t])](s, x) if t in fold_of else x for t, s, x, _ in oof[d]
        ]
    grid = [(f, v, rr) for f in FAMILIES for v in (lams if f.startswith("per decision") else thetas)
            for rr in (True, False)]  # fmt: skip
    sums = {(d, f, v, rr): [0, 0] for d in deciders for f, v, rr in grid}
    per_fold: dict[tuple[str, str, float, bool], list[tuple[int, int]]] = {key: [] for key in sums}
    per_fold_saves: dict[tuple[str, str, float, bool], list[tuple[int, int]]] = {key: [] for key in sums}
    ceiling = episodes = 0
    for i, fold in enumerate(groups):
        fold_ceiling = sum(per_episode[t.episode_id].ceiling for t in fold.held)
        ceiling += fold_ceiling
        episodes += len(fold.held)
        for d in deciders:
            cal, by_intent = per_fold_cal[(d, i)], per_fold_intent[(d, i)]
            for f, v, rr in grid:
                rule = _rule(f, v, cal, by_intent, fold.costs, rr, vocabulary)
                r = replay(fold.held, Decider(fold.flow, d, rule=rule))  # type: ignore[arg-type]
                acc = sums[(d, f, v, rr)]
                acc[0] += r.saved
                acc[1] += r.detours
                per_fold[(d, f, v, rr)].append((r.detours, len(fold.held)))
                per_fold_saves[(d, f, v, rr)].append((r.saved, fold_ceiling))
    candidates = [
        Candidate(
            d,
            f,
            v,
            rr,
            s,
            ceiling,
            det,
            episodes,
            tuple(per_fold[(d, f, v, rr)]),
            tuple(per_fold_saves[(d, f, v, rr)]),
        )
        for (d, f, v, rr), (s, det) in sums.items()
    ]
    choice = RuleChoice(candidates, min_count, brier, oof, recalibrated,
                        {d: fit_site_calibrator([(s, x, u) for _, s, x, u in oof[d]], min_count[d]) for d in deciders},
                        learn_costs(timelines, price), max_detours, len(groups), episodes,
                        intent_calibrator={d: fit_intent_calibrator([(s, k, x, u) for (_, s, x, u), k in zip(oof[d], oof_intent[d], strict=True)],
                                                                    min_count[d], intent_min_count=intent_min[d])
                                           for d in deciders},
                        vocabulary=vocabulary, oof_intent=oof_intent, intent_min_count=intent_min)  # fmt: skip
    for d in deciders:
        choice.margin[d] = margin
        if nested:
            choice.nested[d] = nested_rule(choice, d)
            choice.margin[d] = choice.nested[d].margin
        for f, best in choice.choose(d, choice.margin[d]).items():
            choice.best[(d, f)] = best
    return choice
