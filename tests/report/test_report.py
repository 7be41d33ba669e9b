"""`toolshift report`: kinds found, sections drawn from real runs, bad files named, one self-contained file."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from toolshift.report.build import build_report
from toolshift.report.inputs import classify, discover
from toolshift.report.sections import Options
from toolshift.traces.store import write_episodes

from .conftest import add_corrupt_files
from .episodes import make_episode

FAST = Options(resamples=50)


class _Page(HTMLParser):
    """Section ids, headings, image sources and every URL-bearing attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.images: list[str] = []
        self.urls: list[str] = []
        self.scripts = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id", ""))
        if tag == "img":
            self.images.append(a.get("src", ""))
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if key in a and not a[key].startswith("#"):
                self.urls.append(a[key])

    def handle_data(self, data):
        self.text.append(data)


def parse(path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_kinds_are_recognised(tmp_path, tau2_results, eco_runs):
    build, runs = eco_runs
    assert classify(build)[0] == "bench-build"
    old = tmp_path / "old-build"  # a build of an older format is recognised, and named bad with the reason
    shutil.copytree(build, old)
    manifest = old / "manifest.json"
    manifest.write_text(
        re.sub(r"toolshift\.bench-build/\d+", "toolshift.bench-build/1", manifest.read_text())
    )
    assert classify(old)[0] == "bench-build"
    (found,) = discover([old]).files
    assert not found.ok and "older toolshift" in found.error and "manifest.json" in found.error
    assert classify(runs / "oracle.episodes.jsonl")[0] == "episodes"
    assert classify(tau2_results)[0] == "tau2-results"
    bad = add_corrupt_files(tmp_path / "bad")
    assert classify(bad["catalog"])[0] == "catalog"  # known by its name, unreadable: it will be named as bad
    (tmp_path / "notes.json").write_text('{"anything": 1}')
    assert classify(tmp_path / "notes.json")[0] is None


def test_corrupt_files_are_named_and_the_rest_is_read(tmp_path, tau2_results):
    folder = tau2_results.parent
    bad = add_corrupt_files(folder)
    inputs = discover([folder])
    by_path = {f.path: f for f in inputs.files}
    assert by_path[tau2_results].ok and by_path[tau2_results].index.episodes == 2
    assert not by_path[bad["headless"]].ok and "no header line" in by_path[bad["headless"]].error
    assert not by_path[bad["catalog"]].ok and "broken.catalog.json" in by_path[bad["catalog"]].error
    one_bad = by_path[bad["one_bad"]]
    assert one_bad.ok and one_bad.index.episodes == 3
    assert any("line 3" in p and "not JSON" in p for p in one_bad.problems()), one_bad.problems()
    assert {f.path for f in inputs.bad} == {bad["headless"], bad["catalog"], bad["one_bad"]}
    assert inputs.runset().size == 5


def test_binary_and_deeply_nested_files_are_named_not_a_crash(tmp_path, tau2_results):
    """JSON nested 100,000 deep or binary bytes, as a result, a catalog or one episode line: each is named
    with its reason (bounded reading, toolshift.fileio) and the report is still written."""
    folder = tau2_results.parent
    deep = "[" * 100_000 + "]" * 100_000
    (folder / "deep.json").write_text('{"format": "toolshift.catalog/1", "x": ' + deep + "}")
    (folder / "bin.catalog.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    store = folder / "deep-line.episodes.jsonl"
    write_episodes(store, [make_episode(k, agent="deep") for k in range(2)])
    with store.open("a", encoding="utf-8") as fh:
        fh.write('{"id": "d", "task_id": "1", "domain": "d", "messages": ' + deep + "}\n")
    inputs = discover([folder])
    by_name = {f.path.name: f for f in inputs.files}
    assert "nested more than" in by_name["deep.json"].error and not by_name["deep.json"].ok
    assert "not UTF-8" in by_name["bin.catalog.json"].error
    deep_line = by_name["deep-line.episodes.jsonl"]
    assert deep_line.ok and deep_line.index.episodes == 2
    assert any("line 4" in p and "nested more than" in p for p in deep_line.problems()), deep_line.problems()
    out = tmp_path / "report.html"
    build_report([folder], out, options=FAST)
    text = out.read_text(encoding="utf-8")
    assert "deep.json" in text and "bin.catalog.json" in text and "nested more than" in text


@pytest.mark.slow
def test_report_of_benchmark_runs_has_tables_curves_and_drift(tmp_path, eco_runs):
    build, runs = eco_runs
    out = tmp_path / "report.html"
    report = build_report([build, runs], out, options=FAST)
    assert report.sections == ["runs", "benchmark-1", "inputs"]  # results first, the inputs folded last
    page = parse(out)
    text = " ".join(page.text)
    assert "oracle" in text and "frozen-v1" in text
    for metric in (
        "SR",
        "Strict-SR",
        "SR-collateral",
        "Collateral",
        "Step-SPE",
        "Cost-SPE",
        "Step-IDR",
        "Cost-DAR",
        "F1",
    ):
        assert metric in text
    assert (
        "Reference-path drift" in text and "100.0 [100.0, 100.0]" in text
    )  # the oracle solves every version
    assert len(page.images) == 3  # success per agent, the drift plot, the curves
    assert all(src.startswith("data:image/png;base64,") for src in page.images)


@pytest.mark.shared
def test_report_of_published_runs_with_flows_and_a_bad_file(tmp_path, tau_runs, workbench_runs, tau2_results):
    bad = add_corrupt_files(tmp_path / "bad")
    out = tmp_path / "report.html"
    report = build_report([tau_runs, workbench_runs, tau2_results, bad["headless"]], out, options=FAST)
    assert report.sections[0] == "runs" and report.sections[-1] == "inputs"
    assert "1 file(s) with problems" in out.read_text(encoding="utf-8").split("<main>")[0]  # named up top
    flows = [s for s in report.sections if s.startswith("flows-")]
    assert len(flows) >= 3  # τ-bench airline, WorkBench email, τ²-bench airline
    page = parse(out)
    text = " ".join(page.text)
    assert "headless.episodes.jsonl" in text and "no header line" in text  # the bad file is named
    assert "taubench-v1-airline" in text and "email" in text and "gpt-4o" in text
    assert "flow " + str(tau_runs / "flow.json") in text  # the given flow was replayed, not a new one
    assert "Read-only ceiling" in text and "Calibration of lookup scores" in text and "ECE" in text
    # WorkBench's runs are unjudged: its flow learns from all of them.
    assert "none has a verdict, so all" in text
    # τ-bench and WorkBench replay a flow; τ²-bench's example run (2 episodes) is too small to split.
    assert text.count("Replay from the record") == 2 and text.count("Too few tasks to learn") == 1
    # Self-contained: no script, nothing fetched, every image inline.
    assert page.scripts == 0
    assert all(u.startswith("data:") for u in page.urls), page.urls
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", out.read_text(encoding="utf-8"))


def test_command_line_writes_the_report_and_names_bad_files(tmp_path, tau2_results):
    bad = add_corrupt_files(tmp_path / "bad")
    out = tmp_path / "r.html"
    result = subprocess.run(
        [sys.executable, "-m", "toolshift", "report", str(tau2_results), str(bad["catalog"]), "--out", str(out),
         "--resamples", "50"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}" in " ".join(result.stdout.split()) and "broken.catalog.json" in result.stdout
    assert "broken.catalog.json" in out.read_text(encoding="utf-8")
    missing = subprocess.run(
        [sys.executable, "-m", "toolshift", "report", str(tmp_path / "nope"), "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr


@pytest.mark.slow
def test_demo_step_reports_the_runs_the_demo_kept(tmp_path, eco_runs):
    import io
    import shutil

    from rich.console import Console

    from toolshift.report import demo

    build, runs = eco_runs
    out = tmp_path / "demo-out"
    shutil.copytree(build, out / "ecosystem" / "build")
    shutil.copytree(runs, out / "ecosystem" / "runs")
    buffer = io.StringIO()
    path = demo.run(Console(file=buffer, width=300), out)
    said = buffer.getvalue()
    assert path == out / "report.html" and f"report: {path.resolve()}" in said
    assert "toolshift view" in said
    ids = parse(path).sections
    assert {"inputs", "runs", "benchmark-1"} <= set(ids)
    html = path.read_text(encoding="utf-8")
    assert "airline_results.json" in html  # the τ²-bench example is in it
    # the demo's runs: the baselines on their ecosystem, the τ²-bench example a run of its own
    part = html.split("By run, condition and agent")[1].split("By domain")[0]
    worlds = {h.split(" · ")[1] for h in re.findall(r'<th class="l" colspan="\d+">([^<]*)</th>', part)}
    assert "tau2 (converted)" in worlds and any(w.startswith("ecosystem eco-") for w in worlds), worlds
    subtitle = re.search(r"<header>.*?</header>", html, re.S).group(0)
    assert "1 τ²-bench result" in subtitle and not re.search(
        r"\b1 (episodes|catalogs|benchmark builds)\b", subtitle
    )


def test_runs_section_shows_pass_k_as_agents_results_computes_it(tmp_path):
    from toolshift.agents.results import summarize
    from toolshift.traces.episode import Outcome

    # Two tasks × three trials: t1 succeeds 3 of 3, t2 2 of 3 → pass^2 (1 + 1/3) / 2, pass^3 (1 + 0) / 2.
    wins = {"t1": [True, True, True], "t2": [True, False, True]}
    episodes = [
        make_episode(0).model_copy(
            update={
                "id": f"{task}-{trial}",
                "task_id": task,
                "trial": trial,
                "domain": "d",
                "outcome": Outcome(success=won),
            }
        )
        for task, results in wins.items()
        for trial, won in enumerate(results)
    ]
    write_episodes(tmp_path / "runs" / "a.episodes.jsonl", episodes)
    out = tmp_path / "report.html"
    build_report([tmp_path / "runs"], out, options=FAST)
    text = "".join(parse(out).text)
    expected = summarize(episodes, trials=3).pass_k
    assert f"{100 * expected[2].mean:.1f}" == "66.7" and f"{100 * expected[3].mean:.1f}" == "50.0"
    assert "pass^k % (95% CI)" in text
    assert "pass^2 66.7 [" in text and "pass^3 50.0 [" in text


class _TableParents(HTMLParser):
    """The class of the element each table opens in."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.parents: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.parents.append(self.stack[-1] if self.stack else "")
        if tag not in ("img", "br", "meta", "link", "hr", "input"):
            self.stack.append(f"{tag}.{dict(attrs).get('class') or ''}")

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop().split(".")[0] == tag:
                break


def test_every_table_scrolls_inside_its_card(tmp_path, eco_runs, tau_runs):
    build, runs = eco_runs
    out = tmp_path / "report.html"
    build_report([build, runs, tau_runs], out, options=FAST)
    p = _TableParents()
    p.feed(out.read_text(encoding="utf-8"))
    assert len(p.parents) >= 5
    assert set(p.parents) == {"div.table-scroll"}, p.parents


def test_per_version_plots_tick_whole_versions(tmp_path, eco_runs, monkeypatch):
    import matplotlib.pyplot as plt

    from toolshift.bench.ecosystem.paths import drift, drift_figure, load_references
    from toolshift.report.sections import benchmark

    build, runs = eco_runs
    # The drift figure's per-version panel (it ticked 1.0, 1.5 … 3.0 before).
    _, records = load_references(build)
    fig = drift_figure(drift(records, 3))
    panel = fig.axes[2]
    assert panel.get_xticks().tolist() == [1, 2, 3]
    assert [t.get_text() for t in panel.get_xticklabels()] == ["v1", "v2", "v3"]
    plt.close(fig)
    # The benchmark section's SR / P-R-F1 curves, captured as the report draws them.
    ticks: list[list[float]] = []
    real = benchmark.figure_png

    def capture(f, **kw):
        ticks.extend(ax.get_xticks().tolist() for ax in f.axes)
        return real(f, **kw)

    monkeypatch.setattr(benchmark, "figure_png", capture)
    build_report([build, runs], tmp_path / "report.html", options=FAST)
    assert ticks and all(t == [1, 2, 3] for t in ticks), ticks
