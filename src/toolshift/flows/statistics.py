"""Intervals for replays: 95% bootstraps over tasks, a task's episodes of every agent drawn together."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from toolshift.flows.calibration import Calibration, calibrate
from toolshift.flows.replay import ReplayResult, WeighedLookup
from toolshift.intervals import Interval, bootstrap_ratio, bootstrap_statistic, paired_ratio_difference


def _per_task(result: ReplayResult) -> dict[str, tuple[float, float, float]]:
    out: dict[str, tuple[float, float, float]] = {}
    for e in result.episodes:
        saved, turns, detours = out.get(e.task, (0.0, 0.0, 0.0))
        out[e.task] = (saved + len(e.saved_turns), turns + e.turns, detours + e.detours)
    return out


def saved_share(result: ReplayResult) -> Interval:
    """Saved turns as a share of all turns."""
    tasks = _per_task(result)
    order = sorted(tasks)
    return bootstrap_ratio([tasks[k][0] for k in order], [tasks[k][1] for k in order])


def saved_difference(a: ReplayResult, b: ReplayResult) -> Interval:
    """a's saved share minus b's, paired over the same tasks (e.g. reach minus next-step)."""
    ta, tb = _per_task(a), _per_task(b)
    order = sorted(set(ta) | set(tb))
    zero = (0.0, 0.0, 0.0)
    return paired_ratio_difference(
        [ta.get(k, zero)[0] for k in order], [tb.get(k, zero)[0] for k in order],
        [max(ta.get(k, zero)[1], tb.get(k, zero)[1]) for k in order],
    )  # fmt: skip


def share_of_ceiling(result: ReplayResult, ceiling_by_episode: dict[str, int]) -> Interval:
    """Saved turns over ceiling turns."""
    saved: dict[str, float] = {}
    ceiling: dict[str, float] = {}
    for e in result.episodes:
        saved[e.task] = saved.get(e.task, 0.0) + len(e.saved_turns)
        ceiling[e.task] = ceiling.get(e.task, 0.0) + ceiling_by_episode.get(e.episode, 0)
    order = sorted(saved)
    return bootstrap_ratio([saved[k] for k in order], [ceiling[k] for k in order])


@dataclass(frozen=True)
class CalibrationComparison:
    a: Calibration
    b: Calibration
    ece: Interval
    brier: Interval
    auc: Interval | None


def _calibration_of(rows: Sequence[WeighedLookup]) -> Calibration:
    return calibrate([r.score for r in rows], [r.used for r in rows])


def compare_calibration(a: Sequence[WeighedLookup], b: Sequence[WeighedLookup]) -> CalibrationComparison:
    """a minus b in ECE, Brier and AUC, with a paired bootstrap over tasks."""
    tasks = sorted({r.task for r in a} | {r.task for r in b})
    clusters = [([r for r in a if r.task == k], [r for r in b if r.task == k]) for k in tasks]

    def stat(metric: Callable[[Calibration], float | None]) -> Callable[[list[object]], float]:
        def f(drawn: list[object]) -> float:
            rows_a = [r for c in drawn for r in c[0]]  # type: ignore[index]
            rows_b = [r for c in drawn for r in c[1]]  # type: ignore[index]
            ma, mb = metric(_calibration_of(rows_a)), metric(_calibration_of(rows_b))
            return float("nan") if ma is None or mb is None else ma - mb

        return f

    ca, cb = _calibration_of(a), _calibration_of(b)
    auc = None
    if ca.auc is not None and cb.auc is not None:
        auc = bootstrap_statistic(clusters, stat(lambda c: c.auc), resamples=400)
    return CalibrationComparison(
        ca, cb,
        bootstrap_statistic(clusters, stat(lambda c: c.ece), resamples=400),
        bootstrap_statistic(clusters, stat(lambda c: c.brier), resamples=400),
        auc,
    )  # fmt: skip
