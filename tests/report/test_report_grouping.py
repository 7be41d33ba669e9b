"""The report on several runs at once: one flows section per distinct catalog, rows by run (never pooling two
runs, nor two worlds), a run's interval the same whatever else the report holds, and the subtitle's counts in
their number."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.report.build import build_report
from toolshift.report.inputs import describe_kinds, discover
from toolshift.report.sections import Options
from toolshift.traces.store import write_episodes

from .episodes import make_episode
from .pages import runs_table

RUNNER = CliRunner()
FAST = Options(resamples=200)


def _cli(*args: str) -> str:
    result = RUNNER.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def oracle_runs(tmp_path_factory):
    """The README's commands: a clinic task file from `evolve seeds --domain`, the oracle run on it twice
    (two configurations, two folders, each with its copy of clinic's catalog) and once on library."""
    root = tmp_path_factory.mktemp("runs")
    clinic, library = root / "clinic.jsonl", root / "library.jsonl"
    _cli("evolve", "seeds", "--domain", "clinic", "--out", str(clinic))
    _cli("evolve", "seeds", "--domains", "library", "--out", str(library))
    runs = root / "runs"
    _cli("run", "--world", "clinic", "--tasks", str(clinic), "--model", "oracle", "--out", str(runs / "a"))
    _cli("run", "--world", "clinic", "--tasks", str(clinic), "--model", "oracle", "--max-turns", "20",
         "--out", str(runs / "b"))  # fmt: skip
    _cli("run", "--world", "library", "--tasks", str(library), "--model", "oracle", "--out", str(runs / "c"))
    return runs


def test_evolve_seeds_domain_makes_a_task_file_run_takes(oracle_runs):
    for folder in ("a", "b", "c"):
        assert len(list((oracle_runs / folder).glob("run-*.episodes.jsonl"))) == 1
    assert (oracle_runs / "a" / "clinic.catalog.json").is_file()
    result = subprocess.run(
        [sys.executable, "-m", "toolshift", "evolve", "seeds", "--domain", "nowhere", "--out", "x.jsonl"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and "no seed task of domain nowhere" in result.stderr


def test_copies_of_one_catalog_make_one_flows_section_and_worlds_are_not_pooled(oracle_runs, tmp_path):
    out = tmp_path / "report.html"
    report = build_report([oracle_runs], out, options=FAST)
    html = out.read_text(encoding="utf-8")
    # two clinic runs keep two identical copies of clinic's catalog: one section, not one per copy
    assert html.count("<h2>Flows: clinic</h2>") == 1 and html.count("<h2>Flows: library</h2>") == 1
    assert "(and 1 more with the same tools)" in html
    assert len([s for s in report.sections if s.startswith("flows-")]) == 2
    rows = runs_table(html)
    # the oracle on clinic in two runs (two configurations: same world, agent, model, harness) and on library:
    # three rows, one a run, each run's heading naming its world
    found = sorted((r["run"].split(" · ")[1], r["agent"], r["episodes"]) for r in rows)
    assert found == [("clinic", "oracle", "3"), ("clinic", "oracle", "3"), ("library", "oracle", "4")]
    assert len({r["run"] for r in rows}) == 3
    # the subtitle counts each kind in its number
    subtitle = re.search(r"<header>.*?</header>", html, re.S).group(0)
    assert "3 episode stores" in subtitle and "3 catalogs" in subtitle and "1 episodes" not in subtitle


def test_different_catalogs_of_one_domain_each_read_the_runs_beside_them(oracle_runs, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(oracle_runs, runs)
    catalog = runs / "b" / "clinic.catalog.json"
    text = catalog.read_text(encoding="utf-8")
    assert '"cancel_appointment"' in text
    catalog.write_text(text.replace('"effect": "write"', '"effect": "read"', 1), encoding="utf-8")
    out = tmp_path / "report.html"
    build_report([runs / "a", runs / "b"], out, options=FAST)
    html = out.read_text(encoding="utf-8")
    assert "<h2>Flows: clinic (a/clinic.catalog.json)</h2>" in html
    assert "<h2>Flows: clinic (b/clinic.catalog.json)</h2>" in html
    assert html.count("3 episodes of clinic from the 1 episode files beside this catalog") == 2


def _store(path, world, agent, wins):
    episodes = [
        make_episode(k, agent=agent, success=won).model_copy(
            update={"id": f"{world}-{k}", "task_id": f"t{k}"}
        )
        for k, won in enumerate(wins)
    ]
    write_episodes(path, episodes, meta={"world": world})
    return path


def test_a_runs_interval_does_not_change_with_what_else_is_in_the_report(tmp_path):
    clinic = _store(
        tmp_path / "a" / "x.episodes.jsonl", "clinic", "greedy", [True, False, True, True, False, True]
    )
    other = _store(tmp_path / "b" / "y.episodes.jsonl", "library", "greedy", [False, False, True, False])
    third = _store(tmp_path / "c" / "z.episodes.jsonl", "freight_depot", "careful", [True, True, False])

    def clinic_row(*paths):
        out = tmp_path / f"r{len(paths)}.html"
        build_report(list(paths), out, options=FAST)
        rows = {
            (r["run"].split(" · ")[1], r["agent"]): r for r in runs_table(out.read_text(encoding="utf-8"))
        }
        row = rows[("clinic", "greedy")]
        return {k: v for k, v in row.items() if k != "run"}  # the run's number depends on what else is there

    alone = clinic_row(clinic)
    success = alone["success % (95% CI)"]
    assert success.startswith("66.7 [") and success != "66.7 [66.7, 66.7]"
    assert clinic_row(clinic, other) == alone == clinic_row(third, other, clinic)


def test_describe_kinds_names_one_and_several():
    class F:
        def __init__(self, kind):
            self.kind = kind

    assert describe_kinds([F("catalog"), F("episodes")]) == "1 catalog, 1 episode store"
    assert describe_kinds([F("episodes"), F("episodes"), F(None)]) == "2 episode stores, 1 not read"
    assert describe_kinds([F("tau2-results")]) == "1 τ²-bench result"
    assert describe_kinds([]) == "nothing"


def test_the_demo_reports_describe_counts_in_their_number(tmp_path, tau2_results):
    inputs = discover([tau2_results.parent], cache=tmp_path / "cache")
    assert describe_kinds(inputs.files) == "1 τ²-bench result"
