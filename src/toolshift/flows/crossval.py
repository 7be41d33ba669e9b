"""Choose a flow's walk ranks and each decider's θ by cross-validation over training tasks, never the test set.

Leave one task out: for each training task, learn on the other tasks' episodes and replay that task's
episodes; sum saved turns and detours over the folds. With many tasks (BFCL's hundreds), `folds` = k deals
the tasks, in sorted order, round-robin into k groups and leaves one group out at a time. Walks are tried
with each pooled prior strength (`Walk.prior`: how far a site's walk chance leans on how often the agent goes
on walking at that rank anywhere). The selection is fixed in advance: per decider, the (walk ranks, prior,
θ) with the largest share of the ceiling among those within the detour budget — met with a margin: the detours
an episode plus one standard error over the folds (`MARGIN`) — (ties: fewer detours, then
fewer ranks, then the weaker prior, then the higher θ); one (walk ranks, prior) serves both deciders (the
flow file is shared), the one whose two deciders' best shares average highest (ties: fewer ranks, then the
weaker prior).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolshift.errors import BadInputError
from toolshift.flows.ceiling import anatomy
from toolshift.flows.decide import DECIDERS, Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import with_walk_prior
from toolshift.flows.replay import replay
from toolshift.flows.timeline import Catalog, Timeline

WALK_RANKS = (0, 1, 2, 3, 4)
THETAS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7)
WALK_PRIORS = (0.0, 1.0, 2.0, 5.0)
"""0 is Laplace's smoothing (the format-3 walks as first learned)."""
MAX_DETOURS = 0.6
MARGIN = 1.0
"""A candidate meets the detour budget when its detours an episode plus this many standard errors over the
folds do (`SavingFigures.detours_bound`): the budget is met with a margin for the tasks not seen."""


def task_folds(tasks: Sequence[str], folds: int | None = None) -> list[list[str]]:
    """The held-out groups: one task each (None, leave one task out), or `folds` groups dealt round-robin."""
    ordered = sorted(set(tasks))
    if folds is None or folds >= len(ordered):
        return [[t] for t in ordered]
    if folds < 2:
        raise BadInputError(f"cross-validation needs at least 2 folds, not {folds}", field="folds")
    return [ordered[i::folds] for i in range(folds)]


class SavingFigures:
    """Share of the read-only ceiling saved and detours per episode, from the summed counts of a candidate."""

    saved: int
    ceiling: int
    detours: int
    episodes: int

    @property
    def share_of_ceiling(self) -> float:
        return self.saved / self.ceiling if self.ceiling else 0.0

    @property
    def detours_per_episode(self) -> float:
        return self.detours / self.episodes if self.episodes else 0.0

    def detours_bound(self, margin: float = MARGIN) -> float:
        """Detours an episode plus `margin` standard errors of it over the folds (the ratio estimator's
        standard error, the folds as clusters: √(G/(G−1) · Σ (d_g − r·e_g)²) / E); the mean alone without
        per-fold counts, or with `margin` 0."""
        folds: tuple[tuple[int, int], ...] = getattr(self, "fold_counts", ())
        r = self.detours_per_episode
        if margin == 0 or len(folds) < 2 or not self.episodes:
            return r
        g = len(folds)
        spread = sum((d - r * e) ** 2 for d, e in folds) * g / (g - 1)
        return r + margin * spread**0.5 / self.episodes


@dataclass(frozen=True)
class CrossvalRow(SavingFigures):
    """One candidate's figures summed over the folds."""

    decider: str
    walk_ranks: int
    theta: float
    saved: int
    ceiling: int
    detours: int
    episodes: int
    walk_prior: float = 0.0
    fold_counts: tuple[tuple[int, int], ...] = ()
    """Per fold: (detours, episodes), for the margin (`detours_bound`)."""
    fold_saves: tuple[tuple[int, int], ...] = ()
    """Per fold: (saved, ceiling), for the nested figures (`toolshift.flows.nested`)."""


