"""The runs section: per run, condition and agent, and per domain, episodes, success with intervals, turns, endings.

Drawn from the episode index alone (no episode is parsed again), so it costs the same for 100 or
100,000 episodes once the files are indexed. Every figure is the viewer's (`toolshift.report.view.aggregate`,
the estimators of `toolshift agents results`): success is each episode's own verdict, unjudged episodes
counted apart; strict success (success and no collateral write) over the episodes whose judge recorded it,
the others counted as unknown and never taken as a number (D321); pass^k only over the repeated trials of
one run (D320). Rows are by run (the command or folder that made the episodes, `episode_index.run_of`), the
condition they ran under, the agent, model and harness, never pooling two runs; a gateway's recordings of
sessions are listed apart, never counted as episodes. Intervals are 95% percentile bootstraps over tasks
(`toolshift.intervals`), seeded by the row's key, so a run's interval does not depend on what else the
report holds.
"""

from __future__ import annotations

import textwrap
import zlib
from collections import Counter
from typing import Any

import numpy as np

from toolshift.report.episode_index import RunSet
from toolshift.report.page import Section, esc, figure, figure_png, pyplot
from toolshift.report.sections import Context
from toolshift.report.view.aggregate import aggregate, column, counted

MAX_ROWS = 200
HEADER = [
    "episodes",
    "tasks",
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
DOMAIN_HEADER = ["episodes", "success % (95% CI)", "strict success % (95% CI)", "mean turns"]


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


def groups(rs: RunSet, rows: np.ndarray, keys: tuple[str, ...]) -> dict[tuple[str, ...], np.ndarray]:
    """`rows` by the values of the category columns `keys`, in key order."""
    out: dict[tuple[str, ...], list[int]] = {}
    values = [column(rs, k, rows).tolist() for k in keys]
    for i, row in enumerate(rows.tolist()):
        out.setdefault(tuple(v[i] for v in values), []).append(row)
    return {k: np.asarray(v, dtype=np.int64) for k, v in sorted(out.items())}


def row_seed(key: tuple[str, ...]) -> int:
    """The bootstrap seed of one table row, from what the row is (its run, condition, agent, model …): a run's
    interval is a function of its own episodes, the same whatever else the report holds. A run named by its
    folder or file counts by its last name only, so a run opened from another path has the same interval."""
    run, *rest = key
    if run and " " not in run and "/" in run:
        run = run.rstrip("/").rsplit("/", 1)[-1]
    return zlib.crc32("\0".join((run, *rest)).encode())


def pass_k_cell(figures: dict) -> str:
    """`pass^2 40.0 [20.0, 60.0]; pass^3 …` over the run's repeated trials, or a dash for one trial a task."""
    parts = [f"pass^{k} {iv['text']}" for k, iv in figures["pass_k"].items()]
    return "; ".join(parts) if parts else "– (1 trial)"


def figures_row(rs: RunSet, rows: np.ndarray, resamples: int, seed: int) -> tuple[list, dict]:
    """The table cells of a group of rows (HEADER's), and its figures (`aggregate`'s)."""
    figures = aggregate(rs, rows, resamples, seed)
    kept, _ = counted(rs, rows)
    turns, calls = rs.numeric("turns")[kept], rs.numeric("calls")[kept]
    ends = Counter(v or "—" for v in column(rs, "termination", kept).tolist())
    collateral = figures["collateral_per_episode"]
    cells = [
        figures["episodes"],
        figures["tasks"],
        figures["success"]["text"],
        figures["strict_success"]["text"],
        pass_k_cell(figures),
        figures["strict_unknown"],
        "unknown" if collateral is None else f"{collateral:.2f} (n={figures['collateral_known']})",
        figures["unjudged"],
        f"{turns.mean():.1f}" if kept.size else "—",
        f"{calls.mean():.1f}" if kept.size else "—",
        ", ".join(f"{k} {n}" for k, n in ends.most_common(2)),
    ]
    return cells, figures


def chart(labels: list[str], figures: list[dict]) -> Any:
    """Success per row with its interval, as a matplotlib figure: long labels wrapped, so the axes keep their
    width and the axis label fits under them (it was cut at "interval over ta", D323)."""
    plt = pyplot()
    labels = [textwrap.fill(label, 36) for label in labels]
    lines = sum(label.count("\n") + 1 for label in labels)
    fig, ax = plt.subplots(figsize=(9, max(2.4, 0.2 * lines + 0.12 * len(labels) + 1.3)))
    ys = np.arange(len(labels))
    means = [100 * f["mean"] for f in figures]
    err = [[100 * (f["mean"] - f["low"]) for f in figures], [100 * (f["high"] - f["mean"]) for f in figures]]
    ax.barh(ys, means, xerr=err, color="#4c78a8", ecolor="#1d2330", capsize=3)
    ax.set_yticks(ys, labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("success % (95% bootstrap interval over tasks)", fontsize=10)
    fig.tight_layout()
    return fig


def grouped_table(header: list[str], rows: list[tuple[str, list[list]]], left: int) -> str:
    """A table whose rows come in groups, each under a full-width heading row (a run). Label columns (the first
    `left`) and the text of "ended by" are left-aligned and wrap; figures stay on one line."""
    text = {k for k, h in enumerate(header) if k < left or h == "ended by"}
    head = "".join(f"<th{' class=l' if k in text else ''}>{esc(h)}</th>" for k, h in enumerate(header))
    body = []
    for title, group in rows:
        body.append(f'<tr class="group"><th class="l" colspan="{len(header)}">{esc(title)}</th></tr>')
        for row in group:
            body.append("<tr>" + "".join(
                f'<td{" class=l" if k in text else ""}>{esc(v)}</td>' for k, v in enumerate(row)) + "</tr>")  # fmt: skip
    return f'<div class="table-scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


FOLDABLE = ("model", "harness", "strict unknown", "unjudged")
"""Columns that, holding one value in every row, are said once above the table instead of repeated."""


def fold_constant(
    header: list[str], groups_: list[tuple[str, list[list]]]
) -> tuple[list[str], list, list[str]]:
    """The header and rows without the FOLDABLE columns that hold one value throughout, and `name value` for each."""
    rows = [r for _, g in groups_ for r in g]
    drop = [k for k, h in enumerate(header) if h in FOLDABLE and rows and len({str(r[k]) for r in rows}) == 1]
    said = [f"{header[k]} {rows[0][k]}" for k in drop]
    keep = [k for k in range(len(header)) if k not in drop]
    return ([header[k] for k in keep], [(t, [[r[k] for k in keep] for r in g]) for t, g in groups_], said)


def render(ctx: Context) -> list[Section]:
    rs = ctx.inputs.runset()
    if rs.size == 0:
        return [Section("runs", "Runs", '<p class="note">No episode could be read from the inputs.</p>')]
    resamples = ctx.options.resamples
    every = np.arange(rs.size, dtype=np.int64)
    kinds = column(rs, "kind", every)
    episodes, recordings = every[kinds != "recording"], every[kinds == "recording"]
    worlds = {}
    for f in rs.files:
        worlds.setdefault(str(f.source), world_of(f.meta))
    runs = groups(rs, episodes, ("run",))
    numbers = {run: k + 1 for k, (run,) in enumerate(runs)}
    table_rows: list[tuple[str, list[list]]] = []
    labels, charted = [], []
    one_model = len(set(column(rs, "model", episodes).tolist())) == 1  # then said once, not in every label
    for (run,), idx in runs.items():
        files = sorted(set(column(rs, "file", idx).tolist()))
        where = sorted({worlds[f] for f in files})
        title = f"run {numbers[run]}: {run} · {', '.join(where)} · {len(files)} file(s)"
        group = []
        for key, rows in groups(rs, idx, ("condition", "agent", "model", "harness")).items():
            condition, agent, model, harness = key
            cells, figs = figures_row(rs, rows, resamples, row_seed((run, *key)))
            domains = len(set(column(rs, "domain", rows).tolist()))
            group.append([condition or "—", agent or "—", model or "—", harness or "—", domains, *cells])
            if figs["success"]["n"]:
                name = agent if agent == model or not model or one_model else f"{agent} ({model})"
                labels.append(f"{numbers[run]} · {condition + ' · ' if condition else ''}{name}")
                charted.append(figs["success"])
        table_rows.append((title, group))
    left = aggregate(rs, episodes, resamples)
    notes = []
    if left["copies"]:
        notes.append(f"{left['copies']} episodes are the loop's shared first version, copied into each condition: "
                     "each condition's row counts its copy, and a figure over several conditions counts it once")  # fmt: skip
    if left["repeats"]:
        notes.append(f"{left['repeats']} episodes repeat a trial of their run (one task, trial number and run): "
                     "each trial is counted once, its last line")  # fmt: skip
    body = [
        f'<p class="note">{len(episodes)} episodes in {len(runs)} run(s), {len(rs.files)} files'
        + (f"; {len(recordings)} gateway recordings listed apart" if recordings.size else "")
        + ". Success is the episode's own verdict; unjudged episodes are left out of the rate. Strict success is "
        "success with no collateral write (no change outside Δgold under the judge's renaming), over the episodes "
        "whose judge recorded it; the others are counted as strict unknown, and a rate over none of them is "
        "— , never 0. pass^k: the chance that k trials of a task (and version) all succeed, as `toolshift agents "
        "results` computes it, over the repeated trials of one run only. Rows are by run, then condition, agent, "
        "model and harness: two runs are never pooled. Intervals: 95% percentile bootstrap over tasks, seeded by "
        "the row, so a run's interval is the same whatever else the report holds.</p>",
        *(f'<p class="note">{esc(n)}.</p>' for n in notes),
    ]
    header, table_rows, said = fold_constant(
        ["condition", "agent", "model", "harness", "domains", *HEADER], table_rows
    )
    if said:
        body.append(f'<p class="note">In every row: {esc("; ".join(said))}.</p>')
    body += [
        "<h3>By run, condition and agent</h3>",
        grouped_table(
            header, table_rows, left=sum(h in ("condition", "agent", "model", "harness") for h in header)
        ),
    ]
    if charted and len(charted) <= 40:
        body.append(figure(figure_png(chart(labels, charted)), "Success per run, condition and agent with 95% intervals "
                           "over tasks (the number is the run's, as in the table)", "success per agent"))  # fmt: skip
    domain_rows: list[tuple[str, list[list]]] = []
    shown = 0
    for (run,), idx in runs.items():
        group = []
        for key, rows in groups(rs, idx, ("domain", "condition", "agent")).items():
            if shown >= MAX_ROWS:
                break
            domain, condition, agent = key
            figs = aggregate(rs, rows, resamples, row_seed((run, *key)))
            kept, _ = counted(rs, rows)
            turns = rs.numeric("turns")[kept]
            group.append([domain, condition or "—", agent or "—", figs["episodes"], figs["success"]["text"],
                          figs["strict_success"]["text"], f"{turns.mean():.1f}" if kept.size else "—"])  # fmt: skip
            shown += 1
        if group:
            domain_rows.append((f"run {numbers[run]}", group))
    body += [
        "<h3>By domain</h3>",
        grouped_table(["domain", "condition", "agent", *DOMAIN_HEADER], domain_rows, 3),
    ]
    total = sum(len(groups(rs, idx, ("domain", "condition", "agent"))) for idx in runs.values())
    if total > MAX_ROWS:
        body.append(f'<p class="note">{total - MAX_ROWS} more domain groups not shown.</p>')
    if recordings.size:
        rec_rows = []
        for (run, domain), rows in groups(rs, recordings, ("run", "domain")).items():
            rec_rows.append([run, domain, rows.size, int(rs.numeric("calls")[rows].sum())])
        body += [
            "<h3>Gateway recordings</h3>",
            '<p class="note">What a gateway recorded of each client session (its calls and results): a '
            "record of episodes counted above or of sessions outside them, never counted as episodes here.</p>",
            grouped_table(["run", "domain", "sessions", "calls"], [("", rec_rows)], 2).replace(
                '<tr class="group"><th class="l" colspan="4"></th></tr>', ""
            ),
        ]
    versions = [v for v in rs.values["version"] if v]
    if versions:
        body.append(f'<p class="note">Ecosystem versions seen: {esc(", ".join(sorted(versions)))}.</p>')
    return [Section("runs", "Runs", "".join(body))]
