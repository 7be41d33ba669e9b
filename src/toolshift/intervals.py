"""Percentile bootstrap intervals over tasks: the uncertainty every reported rate carries."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np


@dataclass(frozen=True)
class Interval:
    """A mean with its bootstrap interval; `n` is how many units (tasks) it averages."""

    mean: float
    low: float
    high: float
    n: int

    def percent(self, digits: int = 1) -> str:
        """`42.3 [38.1, 46.0]`, or `–` when nothing was measured."""
        if self.n == 0:
            return "–"
        return f"{100 * self.mean:.{digits}f} [{100 * self.low:.{digits}f}, {100 * self.high:.{digits}f}]"

    def number(self, digits: int = 2) -> str:
        """`0.50 [0.00, 1.20]` for a mean that is a count, or `–` when nothing was measured."""
        if self.n == 0:
            return "–"
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"

    def as_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}

    def known(self, missing: int, why: str, digits: int = 1) -> str:
        """`percent()`, or over nothing `— (43 strict unknown)`: a figure nothing could be counted for is never a
        number, and says how many episodes could not be counted (D321)."""
        if self.n == 0:
            return "—" + (f" ({missing} {why})" if missing else "")
        return self.percent(digits)

    def as_json(self) -> dict[str, float | int | None]:
        """`as_dict()`, with null (not NaN, which is not JSON) for a mean over nothing."""
        if self.n == 0:
            return {"mean": None, "low": None, "high": None, "n": 0}
        return self.as_dict()


def measured(cell: object) -> TypeGuard[dict[str, Any]]:
    """Whether `cell`, read from a results file, is an `Interval.as_dict()` over at least one unit."""
    return isinstance(cell, dict) and bool(cell.get("n"))


def signed_points(cell: object) -> str:
    """An `Interval.as_dict()` of a difference of rates as signed percentage points, `+1.2 [-3.0, +5.2]`, or `–`
    when nothing was measured."""
    if not measured(cell):
        return "–"
    return f"{100 * cell['mean']:+.1f} [{100 * cell['low']:+.1f}, {100 * cell['high']:+.1f}]"


def bootstrap_mean(
    values: Sequence[float],
    *,
    groups: Sequence[str] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Mean of `values` with a percentile bootstrap interval, resampling units with replacement.

    With `groups` (one label per value, e.g. the task of each task × version instance) whole groups
    are resampled (a cluster bootstrap) and `n` counts groups. Deterministic for a given seed; an
    empty sample gives NaNs with n = 0.
    """
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    mean = float(arr.mean())
    labels = list(groups) if groups is not None else list(range(arr.size))
    if len(labels) != arr.size:
        raise ValueError("groups must give one label per value")
    order = {g: k for k, g in enumerate(dict.fromkeys(labels))}
    codes = np.fromiter((order[g] for g in labels), dtype=int, count=arr.size)
    n = len(order)
    sums = np.bincount(codes, weights=arr, minlength=n)
    counts = np.bincount(codes, minlength=n).astype(float)
    if n == 1 or np.all(arr == arr[0]):
        return Interval(mean, mean, mean, n)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(mean, float(low), float(high), n)


def bootstrap_ratio(
    numerators: Sequence[float],
    denominators: Sequence[float],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Σ numerator / Σ denominator over clusters (one entry each), resampling clusters with replacement.

    The share of all turns a replay saved, with every agent's episodes of a task summed into one cluster.
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    if num.size == 0 or den.sum() == 0:
        return Interval(float("nan"), float("nan"), float("nan"), int(num.size))
    point = float(num.sum() / den.sum())
    idx = np.random.default_rng(seed).integers(0, num.size, size=(resamples, num.size))
    dens = den[idx].sum(axis=1)
    stats = np.divide(num[idx].sum(axis=1), dens, out=np.zeros(resamples), where=dens != 0)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return Interval(point, float(low), float(high), int(num.size))


def paired_ratio_difference(
    num_a: Sequence[float],
    num_b: Sequence[float],
    denominators: Sequence[float],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """(Σa − Σb) / Σden with the same clusters drawn for a and b: a paired interval for a difference of shares."""
    diff = np.asarray(num_a, dtype=float) - np.asarray(num_b, dtype=float)
    return bootstrap_ratio(diff, denominators, resamples=resamples, confidence=confidence, seed=seed)


def bootstrap_statistic(
    clusters: Sequence[object],
    statistic: Callable[[list[object]], float],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Any statistic of a list of clusters (e.g. each a task's rows), resampling clusters with replacement."""
    point = float(statistic(list(clusters)))
    if not clusters:
        return Interval(point, point, point, 0)
    idx = np.random.default_rng(seed).integers(0, len(clusters), size=(resamples, len(clusters)))
    stats = np.array([statistic([clusters[i] for i in row]) for row in idx], dtype=float)
    alpha = (1 - confidence) / 2
    low, high = np.nanquantile(stats, [alpha, 1 - alpha])
    return Interval(point, float(low), float(high), len(clusters))