@dataclass
class Selection:
    """What cross-validation chose: walk ranks and prior for the flow, θ per decider, and the rows behind it."""

    walk_ranks: int
    theta: dict[str, float]
    best: dict[str, CrossvalRow]
    within_budget: bool
    """Whether every decider had a candidate within the detour budget."""
    walk_prior: float = 0.0
    records: bool = False
    """Whether the flow binds a read's arguments together from one record (format 5; `learn_flow(records=)`)."""
    ints: bool = False
    """Whether the flow binds integer arguments to integer leaves too (format 5; `learn_flow(ints=)`)."""
    fallbacks: bool = False
    """Whether the flow's bindings keep fallback sources (format 5; `learn_flow(fallbacks=)`)."""
    asks: bool = False
    """Whether the flow proposes the reads a user message asks for by name (format 6; `learn_flow(asks=)`)."""
    older: bool = False
    """Whether the flow binds from the output before the most recent one too (format 6; `learn_flow(older=)`)."""
    named: bool = False
    """Whether the flow's walks count the listings whose values the user named apart (format 7;
    `learn_flow(named=)`)."""

    def options(self) -> dict[str, bool]:
        """The binding options as `learn_flow` / `crossval` / `choose_rule` keywords."""
        return {"records": self.records, "ints": self.ints, "fallbacks": self.fallbacks, "asks": self.asks,
                "older": self.older, "named": self.named}  # fmt: skip


@dataclass
class Crossval:
    rows: list[CrossvalRow]
    folds: int
    episodes: int
    max_detours: float = MAX_DETOURS
    walk_ranks: tuple[int, ...] = WALK_RANKS
    thetas: tuple[float, ...] = THETAS
    deciders: tuple[str, ...] = field(default=DECIDERS)
    walk_priors: tuple[float, ...] = (0.0,)
    records: bool = False
    ints: bool = False
    fallbacks: bool = False
    asks: bool = False
    margin: float = MARGIN
    older: bool = False
    named: bool = False

    def without(self, fold: int) -> Crossval:
        """The same table with fold `fold`'s counts left out of every row (`nested.without_fold`)."""
        from toolshift.flows.nested import without_fold

        kept = [without_fold(r, fold) for r in self.rows]
        return replace(self, rows=kept, folds=self.folds - 1, episodes=kept[0].episodes if kept else 0)

    def flows(self) -> list[tuple[int, float]]:
        """The (walk ranks, prior) pairs tried: ranks 0 (no walks) with no prior, every other with each."""
        return [(k, p) for k in self.walk_ranks for p in (self.walk_priors if k else (0.0,))]

    def row(self, decider: str, walk_ranks: int, theta: float, walk_prior: float = 0.0) -> CrossvalRow:
        for r in self.rows:
            if (r.decider, r.walk_ranks, r.walk_prior, r.theta) == (decider, walk_ranks, walk_prior, theta):
                return r
        raise KeyError((decider, walk_ranks, walk_prior, theta))

    def best(self, decider: str, walk_ranks: int, walk_prior: float = 0.0,
             margin: float | None = None) -> CrossvalRow | None:  # fmt: skip
        """The decider's best θ at these walk ranks and prior within the detour budget, with `margin` standard
        errors (the crossval's own by default; None if none is)."""
        m = self.margin if margin is None else margin
        ok = [r for r in self.rows if r.decider == decider and r.walk_ranks == walk_ranks
              and r.walk_prior == walk_prior and r.detours_bound(m) <= self.max_detours]  # fmt: skip
        return min(ok, key=lambda r: (-r.share_of_ceiling, r.detours_per_episode, -r.theta), default=None)

    def select(self, margin: float | None = None) -> Selection:
        """The choice (the module's rule); `margin` overrides the crossval's own (0: the budget on the mean)."""

        def mean_best(kp: tuple[int, float]) -> float:
            bests = [self.best(d, *kp, margin=margin) for d in self.deciders]
            return sum(b.share_of_ceiling if b else 0.0 for b in bests) / len(bests)

        ranks, prior = min(self.flows(), key=lambda kp: (-mean_best(kp), kp[0], kp[1]))
        best = {d: b for d in self.deciders if (b := self.best(d, ranks, prior, margin=margin)) is not None}
        fallback = min(self.thetas, key=lambda th: abs(th - 0.3))
        return Selection(
            walk_ranks=ranks,
            theta={d: best[d].theta if d in best else fallback for d in self.deciders},
            best=best,
            within_budget=len(best) == len(self.deciders),
            walk_prior=prior,
            records=self.records,
            ints=self.ints,
            fallbacks=self.fallbacks,
            asks=self.asks,
            older=self.older,
            named=self.named,
        )


