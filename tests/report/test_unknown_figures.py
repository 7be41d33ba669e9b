"""Unknown is never a number (D321): a figure over episodes that cannot be judged for it is `—` with their count,
in the viewer's figures, the report's runs section and `toolshift agents results`.

τ²-bench's example run is judged (a reward) but its judge never looked at collateral writes, so its strict
success is unknown, not 0; a store of unjudged episodes has no success rate at all.
"""

from __future__ import annotations

import numpy as np
from rich.console import Console

from toolshift.agents.results import results_table, summarize
from toolshift.report.build import build_report
from toolshift.report.inputs import discover
from toolshift.report.sections import Options
from toolshift.report.view.aggregate import aggregate
from toolshift.traces.store import iter_episodes, write_episodes

from .episodes import make_episode
from .pages import runs_table


def _figures(value, path=""):
    """Every `{mean, n, text}` figure in an aggregate, with where it is."""
    if isinstance(value, dict):
        if "text" in value and "n" in value:
            yield path, value
        for k, v in value.items():
            yield from _figures(v, f"{path}.{k}")


def test_no_figure_is_a_number_over_episodes_it_cannot_judge(tmp_path, tau2_results):
    unjudged = tmp_path / "unjudged" / "u.episodes.jsonl"
    unjudged.parent.mkdir()
    write_episodes(unjudged, [make_episode(k, agent="u", success=None) for k in range(4)])
    inputs = discover([tau2_results, unjudged], cache=tmp_path / "cache")
    rs = inputs.runset()
    agent = rs.codes["agent"]

    tau2 = aggregate(rs, np.nonzero(agent != rs.lookup["agent"]["u"])[0])
    assert tau2["judged"] == 2 and tau2["strict_unknown"] == 2
    assert tau2["strict_success"] == {"mean": None, "low": None, "high": None, "n": 0,
                                      "text": "— (2 strict unknown)"}  # fmt: skip
    assert tau2["success"]["n"] > 0  # its reward is a verdict: SR is a number
    none = aggregate(rs, np.nonzero(agent == rs.lookup["agent"]["u"])[0])
    assert none["success"]["text"] == "— (4 unjudged)" and none["strict_success"]["text"] == "—"
    for figures in (tau2, none):
        for where, fig in _figures(figures):
            assert (fig["n"] == 0) == (fig["mean"] is None) == fig["text"].startswith("—"), where

    out = tmp_path / "report.html"
    build_report([tau2_results, unjudged], out, options=Options(resamples=50))
    html = out.read_text(encoding="utf-8")
    by_agent = {r["agent"]: r for r in runs_table(html)}
    sr, strict = "success % (95% CI)", "strict success % (95% CI)"
    assert by_agent["u"][sr] == "— (4 unjudged)" and by_agent["u"][strict] == "—"
    (tau2_row,) = [r for a, r in by_agent.items() if a != "u"]
    assert tau2_row[strict] == "— (2 strict unknown)" and not tau2_row[sr].startswith("—")

    episodes = list(iter_episodes(inputs.episode_sources()[0].index.read_from))
    shown = Console(width=200, record=True)
    shown.print(results_table("τ²", summarize(episodes, trials=1)))
    strict_line = next(line for line in shown.export_text().splitlines() if "strict success %" in line)
    assert "— (2 strict unknown)" in strict_line
    unjudged_run = Console(width=200, record=True)
    unjudged_run.print(results_table("u", summarize(list(iter_episodes(unjudged)), trials=1)))
    success_line = next(line for line in unjudged_run.export_text().splitlines() if "success % [" in line)
    assert "— (4 unjudged)" in success_line


def test_the_success_chart_keeps_its_axis_label_whole_with_long_row_names():
    from toolshift.report.sections.runs import chart

    labels = [
        f"{k} · domain-tools · steward-plan-frozen-embedded (embedded:smollm2-135m-q4_1)" for k in range(12)
    ]
    fig = chart(labels, [{"mean": 0.4, "low": 0.3, "high": 0.5}] * 12)
    fig.canvas.draw()
    page = fig.bbox
    for text in [fig.axes[0].xaxis.label, *fig.axes[0].get_yticklabels()]:
        box = text.get_window_extent()
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0, text.get_text()
    assert fig.axes[0].get_position().width > 0.35  # the bars keep a readable share of the width
