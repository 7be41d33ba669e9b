"""Steward's per-version comparison and task evolution's distributions, from their own result files.

Steward: a `toolshift.steward-results/1` file (`toolshift steward eval` writes RUN/results.json) — supply
P/R/F1 per setting and the skill-following instrument's SR per library per version, with their intervals,
as tables and curves. Task evolution: a run folder (`toolshift.evolve-run/1`) — drawn by
`toolshift.evolve.report`'s own analyses (completion rates before and after, feature × failure heatmap,
feature and failure frequencies), so the page and `evolve report` cannot disagree.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from toolshift.errors import ToolshiftError
from toolshift.report.page import Section, esc, figure_file, figure_png, pyplot, table
from toolshift.report.sections import Context

STYLES = ("-", "--", ":", "-.", (0, (3, 1, 1, 1)), (0, (1, 1)), (0, (5, 2)))


def _iv(cell: Any) -> str:
    if not isinstance(cell, dict) or not isinstance(cell.get("mean"), int | float):
        return "–"
    mean, lo, hi = cell["mean"], cell.get("low"), cell.get("high")
    if isinstance(lo, int | float) and isinstance(hi, int | float):
        return f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
    return f"{100 * mean:.1f}"


def _versions(block: dict[str, Any]) -> list[str]:
    keys = {v for by in block.values() if isinstance(by, dict) for v in by}
    return sorted((k for k in keys if k.startswith("v") and k[1:].isdigit()), key=lambda k: int(k[1:]))


def _curve(block: dict[str, Any], metric: str, title: str) -> bytes:
    plt = pyplot()
    versions = _versions(block)
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for i, (name, by) in enumerate(sorted(block.items())):
        ys = [
            100 * by[v][metric]["mean"] if isinstance(by.get(v, {}).get(metric), dict) else None
            for v in versions
        ]
        ax.plot(versions, [y if y is not None else float("nan") for y in ys], marker="o",
                linestyle=STYLES[i % len(STYLES)], label=name)  # fmt: skip
    ax.set_ylabel(f"{metric} (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return figure_png(fig)


def _metric_table(block: dict[str, Any], metric: str) -> str:
    versions = _versions(block)
    rows = [[name, *(_iv(by.get(v, {}).get(metric)) for v in versions)] for name, by in sorted(block.items())]
    return table(["", *versions], rows)


def render_steward(ctx: Context) -> list[Section]:
    from toolshift.report.page import figure

    out = []
    for f in ctx.inputs.of("steward-results"):
        raw = f.extra["results"]
        supply, follow = raw.get("supply") or {}, raw.get("follow") or {}
        body = [f"<p>From <code>{esc(f.path)}</code>, made by <code>{esc(raw.get('command', ''))}</code> "
                f"(ecosystem <code>{esc(raw.get('ecosystem', ''))}</code>). Percentages with 95% bootstrap "
                "intervals over tasks.</p>"]  # fmt: skip
        problems = []
        if supply:
            body += ["<h3>Supply quality (no agent): F1 of the exposed tools</h3>", _metric_table(supply, "F1"),
                     "<h3>Recall</h3>", _metric_table(supply, "R"),
                     figure(_curve(supply, "F1", "supply F1 per version"), "Supply F1 per version", "supply F1")]  # fmt: skip
        else:
            problems.append("no supply results (part 1) in this file")
        if follow:
            body += ["<h3>Skill-following instrument (a measuring instrument, not a model): success rate</h3>",
                     _metric_table(follow, "SR"),
                     figure(_curve(follow, "SR", "SR per version"), "SR per version and library", "SR")]  # fmt: skip
            if any(
                isinstance(row, dict) and "Strict-SR" in row
                for by in follow.values()
                if isinstance(by, dict)
                for row in by.values()
            ):  # results written since `bench eval` scores strict success
                body += ["<h3>Strict success (no collateral write)</h3>", _metric_table(follow, "Strict-SR")]  # fmt: skip
        else:
            problems.append("no skill-following results (part 2) in this file")
        out.append(Section(f"steward-{len(out) + 1}", "Steward across versions", "".join(body), problems))
    return out


def render_evolve(ctx: Context) -> list[Section]:
    from toolshift.evolve.report import RunData, write_report

    out = []
    for f in ctx.inputs.of("evolve-run"):
        problems: list[str] = []
        with tempfile.TemporaryDirectory(prefix="toolshift-report-evolve-") as tmp:
            md = Path(tmp) / "evolve.md"
            try:
                run = RunData(f.path)
                write_report([f.path], md, embeddings="tfidf")
            except ToolshiftError as exc:
                out.append(
                    Section(f"evolve-{len(out) + 1}", f"Task evolution: {f.path.name}", "", [str(exc)])
                )
                continue
            before = [r.completion for r in run.seeds if r.completion is not None]
            after = [r.completion for r in run.final if r.completion is not None]

            def band(xs: list[float], lo: float, hi: float) -> str:
                return f"{100 * sum(lo <= x <= hi for x in xs) / len(xs):.0f}%" if xs else "–"

            def mean(records: list, attr: str) -> str:
                xs = [getattr(r, attr) for r in records if getattr(r, attr) is not None]
                return f"{100 * sum(xs) / len(xs):.0f}%" if xs else "–"

            rows = [
                ["seed tasks", len(before), band(before, 0.3, 0.7), band(before, 0.4, 0.6),
                 mean(run.seeds, "completion"), mean(run.seeds, "sr_completion")],
                ["final tasks", len(after), band(after, 0.3, 0.7), band(after, 0.4, 0.6),
                 mean(run.final, "completion"), mean(run.final, "sr_completion")],
            ]  # fmt: skip
            body = [f"<p>Run <code>{esc(f.path)}</code>: solver <code>{esc(run.config.solver.model)}</code>, "
                    f"proposer <code>{esc(run.config.proposer)}</code>, {len(run.records)} programs.</p>",
                    "<p class=\"note\">Completion is by strict success (no collateral write), as fitness uses it; "
                    "SR's completion (collateral writes allowed) beside it.</p>",
                    table(["", "tasks", "in 30–70%", "in 40–60%", "mean completion (strict)",
                           "mean completion (SR)"], rows)]  # fmt: skip
            for suffix, caption in (
                ("completion", "Completion rates before and after"),
                ("heatmap", "Feature × failure mode"),
                ("features", "Feature and failure-mode frequencies"),
            ):
                png = md.with_name(f"{md.stem}-{suffix}.png")
                if png.is_file():
                    body.append(figure_file(png, caption, caption))
                else:
                    problems.append(f"no {caption.lower()} (too few evaluated programs)")
        out.append(
            Section(f"evolve-{len(out) + 1}", f"Task evolution: {f.path.name}", "".join(body), problems)
        )
    return out