def crossval(
    timelines: Sequence[Timeline],
    catalog: Catalog,
    *,
    walk_ranks: Sequence[int] = WALK_RANKS,
    thetas: Sequence[float] = THETAS,
    deciders: Sequence[str] = DECIDERS,
    max_detours: float = MAX_DETOURS,
    learn_from_all: bool = False,
    folds: int | None = None,
    walk_priors: Sequence[float] = WALK_PRIORS,
    progress: Callable[[], None] | None = None,
    records: bool = False,
    ints: bool = False,
    fallbacks: bool = False,
    asks: bool = False,
    margin: float = MARGIN,
    older: bool = False,
    named: bool = False,
) -> Crossval:
    """Leave-one-task-out (or `folds`-fold by task) over `timelines`, the training tasks: every candidate's
    summed figures. `records`: the flows bind record fields together; `ints`: integer arguments too; `fallbacks`: bindings keep fallback sources (format 5); `asks`: the reads a user
    message asks for by name are proposed after it; `older`: bindings may take the output before the most recent
    one (format 6); `named`: walks count the listings the user named values of apart (format 7)."""
    tasks = sorted({t.task_id for t in timelines})
    if len(tasks) < 2:
        raise BadInputError(f"cross-validation needs at least 2 training tasks, got {len(tasks)}")
    _, per_episode = anatomy(timelines)
    ceiling = episodes = 0
    pairs = [(k, p) for k in walk_ranks for p in (walk_priors if k else (0.0,))]
    sums: dict[tuple[str, int, float, float], list[int]] = {
        (d, k, p, th): [0, 0] for d in deciders for k, p in pairs for th in thetas
    }
    per_fold: dict[tuple[str, int, float, float], list[tuple[int, int]]] = {key: [] for key in sums}
    per_fold_saves: dict[tuple[str, int, float, float], list[tuple[int, int]]] = {key: [] for key in sums}
    done = 0
    for group in task_folds(tasks, folds):
        out = set(group)
        rest = [t for t in timelines if t.task_id not in out]
        held = [t for t in timelines if t.task_id in out]
        if not any(learn_from_all or t.success for t in rest):
            continue
        done += 1
        fold_ceiling = sum(per_episode[t.episode_id].ceiling for t in held)
        ceiling += fold_ceiling
        episodes += len(held)
        for k in walk_ranks:
            learned = learn_flow(rest, catalog, learn_from_all=learn_from_all, walk_ranks=k, records=records,
                                 ints=ints, fallbacks=fallbacks, asks=asks, older=older, named=named)  # fmt: skip
            for p in walk_priors if k else (0.0,):
                flow = with_walk_prior(learned, p) if p else learned
                for d in deciders:
                    for th in thetas:
                        r = replay(held, Decider(flow, d, th))  # type: ignore[arg-type]
                        acc = sums[(d, k, p, th)]
                        acc[0] += r.saved
                        acc[1] += r.detours
                        per_fold[(d, k, p, th)].append((r.detours, len(held)))
                        per_fold_saves[(d, k, p, th)].append((r.saved, fold_ceiling))
        if progress is not None:
            progress()
    rows = [CrossvalRow(d, k, th, s, ceiling, det, episodes, p, tuple(per_fold[(d, k, p, th)]),
                        tuple(per_fold_saves[(d, k, p, th)]))
            for (d, k, p, th), (s, det) in sums.items()]  # fmt: skip
    return Crossval(rows, done, episodes, max_detours, tuple(walk_ranks), tuple(thetas), tuple(deciders),
                    tuple(walk_priors), records, ints, fallbacks, asks, margin, older, named)  # fmt: skip


def mean_best_share(cv: Crossval, sel: Selection) -> float:
    """The mean over deciders of the chosen candidate's share of the ceiling (0 for a decider with none)."""
    return sum(sel.best[d].share_of_ceiling if d in sel.best else 0.0 for d in cv.deciders) / len(cv.deciders)


BINDINGS: tuple[tuple[bool, bool, bool], ...] = tuple(
    (r, i, f)
    for n in range(4)
    for r in (False, True)
    for i in (False, True)
    for f in (False, True)
    if r + i + f == n
)
"""The binding options `choose_flow` tries, fewest first: (record bindings, integer bindings, fallback sources),
each of flow format 5."""


