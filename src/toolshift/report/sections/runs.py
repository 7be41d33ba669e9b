"""The runs section: per agent and per domain × agent, episodes, success with intervals, turns and endings.

Drawn from the episode index alone (no episode is parsed again), so it costs the same for 100 or
100,000 episodes once the files are indexed. Success is each episode's own verdict (`outcome.success`,
else a reward of 1); unjudged episodes (WorkBench's, or those charged to the harness) are counted apart
and left out of the rate. Beside it, strict success (success and no collateral write, from the episode's
`outcome.info.strict_success`; a failure is never strict; a success recorded without the field is counted
as unknown and left out of that rate, never taken as clean) and the mean collateral changes per episode
where known. pass^k (k = 2 up to the most trials a task has) is `toolshift agents results`' own: per task
(and ecosystem version) τ-bench's chance that k of its trials drawn without replacement all succeed,
averaged over the tasks with at least k judged trials. Rows are by world (an agent run's world, a
baseline's ecosystem, a converter: the file header's) and agent, never pooling worlds. Intervals are 95%
percentile bootstraps over tasks (`toolshift.intervals`), seeded by the row's key, so a run's interval does
not depend on what else the report holds.
"""

from __future__ import annotations

import zlib
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


def world_of(meta: dict) -> str:
    """What an episode file's runs were made on, from its header: the world of an agent run, the ecosystem of
    a benchmark baseline, the gateway's domain, or the converter of published runs."""
    if meta.get("world"):
        return str(meta["world"])
    if meta.get("ecosystem"):
        return f"ecosystem {meta['ecosystem']}"
    if meta.get("recorded_by") == "toolshift gateway":
        return f"gateway {meta.get('domain', '')}".strip()
    if meta.get("converter"):
        return f"{meta['converter']} (converted)"
    return "—"


def _worlds(rs: RunSet) -> tuple[list[str], np.ndarray]:
    """The world label of every row, as (values, codes), like a RunSet's category columns."""
    labels = [world_of(f.meta) for f in rs.files]
    values = sorted(set(labels))
    per_file = np.array([values.index(w) for w in labels] or [0], dtype=np.int32)
    return values, per_file[rs.file_of] if rs.size else np.zeros(0, np.int32)


def _groups(
    rs: RunSet, keys: tuple[str, ...], extra: dict[str, tuple[list[str], np.ndarray]] | None = None
) -> dict[tuple[str, ...], np.ndarray]:
    """Rows by the values of `keys` (RunSet columns, or `extra`'s (values, codes) columns), in key order."""
    columns = {k: (rs.values[k], rs.codes[k]) for k in keys if k in rs.codes} | (extra or {})
    combo = np.zeros(rs.size, dtype=np.int64)
    for name in keys:
        values, codes = columns[name]
        combo = combo * (len(values) + 1) + codes
    out: dict[tuple[str, ...], np.ndarray] = {}
    for value in np.unique(combo):
        rows = np.nonzero(combo == value)[0]
        first = rows[0]
        out[tuple(columns[k][0][columns[k][1][first]] for k in keys)] = rows
    return dict(sorted(out.items()))


def row_seed(key: tuple[str, ...]) -> int:
    """The bootstrap seed of one table row, from what the row is (its world, agent, model …): a run's interval
    is a function of its own episodes, the same whatever else the report holds."""
    return zlib.crc32("\0".join(key).encode())


def pass_k_cell(task_successes: dict[str, list[bool]], resamples: int, seed: int = 0) -> str:
    """`pass^2 40.0 [20.0, 60.0]; pass^3 …` over the tasks with at least k trials, or a dash for one trial."""
    trials = max((len(v) for v in task_successes.values()), default=0)
    parts = []
    for k in range(2, trials + 1):
        values = [pass_hat_k(sum(v), len(v), k) for v in task_successes.values() if len(v) >= k]
        parts.append(f"pass^{k} {bootstrap_mean(values, resamples=resamples, seed=seed).percent()}")
    return "; ".join(parts) if parts else "– (1 trial)"


