"""Nested cross-validation over the folds' own counts: the choice's optimism measured, its margin chosen by it.

A rule chosen as the best of many cells on the folds' summed figures looks better than it is (D229): the
folds that chose it also score it. Here every fold is scored by the choice made with that fold left out of
the choice (its counts removed from every candidate, the same rule applied to the rest), and the scores are
summed: the nested figures of the selection procedure. Each fold's counts are its own out-of-fold replay,
so no fold scores a choice it took part in; the flows that scored the other folds did learn on its tasks
(a full nested loop would learn again without them: D229's 28-task one), which costs nothing here and leaves
the selection's optimism, the part measured, out of the score.

The margin (`crossval.MARGIN`: how many standard errors over the folds a candidate's detours must keep under
the budget) is then chosen among `MARGINS` by those nested figures, so the budget is met by the procedure's
honest figure rather than by the chosen cell's optimistic one: the margin whose nested detours an episode,
plus one standard error of them over the folds, meet the budget for every decider, the one whose nested
shares average highest (ties: the larger margin, the stricter where the honest figures cannot tell
them apart); where none does, the one whose worst decider's bound is
lowest (ties: the larger margin). Only training folds are read; the held-out tasks never are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from toolshift.errors import BadInputError
from toolshift.flows.crossval import Crossval, CrossvalRow, SavingFigures, Selection

MARGINS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
"""The margins tried, in standard errors over the folds (1 is D226's)."""
NESTED_SE = 1.0
"""The nested figure meets the budget with this many of its own standard errors over the folds (as D226)."""


class FoldRow(Protocol):
    saved: int
    ceiling: int
    detours: int
    episodes: int
    fold_counts: tuple[tuple[int, int], ...]
    fold_saves: tuple[tuple[int, int], ...]


R = TypeVar("R", bound=FoldRow)


def without_fold(row: R, fold: int) -> R:
    """`row` (a frozen dataclass with per-fold counts) with fold `fold`'s counts left out."""
    if not 0 <= fold < len(row.fold_counts) or len(row.fold_saves) != len(row.fold_counts):
        raise BadInputError(
            f"no per-fold counts for fold {fold} in a cross-validation row", field="fold_counts"
        )
    d, e = row.fold_counts[fold]
    s, c = row.fold_saves[fold]
    return replace(
        row,  # type: ignore[type-var]
        saved=row.saved - s,
        ceiling=row.ceiling - c,
        detours=row.detours - d,
        episodes=row.episodes - e,
        fold_counts=row.fold_counts[:fold] + row.fold_counts[fold + 1 :],
        fold_saves=row.fold_saves[:fold] + row.fold_saves[fold + 1 :],
    )


@dataclass(frozen=True)
class NestedFigures(SavingFigures):
    """A selection procedure's figures, each fold scored by the choice made without it."""

    saved: int
    ceiling: int
    detours: int
    episodes: int
    fold_counts: tuple[tuple[int, int], ...] = ()
    choices: tuple[str, ...] = ()
    """Per fold: what the choice made without it was (a label)."""


def nested_figures(
    folds: int, choose: Callable[[int], Mapping[str, tuple[FoldRow, str]]], deciders: Sequence[str]
) -> dict[str, NestedFigures]:
    """Per decider: the sum over folds g of fold g's counts in the row `choose(g)` picks (the choice made with
    fold g left out), with its label."""
    acc: dict[str, list[int]] = {d: [0, 0, 0, 0] for d in deciders}
    per: dict[str, list[tuple[int, int]]] = {d: [] for d in deciders}
    labels: dict[str, list[str]] = {d: [] for d in deciders}
    for g in range(folds):
        picked = choose(g)
        for d in deciders:
            row, label = picked[d]
            det, eps = row.fold_counts[g]
            saved, ceiling = row.fold_saves[g]
            a = acc[d]
            a[0] += saved
            a[1] += ceiling
            a[2] += det
            a[3] += eps
            per[d].append((det, eps))
            labels[d].append(label)
    return {d: NestedFigures(*acc[d], tuple(per[d]), tuple(labels[d])) for d in deciders}


def pick_margin(by_margin: Mapping[float, Mapping[str, NestedFigures]], budget: float) -> float:
    """The margin the module's rule picks from the nested figures of each."""
    if not by_margin:
        raise BadInputError("no margin to choose from", field="margins")

    def bound(m: float) -> float:
        return max(f.detours_bound(NESTED_SE) for f in by_margin[m].values())

    def share(m: float) -> float:
        figs = by_margin[m].values()
        return sum(f.share_of_ceiling for f in figs) / len(figs)

    ok = [m for m in by_margin if bound(m) <= budget]
    if ok:
        return min(ok, key=lambda m: (-share(m), -m))
    return min(by_margin, key=lambda m: (bound(m), -m))


@dataclass
class NestedChoice:
    """The margins tried, their nested figures, and the margin picked."""

    margin: float
    by_margin: dict[float, dict[str, NestedFigures]]
    budget: float

    def summary(self) -> dict[str, Any]:
        """For a results file: the picked margin and, per margin and decider, share / detours / bound."""
        return {"margin": self.margin, "met": self.met(), "by_margin": {
            f"{m:g}": {d: {"share_of_ceiling": f.share_of_ceiling, "detours_per_episode": f.detours_per_episode,
                           "bound": f.detours_bound(NESTED_SE)} for d, f in figs.items()}
            for m, figs in self.by_margin.items()}}  # fmt: skip

    def met(self) -> bool:
        """Whether the picked margin's nested figures meet the budget with their own standard error."""
        return all(f.detours_bound(NESTED_SE) <= self.budget for f in self.by_margin[self.margin].values())


def _selection_rows(cv: Crossval, sel: Selection) -> dict[str, tuple[CrossvalRow, str]]:
    return {
        d: (cv.row(d, sel.walk_ranks, sel.theta[d], sel.walk_prior),
            f"walk ranks {sel.walk_ranks}, prior {sel.walk_prior:g}, θ {sel.theta[d]:g}")
        for d in cv.deciders
    }  # fmt: skip


def nested_crossval(cv: Crossval, margins: Sequence[float] = MARGINS) -> NestedChoice:
    """The nested figures of `Crossval.select` at each margin (the walk ranks, prior and θ chosen with each
    fold left out), and the margin `pick_margin` takes."""
    if cv.folds < 3:
        raise BadInputError(f"nested cross-validation needs at least 3 folds, got {cv.folds}", field="folds")
    reduced = [cv.without(g) for g in range(cv.folds)]
    by_margin: dict[float, dict[str, NestedFigures]] = {}
    for m in margins:

        def choose(g: int, m: float = m) -> dict[str, tuple[CrossvalRow, str]]:
            inner = reduced[g]
            return _selection_rows(cv, inner.select(margin=m))

        by_margin[m] = nested_figures(cv.folds, choose, cv.deciders)
    return NestedChoice(pick_margin(by_margin, cv.max_detours), by_margin, cv.max_detours)


def select_nested(
    cv: Crossval, margins: Sequence[float] = MARGINS
) -> tuple[Crossval, Selection, NestedChoice]:
    """`cv` with the margin nested cross-validation picks, its selection, and the nested figures."""
    nested = nested_crossval(cv, margins)
    chosen = replace(cv, margin=nested.margin)
    return chosen, chosen.select(), nested
