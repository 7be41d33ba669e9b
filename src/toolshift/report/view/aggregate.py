"""The figures of a set of episodes: SR, strict SR and pass^k with intervals, for the viewer and the report.

The same estimators as `toolshift agents results` (D144): success over the judged episodes with a 95%
percentile bootstrap clustered by task (domain × task id); strict success over the episodes whose strict
verdict is known (a judged episode recorded without it, as τ²-bench's and converted runs', is unknown and
left out, never a 0; D321); pass^k for k = 2 up to the most trials a task has, `agents.results.pass_hat_k`
averaged over the tasks with at least k judged trials and bootstrapped over them.

What is counted (D320): agent episodes only, a gateway's recordings of them apart; a task's trials are the
rows that share a trial key (`episode_index.TRIAL_KEY`: run, condition, harness, agent, model, task and
version), so pass^k is only ever over the repeated trials of one run; a trial recorded twice (one key, one
trial number) is counted once, its last line; the loop's shared first version (`source.loop.shared_from`),
copied into every condition, is counted once when the condition it was copied from is in the set too.
A figure that nothing could be counted for is `—` with the count of what could not, never a number.
Drawn from the episode index alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolshift.agents.results import pass_hat_k
from toolshift.intervals import Interval, bootstrap_mean
from toolshift.report.episode_index import TRIAL_KEY, RunSet

RESAMPLES = 1000


def _interval(iv: Interval, missing: int, why: str) -> dict[str, Any]:
    """A figure as JSON: `{mean, low, high, n, text}`; over nothing, null and `text` `— (N why)` (`Interval.known`)."""
    return {**iv.as_json(), "text": iv.known(missing, why)}


def column(rs: RunSet, name: str, rows: np.ndarray) -> np.ndarray:
    """A category column's values (as strings) at `rows`."""
    return (
        np.asarray(rs.values[name], dtype=object)[rs.codes[name][rows]] if rows.size else np.zeros(0, object)
    )


def group_ids(rs: RunSet, rows: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """One integer per row naming its combination of the given category columns (0 … groups - 1)."""
    if rows.size == 0:
        return np.zeros(0, np.int64)
    stacked = np.stack([rs.codes[name][rows] for name in names], axis=1)
    _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def counted(rs: RunSet, rows: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """The rows figures count, in row order, and what was left out: recordings, shared copies, repeats."""
    kind = column(rs, "kind", rows)
    episodes = rows[kind != "recording"]
    left = {"recordings": int(rows.size - episodes.size), "copies": 0, "repeats": 0}
    shared = column(rs, "shared", episodes)
    if np.any(shared != ""):
        present = set(column(rs, "condition", episodes).tolist())
        copy = np.array([s != "" and s in present for s in shared.tolist()], dtype=bool)
        left["copies"] = int(copy.sum())
        episodes = episodes[~copy]
    if episodes.size:
        keys = group_ids(rs, episodes, TRIAL_KEY)
        trial = rs.numeric("trial")[episodes]
        pairs = np.stack([keys, trial], axis=1)
        _, last_from_end = np.unique(pairs[::-1], axis=0, return_index=True)  # the last line of each trial
        keep = np.sort(episodes.size - 1 - last_from_end)
        left["repeats"] = int(episodes.size - keep.size)
        episodes = episodes[keep]
    return episodes, left


def pass_k(
    keys: np.ndarray, ok: np.ndarray, resamples: int = RESAMPLES, seed: int = 0
) -> dict[int, Interval]:
    """pass^k for k = 2 … the most trials any trial key has: `pass_hat_k` per task, bootstrapped over tasks."""
    tasks, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    trials = np.bincount(inverse, minlength=tasks.size)
    successes = np.bincount(inverse, weights=ok.astype(float), minlength=tasks.size).astype(int)
    seen = np.argsort(first, kind="stable")  # tasks in the order they first appear
    trials, successes = trials[seen], successes[seen]
    out = {}
    for k in range(2, int(trials.max(initial=0)) + 1):
        values = [pass_hat_k(int(s), int(n), k) for s, n in zip(successes, trials, strict=True) if n >= k]
        out[k] = bootstrap_mean(values, resamples=resamples, seed=seed)
    return out


def aggregate(rs: RunSet, rows: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """SR, strict SR, pass^k and strict pass^k (with intervals) and the counts behind them, for `rows`."""
    rows, left = counted(rs, np.asarray(rows, dtype=np.int64))
    outcome = column(rs, "outcome", rows)
    judged = outcome != "unjudged"
    task = group_ids(rs, rows, ("domain", "task_id"))
    trial_key = group_ids(rs, rows, TRIAL_KEY)
    ok = outcome == "success"
    success = bootstrap_mean(ok[judged].astype(float), groups=task[judged].tolist(), resamples=resamples,
                             seed=seed)  # fmt: skip
    verdicts = column(rs, "strict", rows)
    known = (verdicts == "strict") | (verdicts == "collateral") | (verdicts == "failure")
    is_strict = verdicts == "strict"
    strict = bootstrap_mean(is_strict[known].astype(float), groups=task[known].tolist(), resamples=resamples,
                            seed=seed)  # fmt: skip
    unknown = int((verdicts == "unknown").sum())
    collateral = rs.numeric("collateral")[rows][judged]
    counts = collateral[collateral >= 0]
    per_key = np.bincount(trial_key) if rows.size else np.zeros(0, np.int64)
    trials = {str(n): int(m) for n, m in zip(*np.unique(per_key, return_counts=True), strict=True) if n}
    return {
        "episodes": int(rows.size),
        "judged": int(judged.sum()),
        "unjudged": int((~judged).sum()),
        "tasks": int(np.unique(task).size),
        "runs": int(np.unique(column(rs, "run", rows)).size) if rows.size else 0,
        "trials": trials,
        **left,
        "success": _interval(success, int((~judged).sum()), "unjudged"),
        "strict_success": _interval(strict, unknown, "strict unknown"),
        "strict_unknown": unknown,
        "pass_k": {
            str(k): _interval(v, 0, "")
            for k, v in pass_k(trial_key[judged], ok[judged], resamples, seed).items()
        },
        "strict_pass_k": {
            str(k): _interval(v, 0, "")
            for k, v in pass_k(trial_key[known], is_strict[known], resamples, seed).items()
        },
        "collateral_per_episode": float(counts.mean()) if counts.size else None,
        "collateral_known": int(counts.size),
        "episodes_with_collateral": int((counts > 0).sum()),
    }