def _row(
    rs: RunSet, rows: np.ndarray, turns: np.ndarray, calls: np.ndarray, resamples: int, seed: int
) -> tuple[list, Interval]:
    outcome = np.asarray(rs.values["outcome"], dtype=object)[rs.codes["outcome"][rows]]
    judged = outcome != "unjudged"
    tasks = [
        f"{rs.values['domain'][d]}\0{rs.values['task_id'][t]}"
        for d, t in zip(rs.codes["domain"][rows], rs.codes["task_id"][rows], strict=True)
    ]
    success = (outcome[judged] == "success").astype(float)
    iv = bootstrap_mean(
        success, groups=[t for t, j in zip(tasks, judged, strict=True) if j], resamples=resamples, seed=seed
    )
    verdicts = np.asarray(rs.values["strict"], dtype=object)[rs.codes["strict"][rows]]
    known = (verdicts == "strict") | (verdicts == "collateral") | (verdicts == "failure")
    strict_iv = bootstrap_mean(
        (verdicts[known] == "strict").astype(float),
        groups=[t for t, k in zip(tasks, known, strict=True) if k],
        resamples=resamples,
        seed=seed,
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
        pass_k_cell(trials, resamples, seed),
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
    worlds = {"world": _worlds(rs)}
    by_agent = _groups(rs, ("world", "agent", "model", "harness"), worlds)
    rows, labels, ivs = [], [], []
    for key, idx in by_agent.items():
        world, agent, model, harness = key
        cells, iv = _row(rs, idx, turns, calls, resamples, row_seed(key))
        domains = len(set(rs.codes["domain"][idx].tolist()))
        rows.append([world, agent or "—", model or "—", harness or "—", domains, *cells])
        if iv.n:
            name = agent if agent == model or not model else f"{agent} ({model})"
            labels.append(f"{name} · {world}" if len(worlds["world"][0]) > 1 else name)
            ivs.append(iv)
    body = [
        f'<p class="note">{rs.size} episodes in {len(rs.files)} files. Success is the episode\'s own verdict; '
        "unjudged episodes are left out of the rate. Strict success is success with no collateral write (no "
        "change outside Δgold under the judge's renaming); successes recorded without that verdict are "
        "counted as strict unknown and left out of its rate. Collateral / episode: mean collateral changes "
        "over the judged episodes that record them. pass^k: the chance that k trials of a task (and version) "
        "all succeed, as `toolshift agents results` computes it, over tasks with at least k judged trials. "
        "Rows are by world (an agent run's world, a baseline's ecosystem, the converter of published runs) as "
        "well as agent, so runs on different worlds are never pooled. Intervals: 95% percentile bootstrap over "
        "tasks, seeded by the row (its world, agent, model, harness), so a run's interval is the same whatever "
        "else the report holds.</p>",
        "<h3>By world and agent</h3>",
        table(["world", "agent", "model", "harness", "domains", *HEADER], rows, left=4),
    ]
    if ivs and len(ivs) <= 40:
        body.append(
            figure(
                _chart(labels, ivs), "Success per agent with 95% intervals over tasks", "success per agent"
            )
        )
    by_domain = _groups(rs, ("world", "domain", "agent"), worlds)
    drows = []
    for key, idx in list(by_domain.items())[:MAX_ROWS]:
        world, domain, agent = key
        cells, _ = _row(rs, idx, turns, calls, resamples, row_seed(key))
        drows.append([world, domain, agent or "—", *cells])
    body += ["<h3>By domain and agent</h3>", table(["world", "domain", "agent", *HEADER], drows, left=3)]
    if len(by_domain) > MAX_ROWS:
        body.append(f'<p class="note">{len(by_domain) - MAX_ROWS} more domain × agent groups not shown.</p>')
    versions = [v for v in rs.values["version"] if v]
    if versions:
        body.append(f'<p class="note">Ecosystem versions seen: {esc(", ".join(sorted(versions)))}.</p>')
    return [Section("runs", "Runs", "".join(body))]
