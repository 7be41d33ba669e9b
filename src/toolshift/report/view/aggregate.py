"""The figures of the viewer's filtered set: SR, strict SR and pass^k with intervals, as the report computes them.

The same estimators as `toolshift agents results` and the report's runs section (D144): success over
the judged episodes with a 95% percentile bootstrap clustered by task (domain × task id); strict success
over the episodes whose strict verdict is known (a failure is never strict; a success recorded without the
strict fields is counted apart as unknown); pass^k for k = 2 up to the most judged trials a task has,
`agents.results.pass_hat_k` per domain × task id × ecosystem version, averaged over the tasks with at
least k judged trials and bootstrapped over them (`toolshift.intervals.bootstrap_mean`). The report computes
it within one agent's row; a filtered set may hold several agents, so here a task's trials are one
agent's (and model's): two agents on a task are two tasks of their own trials, never one task of both.
Drawn from the episode index alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolshift.agents.results import pass_hat_k
from toolshift.intervals import Interval, bootstrap_mean
from toolshift.report.episode_index import RunSet

RESAMPLES = 1000


def _interval(iv: Interval) -> dict[str, Any]:
    if iv.n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0, "text": iv.percent()}
    return {**iv.as_dict(), "text": iv.percent()}


def _keys(rs: RunSet, rows: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """One integer per row naming its combination of the given category columns."""
    combo = np.zeros(rows.size, dtype=np.int64)
    for name in names:
        combo = combo * (len(rs.values[name]) + 1) + rs.codes[name][rows]
    return combo


def pass_k(keys: np.ndarray, ok: np.ndarray, resamples: int = RESAMPLES) -> dict[int, Interval]:
    """pass^k for k = 2 … the most trials any task key has: `pass_hat_k` per task, bootstrapped over tasks."""
    tasks, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    trials = np.bincount(inverse, minlength=tasks.size)
    successes = np.bincount(inverse, weights=ok.astype(float), minlength=tasks.size).astype(int)
    seen = np.argsort(
        first, kind="stable"
    )  # tasks in the order they first appear, as the report's dict has them
    trials, successes = trials[seen], successes[seen]
    out = {}
    for k in range(2, int(trials.max(initial=0)) + 1):
        values = [pass_hat_k(int(s), int(n), k) for s, n in zip(successes, trials, strict=True) if n >= k]
        out[k] = bootstrap_mean(values, resamples=resamples)
    return out


def aggregate(rs: RunSet, rows: np.ndarray, resamples: int = RESAMPLES) -> dict[str, Any]:
    """SR, strict SR, pass^k and strict pass^k (with intervals) and the counts behind them, for `rows`."""
    outcome = np.asarray(rs.values["outcome"], dtype=object)[rs.codes["outcome"][rows]]
    judged = outcome != "unjudged"
    task = _keys(rs, rows, ("domain", "task_id"))
    instance = _keys(rs, rows, ("agent", "model", "domain", "task_id", "version"))
    ok = outcome == "success"
    success = bootstrap_mean(ok[judged].astype(float), groups=task[judged].tolist(), resamples=resamples)
    verdicts = np.asarray(rs.values["strict"], dtype=object)[rs.codes["strict"][rows]]
    known = (verdicts == "strict") | (verdicts == "collateral") | (verdicts == "failure")
    is_strict = verdicts == "strict"
    strict = bootstrap_mean(is_strict[known].astype(float), groups=task[known].tolist(), resamples=resamples)
    collateral = rs.numeric("collateral")[rows][judged]
    counted = collateral[collateral >= 0]
    return {
        "episodes": int(rows.size),
        "judged": int(judged.sum()),
        "unjudged": int((~judged).sum()),
        "tasks": int(np.unique(task).size),
        "success": _interval(success),
        "strict_success": _interval(strict),
        "strict_unknown": int((verdicts == "unknown").sum()),
        "pass_k": {str(k): _interval(v) for k, v in pass_k(instance[judged], ok[judged], resamples).items()},
        "strict_pass_k": {
            str(k): _interval(v) for k, v in pass_k(instance[known], is_strict[known], resamples).items()
        },
        "collateral_per_episode": float(counted.mean()) if counted.size else None,
        "collateral_known": int(counted.size),
        "episodes_with_collateral": int((counted > 0).sum()),
    }
