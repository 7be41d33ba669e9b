"""The benchmark section: per evolved build, the versions, the reference-path drift, and every agent scored.

Scores come from `toolshift.bench.ecosystem.evaluate` over the episode files whose episodes name this
build's ecosystem (`<ecosystem id>/v<n>`): SR and Strict-SR (no collateral write), the collateral writes,
tool retrieval P/R/F1, Step-/Cost-SPE, IDR and DAR per version with 95% bootstrap intervals over tasks, as
tables and as curves over the versions, and the instances whose episode wrote outside Δgold, rows named.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from toolshift.errors import ToolshiftError
from toolshift.report.inputs import ResultFile
from toolshift.report.page import Section, esc, figure, figure_file, figure_png, pyplot, table
from toolshift.report.sections import Context

CURVES = (
    ("Success rate (SR) and strict success (Strict-SR)", ("SR", "Strict-SR")),
    ("Success-weighted path efficiency", ("Step-SPE", "Cost-SPE")),
    (
        "Improvement detection (IDR) and degradation adaptation (DAR)",
        ("Step-IDR", "Step-DAR", "Cost-IDR", "Cost-DAR"),
    ),
    ("Tool retrieval", ("P", "R", "F1")),
)
STYLES = ("-", "--", ":", "-.")
MAX_COLLATERAL = 50
"""Collateral instances listed per agent."""


def _files_for(eco_id: str, sources: list[ResultFile]) -> tuple[list[Path], list[str]]:
    """Episode files recorded against this ecosystem; files that mix it with others are named, not scored."""
    files, problems = [], []
    prefix = eco_id + "/v"
    for f in sources:
        assert f.index is not None
        versions = set(f.index.values["version"])
        mine = {v for v in versions if v.startswith(prefix)}
        if not mine:
            continue
        if mine != versions:
            others = ", ".join(sorted(v or "(none)" for v in versions - mine))
            problems.append(f"{f.path}: mixes ecosystem {eco_id} with {others}; not scored")
            continue
        if f.index.bad_lines or f.kind != "episodes":
            problems.append(f"{f.path}: has unreadable lines, which `bench eval` refuses; not scored")
            continue
        files.append(f.path)
    return files, problems


def _curves(evals: list, versions: int) -> bytes:
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    xs = list(range(1, versions + 1))
    for ax, (title, metrics) in zip(axes.flat, CURVES, strict=True):
        for a, ev in enumerate(evals):
            for m, metric in enumerate(metrics):
                pts = [(v, ev.summary.by_version[v][metric]) for v in xs if v in ev.summary.by_version]
                pts = [(v, iv) for v, iv in pts if iv.n]
                if not pts:
                    continue
                mean = [100 * iv.mean for _, iv in pts]
                err = [
                    [100 * (iv.mean - iv.low) for _, iv in pts],
                    [100 * (iv.high - iv.mean) for _, iv in pts],
                ]
                label = ev.agent if len(metrics) == 1 else f"{ev.agent} · {metric}"
                ax.errorbar(
                    [v for v, _ in pts],
                    mean,
                    yerr=err,
                    color=colors[a % len(colors)],
                    linestyle=STYLES[m % len(STYLES)],
                    marker="o",
                    capsize=3,
                    label=label,
                )
        ax.set_title(title, fontsize=11)
        ax.set_xticks(xs, [f"v{v}" for v in xs])
        ax.set_ylim(-3, 103)
        ax.set_ylabel("%")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return figure_png(fig)


def _build_section(ctx: Context, build: ResultFile, number: int) -> Section:
    from toolshift.bench.ecosystem.evaluate import evaluate
    from toolshift.bench.ecosystem.paths import drift, load_references, plot_drift
    from toolshift.bench.metrics import COUNTS, METRICS, cell

    eco = build.extra.get("ecosystem")
    sid = f"benchmark-{number}"
    title = f"Benchmark: {build.path.name}"
    if eco is None:
        return Section(sid, title, f'<p class="note">{esc(build.path)}: {esc(build.note)}.</p>')
    versions = eco.config.versions
    body = [
        f'<p class="note">Ecosystem <code>{esc(eco.id)}</code> of build <code>{esc(build.path)}</code>: '
        f"{len(eco.domains)} domains ({esc(', '.join(eco.domains))}), {versions} versions.</p>",
        "<h3>Versions</h3>",
    ]
    stats = [
        [
            f"v{s.version}",
            s.tools,
            s.implementations,
            *(("–",) * 3 if s.version == 1 else (s.added, s.retired, s.modified)),
            s.accepted,
            s.rejected,
            s.perturbed,
        ]
        for s in eco.stats
    ]
    body.append(
        table(
            [
                "version",
                "tools",
                "implementations",
                "added",
                "retired",
                "modified",
                "accepted",
                "rejected",
                "perturbed",
            ],
            stats,
        )
    )
    problems: list[str] = []
    try:
        header, records = load_references(build.path)
        rows = drift(records, versions)
        body.append("<h3>Reference-path drift</h3>")
        body.append(
            f'<p class="note">{header.instances} task × version instances, {header.valid} replay to Δgold on '
            f"their version; {header.failed_replay} failed replay and {header.no_path} have no path (not scored)."
            "</p>"
        )
        drows = []
        for r in rows:
            moves = (
                ["–"] * 2
                if r["version"] == 1
                else [f"{r[c + '_fell']} / {r[c + '_same']} / {r[c + '_rose']}" for c in ("step", "cost")]
            )
            drows.append(
                [f"v{r['version']}", f"{r['mean_step']:.2f}", moves[0], f"{r['mean_cost']:.2f}", moves[1]]
            )
        body.append(
            table(
                ["version", "mean steps", "steps fell / same / rose", "mean cost", "cost fell / same / rose"],
                drows,
            )
        )
        if versions > 1:
            with tempfile.TemporaryDirectory() as tmp:
                png = plot_drift(rows, Path(tmp) / "drift.png")
                body.append(
                    figure_file(
                        png,
                        "Share of tasks whose reference weight fell, stayed or rose per "
                        "transition, and the mean weight per version",
                        "reference drift",
                    )
                )
    except ToolshiftError as exc:
        problems.append(str(exc))
    files, skipped = _files_for(eco.id, ctx.inputs.episode_sources())
    problems += skipped
    if not files:
        body.append(f'<p class="note">No episode file among the inputs names ecosystem {esc(eco.id)}.</p>')
        return Section(sid, title, "".join(body), problems)
    try:
        _, evals = evaluate(build.path, files, resamples=ctx.options.resamples)
    except ToolshiftError as exc:
        problems.append(str(exc))
        return Section(sid, title, "".join(body), problems)
    body.append("<h3>Agents per version</h3>")
    body.append(
        '<p class="note">Percent with 95% bootstrap intervals over tasks (all: tasks resampled with all their '
        "versions). IDR/DAR exist from v2 on, over the tasks whose reference weight fell (IDR) or rose (DAR); "
        "n is how many. Strict-SR: solved with no collateral write (no change outside Δgold under the judge's "
        "renaming); SR-collateral: the share of solved instances with one (n: solved instances); Collateral: "
        "collateral changes per instance (a count). Scored from: "
        + esc(", ".join(str(f) for f in files))
        + ".</p>"
    )
    for ev in evals:
        assert ev.summary is not None
        excluded = ", ".join(f"{k}: {v}" for k, v in sorted(ev.excluded.items()))
        body.append(
            f'<h3>{esc(ev.agent)}</h3><p class="note">{len(ev.scores)} task × version instances scored'
            + (f"; excluded: {esc(excluded)}" if excluded else "")
            + ".</p>"
        )
        trows = []
        shown = (*METRICS, *COUNTS)
        for v in [*sorted(k for k in ev.summary.by_version if k), 0]:
            row = ev.summary.by_version[v]
            cells = [
                cell(m, row[m])
                + (f" n={row[m].n}" if m.endswith(("IDR", "DAR", "collateral")) and row[m].n else "")
                for m in shown
            ]
            trows.append(["all" if v == 0 else f"v{v}", *cells])
        body.append(table(["version", *shown], trows))
        hurt = ev.collateral()
        if hurt:
            crows = [
                [s.task_id, f"v{s.version}", "yes" if s.success else "no", s.collateral_changes,
                 ", ".join(s.collateral_rows[:8]) + (" …" if len(s.collateral_rows) > 8 else "")]
                for s in hurt[:MAX_COLLATERAL]
            ]  # fmt: skip
            body.append(
                f'<p class="note">Collateral writes: {len(hurt)} of {len(ev.scores)} instances changed rows '
                "outside Δgold"
                + (f" (first {MAX_COLLATERAL} shown)" if len(hurt) > MAX_COLLATERAL else "")
                + ".</p>"
            )
            body.append(table(["task", "version", "SR", "collateral changes", "rows"], crows, left=1))
    body.append(
        figure(
            _curves(evals, versions),
            "Metrics per version, one line per agent, with 95% intervals",
            "benchmark curves",
        )
    )
    return Section(sid, title, "".join(body), problems)


def render(ctx: Context) -> list[Section]:
    return [_build_section(ctx, b, k) for k, b in enumerate(ctx.inputs.of("bench-build"), start=1)]
