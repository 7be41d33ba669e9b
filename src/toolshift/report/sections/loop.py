"""The loop's comparison (`toolshift.loop-results/1`, OUT/results.json of `toolshift loop`): per condition and
version, SR and strict SR with their intervals, SR curves, and what the loop served and learned."""

from __future__ import annotations

from typing import Any

from toolshift.report.page import Section, esc, figure, table
from toolshift.report.sections import Context
from toolshift.report.sections.capabilities import _curve, _metric_table


def _served_rows(conds: dict[str, Any], versions: list[str]) -> list[list[Any]]:
    rows = []
    for c, by in sorted(conds.items()):
        for v in versions:
            f = by.get(v)
            if isinstance(f, dict):
                rows.append([c, v, f.get("tasks"), f"{f.get('turns') or 0:.1f}", f.get("model calls"), f.get("tokens"),
                             f.get("seconds"), f"{f.get('lookups made')} / {f.get('lookups used')}",
                             f.get("steward calls"), f.get("steward plans followed")])  # fmt: skip
    return rows


def render_loop(ctx: Context) -> list[Section]:
    out = []
    for f in ctx.inputs.of("loop-results"):
        raw = f.extra["results"]
        d = raw.get("definition") or {}
        conds = raw.get("conditions") or {}
        versions = [f"v{v}" for v in d.get("versions", [])]
        problems = [] if conds else ["no condition has finished a version in this file"]
        body = [
            f"<p>From <code>{esc(f.path)}</code>, made by <code>{esc(raw.get('command', ''))}</code>: model "
            f"<code>{esc(d.get('model', ''))}</code>, {len(d.get('tasks', []))} test tasks per version. The agent "
            "serves the same tasks through the gateway version by version; after each version Steward, flows and "
            "task evolution learn from the gateway's recordings of it. Percentages with 95% bootstrap intervals "
            "over tasks; verdicts are the benchmark's.</p>",
            "<h3>Success rate</h3>", _metric_table(conds, "SR"),
            "<h3>Strict success rate (no collateral write)</h3>", _metric_table(conds, "strict SR"),
        ]  # fmt: skip
        if conds and versions:
            body.append(figure(_curve(conds, "SR", "SR per version and condition"), "SR per version", "SR"))
        body += [
            "<h3>Cost and what the loop served</h3>",
            table(["condition", "version", "tasks", "turns / episode", "model calls", "tokens", "wall s",
                   "lookups made / used", "Steward calls", "plans followed"], _served_rows(conds, versions)),
        ]  # fmt: skip
        out.append(Section(f"loop-{len(out) + 1}", "The loop: learning from the gateway's recordings", "".join(body),
                           problems))  # fmt: skip
    return out
