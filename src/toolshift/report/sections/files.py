"""The inputs section, last on the page: every file the report was given, its kind, and each bad one named with
its reason; the file list folded (a few hundred files must not stand before the results, D323)."""

from __future__ import annotations

from toolshift.report.inputs import describe_kinds
from toolshift.report.page import Section, esc, table
from toolshift.report.sections import Context

KIND_LABELS = {
    "episodes": "episode store",
    "tau2-results": "τ²-bench results",
    "catalog": "tool catalog",
    "flow": "flow",
    "decision-log": "flows decision log",
    "bench-build": "benchmark build",
    "run-config": "run configuration",
    "run-results": "run summary",
    "notes": "viewer notes",
    "unreadable": "unreadable",
}


def render(ctx: Context) -> list[Section]:
    files = ctx.inputs.files
    rows = []
    for f in files:
        if f.kind is None:
            status = "not a result file this report reads"
        elif f.error:
            status = "bad: " + f.error
        elif f.problems():
            status = f"read, {len(f.problems())} problem(s) below"
        else:
            status = f.note or "read"
        episodes = f.index.episodes if f.index is not None and not f.error else ""
        rows.append([str(f.path), KIND_LABELS.get(f.kind or "", "—"), episodes, status])
    problems = [p for f in ctx.inputs.bad for p in f.problems()]
    listing = table(["file", "kind", "episodes", "status"], rows, left=4)
    body = f"<details><summary>{esc(describe_kinds(files))}: the {len(files)} file(s), one a row</summary>{listing}</details>"
    if problems:
        items = "".join(f"<li>{esc(p)}</li>" for p in problems)
        bad = len(ctx.inputs.bad)
        body = (
            f'<div class="problems" id="bad-files"><b class="bad">{bad} file(s) with problems</b> '
            f"(everything else is shown):<ul>{items}</ul></div>" + body
        )
    return [Section("inputs", "Inputs", body)]
