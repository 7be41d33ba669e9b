"""Calibration of lookup scores against the event they predict: used before the agent's next write."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolshift.fileio import atomic_path

BINS = 10


@dataclass(frozen=True)
class Calibration:
    weighed: int
    used_rate: float
    ece: float
    brier: float
    auc: float | None


def expected_calibration_error(scores: np.ndarray, used: np.ndarray, bins: int = BINS) -> float:
    """Σ over equal-width score bins of |mean score − use rate| weighted by the bin's share."""
    if len(scores) == 0:
        return 0.0
    which = np.minimum((scores * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        mask = which == b
        if mask.any():
            total += mask.mean() * abs(scores[mask].mean() - used[mask].mean())
    return float(total)


def auc(scores: np.ndarray, used: np.ndarray) -> float | None:
    """Area under the ROC curve (Mann–Whitney, ties counted half); None without both outcomes."""
    pos, neg = scores[used == 1], scores[used == 0]
    if len(pos) == 0 or len(neg) == 0:
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    allv = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(allv))
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1] == allv[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    rank_of = np.empty(len(allv))
    rank_of[order] = ranks
    pos_ranks = rank_of[: len(pos)].sum()
    return float((pos_ranks - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def calibrate(scores: Sequence[float], used: Sequence[bool]) -> Calibration:
    s = np.asarray(scores, dtype=float)
    u = np.asarray(used, dtype=float)
    return Calibration(
        weighed=len(s),
        used_rate=float(u.mean()) if len(u) else 0.0,
        ece=expected_calibration_error(s, u),
        brier=float(((s - u) ** 2).mean()) if len(s) else 0.0,
        auc=auc(s, u),
    )


def reliability_diagram(
    series: dict[str, tuple[Sequence[float], Sequence[bool]]], path: Path, title: str
) -> Path:
    """One line per series: use rate against mean score in each of ten score bins, with the diagonal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfectly calibrated")
    for name, (scores, used) in series.items():
        s, u = np.asarray(scores, dtype=float), np.asarray(used, dtype=float)
        if len(s) == 0:
            continue
        which = np.minimum((s * BINS).astype(int), BINS - 1)
        xs, ys, ns = [], [], []
        for b in range(BINS):
            mask = which == b
            if mask.any():
                xs.append(s[mask].mean())
                ys.append(u[mask].mean())
                ns.append(int(mask.sum()))
        ax.plot(xs, ys, marker="o", label=f"{name} ({len(s)} weighed)")
    ax.set_xlabel("lookup score")
    ax.set_ylabel("share used before the agent's next write")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    return path


# -- per site ---------------------------------------------------------------------------------------

POSITION_BUCKETS = (0, 3, 6)
"""A decision's position: the agent's calls seen so far, bucketed at these lower bounds (0–2, 3–5, 6+)."""
MIN_COUNTS = (10, 20, 40, 80, 1_000_000)
"""Candidates for the fewest weighed lookups a site needs to get its own recalibration (cross-validated)."""
SITE_PRIOR = 2.0
"""A site's isotonic step is shrunk toward the global calibration by this many pseudo-lookups."""


def position_bucket(position: int) -> str:
    """The bucket of a decision made after `position` of the agent's calls."""
    low = max(b for b in POSITION_BUCKETS if b <= max(position, 0))
    i = POSITION_BUCKETS.index(low)
    return f"{low}+" if i == len(POSITION_BUCKETS) - 1 else f"{low}-{POSITION_BUCKETS[i + 1] - 1}"


def site_key(tool: str, depth: int, position: int) -> str:
    """Tool × what the lookup binds from (an agent's own result, or a lookup's: a chain) × position bucket."""
    return f"{tool}|{'lookup' if depth > 0 else 'agent'}|{position_bucket(position)}"


@dataclass(frozen=True)
class Isotonic:
    """A monotone map from score to use rate (pool adjacent violators), linear between its knots."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]

    def __call__(self, score: float) -> float:
        if not self.xs:
            return score
        return float(np.interp(score, self.xs, self.ys))


def fit_isotonic(scores: Sequence[float], used: Sequence[float], *, prior: Isotonic | None = None,
                 weight: float = 0.0) -> Isotonic:  # fmt: skip
    """Isotonic regression of `used` on `scores` (pool adjacent violators); with a `prior`, each step's
    rate is shrunk toward the prior's mean over the step by `weight` pseudo-lookups."""
    if len(scores) == 0:
        return Isotonic((), ())
    order = np.argsort(np.asarray(scores, dtype=float), kind="mergesort")
    x = np.asarray(scores, dtype=float)[order]
    y = np.asarray(used, dtype=float)[order]
    blocks: list[list[float]] = []  # [sum of y, count, first index, last index]
    for i, yi in enumerate(y):
        if blocks and x[i] == x[int(blocks[-1][3])]:  # tied scores are one point
            blocks[-1] = [blocks[-1][0] + float(yi), blocks[-1][1] + 1.0, blocks[-1][2], i]
        else:
            blocks.append([float(yi), 1.0, i, i])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            top = blocks.pop()
            blocks[-1] = [blocks[-1][0] + top[0], blocks[-1][1] + top[1], blocks[-1][2], top[3]]
    xs: list[float] = []
    ys: list[float] = []
    for total, count, first, last in blocks:
        rate = total / count
        if prior is not None and weight > 0:
            mean_prior = float(np.mean([prior(v) for v in x[int(first) : int(last) + 1]]))
            rate = (total + weight * mean_prior) / (count + weight)
        lo, hi = float(x[int(first)]), float(x[int(last)])
        for edge in (lo, hi) if hi > lo else (lo,):
            if xs and edge <= xs[-1]:
                continue
            xs.append(edge)
            ys.append(float(rate))
    return Isotonic(tuple(xs), tuple(ys))


@dataclass(frozen=True)
class SiteCalibrator:
    """Recalibration per site: a site's own isotonic map where it has `min_count` weighed lookups, else the
    global one. Fitted on decision logs of held-out training folds only."""

    global_map: Isotonic
    sites: dict[str, Isotonic]
    min_count: int

    def __call__(self, site: str, score: float) -> float:
        return (self.sites.get(site) or self.global_map)(score)

    def to_json(self) -> dict[str, object]:
        return {"min_count": self.min_count,
                "global": {"xs": list(self.global_map.xs), "ys": list(self.global_map.ys)},
                "sites": {k: {"xs": list(v.xs), "ys": list(v.ys)} for k, v in sorted(self.sites.items())}}  # fmt: skip


def fit_site_calibrator(rows: Sequence[tuple[str, float, bool]], min_count: int) -> SiteCalibrator:
    """Rows are (site, score, used)."""
    g = fit_isotonic([r[1] for r in rows], [float(r[2]) for r in rows])
    by_site: dict[str, list[tuple[float, float]]] = {}
    for site, score, used in rows:
        by_site.setdefault(site, []).append((score, float(used)))
    sites = {
        s: fit_isotonic([a for a, _ in v], [b for _, b in v], prior=g, weight=SITE_PRIOR)
        for s, v in by_site.items()
        if len(v) >= min_count
    }
    return SiteCalibrator(g, sites, min_count)


def choose_min_count(rows: Sequence[tuple[str, str, float, bool]], folds: int = 5,
                     candidates: Sequence[int] = MIN_COUNTS) -> tuple[int, dict[int, float]]:  # fmt: skip
    """Rows are (task, site, score, used): the min count whose calibrator has the lowest Brier score on
    held-out tasks (`folds`-fold by task, tasks in sorted order dealt round-robin). Ties: the larger count."""
    tasks = sorted({r[0] for r in rows})
    fold_of = {t: i % folds for i, t in enumerate(tasks)}
    brier: dict[int, float] = {}
    for m in candidates:
        err, n = 0.0, 0
        for f in range(folds):
            fit = [(s, x, u) for t, s, x, u in rows if fold_of[t] != f]
            held = [(s, x, u) for t, s, x, u in rows if fold_of[t] == f]
            if not fit or not held:
                continue
            cal = fit_site_calibrator(fit, m)
            err += sum((cal(s, x) - float(u)) ** 2 for s, x, u in held)
            n += len(held)
        brier[m] = err / n if n else float("inf")
    best = min(candidates, key=lambda m: (round(brier[m], 12), -m))
    return best, brier


@dataclass(frozen=True)
class SiteReliability:
    site: str
    weighed: int
    used_rate: float
    ece_before: float
    ece_after: float


def site_reliability(
    rows: Sequence[tuple[str, float, float, bool]], min_rows: int = 1
) -> list[SiteReliability]:
    """Rows are (site, score before, score after recalibration, used): per site, ECE before and after."""
    by_site: dict[str, list[tuple[float, float, bool]]] = {}
    for site, before, after, used in rows:
        by_site.setdefault(site, []).append((before, after, used))
    out = []
    for site, v in sorted(by_site.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(v) < min_rows:
            continue
        b = np.array([x[0] for x in v])
        a = np.array([x[1] for x in v])
        u = np.array([float(x[2]) for x in v])
        out.append(SiteReliability(site, len(v), float(u.mean()), expected_calibration_error(b, u),
                                   expected_calibration_error(a, u)))  # fmt: skip
    return out


def site_reliability_diagrams(rows: Sequence[tuple[str, float, float, bool]], path: Path, title: str,
                              min_rows: int = 15, columns: int = 3) -> Path:  # fmt: skip
    """One panel per site with at least `min_rows` weighed lookups: use rate against mean score per bin,
    before and after recalibration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sites = [r.site for r in site_reliability(rows, min_rows)]
    n = max(len(sites), 1)
    ncols = min(columns, n)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.6 * nrows), squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, site in zip(axes.flat, sites, strict=False):
        ax.set_visible(True)
        ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1)
        mine = [r for r in rows if r[0] == site]
        u = np.array([float(r[3]) for r in mine])
        for label, col in (("before", 1), ("after", 2)):
            s = np.array([r[col] for r in mine])
            which = np.minimum((s * BINS).astype(int), BINS - 1)
            xs = [s[which == b].mean() for b in range(BINS) if (which == b).any()]
            ys = [u[which == b].mean() for b in range(BINS) if (which == b).any()]
            ece = expected_calibration_error(s, u)
            ax.plot(xs, ys, marker="o", label=f"{label} (ECE {ece:.3f})")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(f"{site.replace('|', ' · ')} ({len(mine)})", fontsize=8)
        ax.legend(loc="upper left", fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=64, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    return path
