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
