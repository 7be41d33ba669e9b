"""The runs section: per agent and per domain × agent, episodes, success with intervals, turns and endings.

Drawn from the episode index alone (no episode is parsed again), so it costs the same for 100 or
100,000 episodes once the files are indexed. Success is each episode's own verdict (`outcome.success`,
else a reward of 1); unjudged episodes (WorkBench's, or those charged to the harness) are counted apart
and left out of the rate. Beside it, strict success (success and no collateral write, from the episode's
`outcome.info.strict_success`; a failure is never strict; a success recorded without the field is counted
as unknown and left out of that rate, never taken as clean) and the mean collateral changes per episode
where known. pass^k (k = 2 up to the most trials a task has) is `toolshift agents results`' own: per task
(and ecosystem version) τ-bench's chance that k of its trials drawn without replacement all succeed,
averaged over the tasks with at least k judged trials. Intervals are 95% percentile bootstraps over tasks
(`toolshift.intervals`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from toolshift.agents.results import pass_hat_k
from toolshift.intervals import Interval, bootstrap_mean
from toolshift.report.episode_index import RunSet
from toolshift.report.page import Section, esc, figure, figure_png, pyplot, table
from toolshift.report.sections import Context

MAX_ROWS = 200
HEADER = [
    "episodes",
    "tasks",
    "judged",
    "success % (95% CI)",
    "strict success % (95% CI)",
    "pass^k % (95% CI)",
    "strict unknown",
    "collateral / episode",
    "unjudged",
    "mean turns",
    "mean calls",
    "ended by",
]


def _groups(rs: RunSet, keys: tuple[str, ...]) -> dict[tuple[str, ...], np.ndarray]:
    combo = np.zeros(rs.size, dtype=np.int64)
    for name in keys:
        combo = combo * (len(rs.values[name]) + 1) + rs.codes[name]
    out: dict[tuple[str, ...], np.ndarray] = {}
    for value in np.unique(combo):
        rows = np.nonzero(combo == value)[0]
        first = rows[0]
        out[tuple(rs.values[k][rs.codes[k][first]] for k in keys)] = rows
    return dict(sorted(out.items()))


def pass_k_cell(task_successes: dict[str, list[bool]], resamples: int) -> str:
    """`pass^2 40.0 [20.0, 60.0]; pass^3 …` over the tasks with at least k trials, or a dash for one trial."""
    trials = max((len(v) for v in task_successes.values()), default=0)
    parts = []
    for k in range(2, trials + 1):
        values = [pass_hat_k(sum(v), len(v), k) for v in task_successes.values() if len(v) >= k]
        parts.append(f"pass^{k} {bootstrap_mean(values, resamples=resamples).percent()}")
    return "; ".join(parts) if parts else "– (1 trial)"


def _row(
    rs: RunSet, rows: np.ndarray, turns: np.ndarray, calls: np.ndarray, resamples: int
) -> tuple[list, Interval]:
    outcome = np.asarray(rs.values["outcome"], dtype=object)[rs.codes["outcome"][rows]]
    judged = outcome != "unjudged"
    tasks = [
        f"{rs.values['domain'][d]}\0{rs.values['task_id'][t]}"
        for d, t in zip(rs.codes["domain"][rows], rs.codes["task_id"][rows], strict=True)
    ]
    success = (outcome[judged] == "success").astype(float)
    iv = bootstrap_mean(
        success, groups=[t for t, j in zip(tasks, judged, strict=True) if j], resamples=resamples
    )
    verdicts = np.asarray(rs.values["strict"], dtype=object)[rs.codes["strict"][rows]]
    known = (verdicts == "strict") | (verdicts == "collateral") | (verdicts == "failure")
    strict_iv = bootstrap_mean(
        (verdicts[known] == "strict").astype(float),
        groups=[t for t, k in zip(tasks, known, strict=True) if k],
        resamples=resamples,
    )
    versions = [rs.values["version"][v] or "" for v in rs.codes["version"][rows]]
    trials: dict[str, list[bool]] = {}
    for task, version, j, o in zip(tasks, versions, judged, outcome, strict=True):
        if j:
            trials.setdefault(f"{task}\0{version}", []).append(o == "success")
    collateral = rs.numeric("collateral")[rows][judged]
    counted = collateral[collateral >= 0]
    ends = Counter(rs.values["termination"][c] or "—" for c in rs.codes["termination"][rows])
    ended = ", ".join(f"{k} {n}" for k, n in ends.most_common(3))
    cells = [
        len(rows),
        len(set(tasks)),
        int(judged.sum()),
        iv.percent(),
        strict_iv.percent(),
        pass_k_cell(trials, resamples),
        int((verdicts == "unknown").sum()),
        f"{counted.mean():.2f} (n={counted.size})" if counted.size else "unknown",
        int((~judged).sum()),
        f"{turns[rows].mean():.1f}",
        f"{calls[rows].mean():.1f}",
        ended,
    ]
    return cells, iv


def _chart(labels: list[str], ivs: list[Interval]) -> bytes:
    plt = pyplot()
    height = max(2.0, 0.35 * len(labels) + 1)
    fig, ax = plt.subplots(figsize=(8, height))
    ys = np.arange(len(labels))
    means = [100 * iv.mean for iv in ivs]
    err = [[100 * (iv.mean - iv.low) for iv in ivs], [100 * (iv.high - iv.mean) for iv in ivs]]
    ax.barh(ys, means, xerr=err, color="#4c78a8", ecolor="#1d2330", capsize=3)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("success % (95% bootstrap interval over tasks)")
    fig.tight_layout()
    return figure_png(fig)


def render(ctx: Context) -> list[Section]:
    rs = ctx.inputs.runset()
    if rs.size == 0:
        return [Section("runs", "Runs", '<p class="note">No episode could be read from the inputs.</p>')]
    turns, calls = rs.numeric("turns"), rs.numeric("calls")
    resamples = ctx.options.resamples
    by_agent = _groups(rs, ("agent", "model", "harness"))
    rows, labels, ivs = [], [], []
    for (agent, model, harness), idx in by_agent.items():
        cells, iv = _row(rs, idx, turns, calls, resamples)
        domains = len(set(rs.codes["domain"][idx].tolist()))
        rows.append([agent or "—", model or "—", harness or "—", domains, *cells])
        if iv.n:
            labels.append(agent if agent == model or not model else f"{agent} ({model})")
            ivs.append(iv)
    body = [
        f'<p class="note">{rs.size} episodes in {len(rs.files)} files. Success is the episode\'s own verdict; '
        "unjudged episodes are left out of the rate. Strict success is success with no collateral write (no "
        "change outside Δgold under the judge's renaming); successes recorded without that verdict are "
        "counted as strict unknown and left out of its rate. Collateral / episode: mean collateral changes "
        "over the judged episodes that record them. pass^k: the chance that k trials of a task (and version) "
        "all succeed, as `toolshift agents results` computes it, over tasks with at least k judged trials. "
        "Intervals: 95% percentile bootstrap over tasks.</p>",
        "<h3>By agent</h3>",
        table(["agent", "model", "harness", "domains", *HEADER], rows, left=3),
    ]
    if ivs and len(ivs) <= 40:
        body.append(
            figure(
                _chart(labels, ivs), "Success per agent with 95% intervals over tasks", "success per agent"
            )
        )
    by_domain = _groups(rs, ("domain", "agent"))
    drows = []
    for (domain, agent), idx in list(by_domain.items())[:MAX_ROWS]:
        cells, _ = _row(rs, idx, turns, calls, resamples)
        drows.append([domain, agent or "—", *cells])
    body += ["<h3>By domain and agent</h3>", table(["domain", "agent", *HEADER], drows, left=2)]
    if len(by_domain) > MAX_ROWS:
        body.append(f'<p class="note">{len(by_domain) - MAX_ROWS} more domain × agent groups not shown.</p>')
    versions = [v for v in rs.values["version"] if v]
    if versions:
        body.append(f'<p class="note">Ecosystem versions seen: {esc(", ".join(sorted(versions)))}.</p>')
    return [Section("runs", "Runs", "".join(body))]
