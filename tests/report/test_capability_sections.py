"""Steward's and task evolution's sections of `toolshift report`, drawn from files their own commands wrote."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.report.inputs import discover

pytestmark = pytest.mark.slow


def _sections(html: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="([^"]+)"><h2>[^<]*</h2>(.*?)</section>', html, re.S))


@pytest.fixture(scope="module")
def steward_results(tmp_path_factory, evolved_build):
    from toolshift.steward.experiment import build_libraries, context, follow
    from toolshift.steward.quality import supply_quality
    from toolshift.steward.report import evaluate_follow, write_report

    out = evolved_build(tmp_path_factory.mktemp("steward-build"), ["accounts_payable"], 20, 2)
    ctx = context(out, out / "steward")
    work = build_libraries(ctx)
    scores = evaluate_follow(ctx, follow(ctx), resamples=50)
    quality = supply_quality(ctx, resamples=50)
    return write_report(
        ctx, quality, scores, work, "toolshift steward eval X", None, train_sample=None, sample=None
    )


@pytest.fixture(scope="module")
def evolve_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("evolve")
    runner = CliRunner()
    seeds = tmp / "seeds.jsonl"
    assert runner.invoke(app, ["evolve", "seeds", "--out", str(seeds)]).exit_code == 0
    args = ["evolve", "run", "--seeds", str(seeds), "--out", str(tmp / "evo"), "--solver", "noisy-oracle:0.6"]
    result = runner.invoke(app, [*args, "--attempts", "4", "--generations", "1"])
    assert result.exit_code == 0, result.output
    return tmp / "evo"


def test_steward_and_evolve_results_are_recognised_and_drawn(steward_results, evolve_run, tmp_path):
    inputs = discover([steward_results, evolve_run.parent], cache=tmp_path / "cache")
    kinds = {f.kind for f in inputs.files if f.ok}
    assert {"steward-results", "evolve-run"} <= kinds
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        app, ["report", "html", str(steward_results), str(evolve_run), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    sections = _sections(out.read_text())
    steward = sections["steward-1"]
    assert "steward-incremental" in steward and "steward-frozen" in steward
    assert steward.count("<img") == 2 and "v2" in steward  # supply F1 and SR curves over both versions
    assert "Strict success (no collateral write)" in steward  # bench eval metrics: Strict-SR too
    evolve = sections["evolve-1"]
    assert "seed tasks" in evolve and "final tasks" in evolve and evolve.count("<img") >= 1
    # the noisy oracle never writes outside Δgold: completion by strict success equals SR's, both shown
    assert "mean completion (strict)" in evolve and "mean completion (SR)" in evolve
    seed_row = re.search(r"<td[^>]*>seed tasks</td>(.*?)</tr>", evolve).group(1)
    strict, sr = re.findall(r"<td[^>]*>([^<]*)</td>", seed_row)[-2:]
    assert strict == sr and strict.endswith("%")


def test_a_corrupt_steward_results_file_is_named_and_the_rest_drawn(steward_results, evolve_run, tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text('{"format": "toolshift.steward-results/1", "supply": [1], "follow": {}}')
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "html", str(bad), str(evolve_run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert str(bad) in html and "evolve-1" in _sections(html)


def test_the_evolve_heatmap_numbers_are_legible_at_the_cards_width(evolve_run, tmp_path):
    import base64
    import struct

    from toolshift.evolve.report import HEATMAP_DPI, HEATMAP_NUMBER_PT

    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "html", str(evolve_run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    evolve = _sections(out.read_text())["evolve-1"]
    found = re.search(r'<img alt="Feature × failure mode" src="data:image/png;base64,([^"]+)"', evolve)
    assert found, "no feature × failure heatmap in the evolve section"
    png = base64.b64decode(found.group(1))
    width, height = struct.unpack(">II", png[16:24])
    card = 1400 - 2 * 28 - 2 * 20  # main's max width, its padding and a card's
    shown = min(1.0, card / width)
    # a cell number's height on the page, in CSS pixels: it was 6 pt in two panels side by side (8 px)
    assert HEATMAP_NUMBER_PT * HEATMAP_DPI / 72 * shown >= 12, (width, height)
    assert height > width / 2  # the seed and final panels one above the other