def choose_flow(timelines: Sequence[Timeline], catalog: Catalog, *, max_detours: float = MAX_DETOURS,
                folds: int | None = None, verdicts: bool = True,
                bindings: Sequence[tuple[bool, bool, bool]] = BINDINGS,
                tried: dict[tuple[bool, bool, bool, bool], Selection] | None = None,
                format6: dict[str, float] | None = None,
                named: dict[str, float] | None = None,
                nested: dict[str, Any] | None = None) -> tuple[Crossval, Selection, bool]:  # fmt: skip
    """Cross-validate flows learned from the successful training runs and from every training run (only the
    latter without `verdicts`), each with every binding option of `bindings` ((records, ints, fallbacks): record
    bindings, integer bindings and fallback sources, format 5); keep the one whose selection's mean best share
    is higher (ties: the successful runs, then the earlier in `bindings`, fewest options first). Returns its
    cross-validation, its selection (`Selection.records` / `.ints` / `.fallbacks` say which options it takes)
    and whether it learns from every run; each selection tried is put in `tried` (by (every run, records, ints,
    fallbacks)) when given. With `format6` (a dict, filled with the mean shares), the kept flow is tried again
    with format 6's options (`try_format6`); with `named` (a dict, filled likewise), then with named walks
    (`try_named`); with `nested` (a dict), the kept flow's margin is then the one nested cross-validation over
    its folds picks (`nested.select_nested`), its `NestedChoice` put at `nested["choice"]`."""
    ranked = []
    for learn_from_all in (False, True) if verdicts else (True,):
        if not learn_from_all and not any(t.success for t in timelines):
            continue
        for order, (records, ints, fallbacks) in enumerate(bindings):
            cv = crossval(timelines, catalog, learn_from_all=learn_from_all, max_detours=max_detours, folds=folds,
                          records=records, ints=ints, fallbacks=fallbacks)  # fmt: skip
            sel = cv.select()
            ranked.append((-mean_best_share(cv, sel), learn_from_all, order, cv, sel))
            if tried is not None:
                tried[(learn_from_all, records, ints, fallbacks)] = sel
    if not ranked:
        raise BadInputError("no training run to learn a flow from", field="timelines")
    _, learn_from_all, _, cv, sel = min(ranked, key=lambda x: (x[0], x[1], x[2]))
    if format6 is not None:
        cv, sel = try_format6(timelines, catalog, cv, sel, learn_from_all, max_detours=max_detours, folds=folds,
                              shares=format6)  # fmt: skip
    if named is not None:
        cv, sel = try_named(timelines, catalog, cv, sel, learn_from_all, max_detours=max_detours, folds=folds,
                            shares=named)  # fmt: skip
    if nested is not None:
        from toolshift.flows.nested import select_nested

        cv, sel, nested["choice"] = select_nested(cv)
    return cv, sel, learn_from_all


FORMAT6: tuple[tuple[bool, bool], ...] = ((True, False), (False, True), (True, True))
"""Format 6's options `try_format6` tries on the kept flow, fewest first: (asks, older)."""


def format6_name(asks: bool, older: bool) -> str:
    return " + ".join(n for n, on in (("asks", asks), ("older outputs", older)) if on) or "none"


def try_format6(timelines: Sequence[Timeline], catalog: Catalog, cv: Crossval, sel: Selection,
                learn_from_all: bool, *, max_detours: float = MAX_DETOURS, folds: int | None = None,
                shares: dict[str, float] | None = None) -> tuple[Crossval, Selection]:  # fmt: skip
    """Cross-validate the chosen flow again with each combination of format 6's options (asks: the reads a
    user message asks for by name, `toolshift.flows.asks`; older: bindings from the output before the most
    recent one) and keep the one whose two deciders' chosen shares average highest, only where strictly
    higher than without (ties: fewer options). `shares` receives every mean by `format6_name`."""
    best = (mean_best_share(cv, sel), 0, cv, sel)
    if shares is not None:
        shares[format6_name(False, False)] = best[0]
    for order, (asks, older) in enumerate(FORMAT6, start=1):
        other = crossval(timelines, catalog, learn_from_all=learn_from_all, max_detours=max_detours, folds=folds,
                         **(sel.options() | {"asks": asks, "older": older}))  # fmt: skip
        picked = other.select()
        share = mean_best_share(other, picked)
        if shares is not None:
            shares[format6_name(asks, older)] = share
        if share > best[0]:
            best = (share, order, other, picked)
    return best[2], best[3]


def try_named(timelines: Sequence[Timeline], catalog: Catalog, cv: Crossval, sel: Selection, learn_from_all: bool,
              *, max_detours: float = MAX_DETOURS, folds: int | None = None,
              shares: dict[str, float] | None = None) -> tuple[Crossval, Selection]:  # fmt: skip
    """Cross-validate the chosen flow again with named walks (format 7, `toolshift.flows.named`) and keep them
    only where the two deciders' chosen shares average strictly higher. `shares` receives both means
    ("without", "named")."""
    base = mean_best_share(cv, sel)
    other = crossval(timelines, catalog, learn_from_all=learn_from_all, max_detours=max_detours, folds=folds,
                     **(sel.options() | {"named": True}))  # fmt: skip
    picked = other.select()
    share = mean_best_share(other, picked)
    if shares is not None:
        shares.update({"without": base, "named": share})
    return (other, picked) if share > base else (cv, sel)
