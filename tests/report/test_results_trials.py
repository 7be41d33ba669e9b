"""The repository's own episode files (docs/results/episodes, the loop run unpacked) open with every trial what
its run made it (D320): one trial of a task and version per run and condition, no pass^k, the gateway's
recordings apart, and each loop condition's figures per version equal to the loop's own `results.json`."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest

from toolshift.report.inputs import discover
from toolshift.report.view.aggregate import aggregate
from toolshift.report.view.server import Viewer

EPISODES = Path(__file__).resolve().parents[2] / "docs" / "results" / "episodes"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The kept episode files, the loop run's tarball unpacked beside them as its README says."""
    root = tmp_path_factory.mktemp("results")
    for gz in EPISODES.glob("*.episodes.jsonl.gz"):
        shutil.copyfile(gz, root / gz.name)
    with tarfile.open(EPISODES / "loop-full.tar.gz") as tar:
        tar.extractall(root, filter="data")
    return root


def test_every_trial_count_is_the_runs_own(results, tmp_path):
    inputs = discover([results], cache=tmp_path / "cache")
    viewer = Viewer(inputs)
    rs = viewer.runs
    everything = aggregate(rs, np.arange(rs.size))
    recordings = sum(
        sum(1 for _ in p.open(encoding="utf-8")) - 1
        for p in (results / "loop-full").rglob("*recordings.jsonl")
    )
    assert everything["recordings"] == recordings > 0  # shown as recordings, never counted as episodes
    assert everything["pass_k"] == {} and everything["strict_pass_k"] == {}  # every run made one trial a task
    assert set(everything["trials"]) == {"1"}
    # the runs: the baselines' command, steward eval's command (its four model rows), the loop's folder
    runs = viewer.page({"limit": "1"})["facets"]["run"]
    assert len(runs) == 3 and any(r.endswith("loop-full") for r, _ in runs)
    # the loop's five conditions are facets, and each shares its first version with `off` (counted once)
    conditions = dict(viewer.page({"kind": "episode", "limit": "1"})["facets"]["condition"])
    assert {"off", "steward", "flows", "evolve", "all", "standard", "domain-tools"} <= set(conditions)
    assert everything["copies"] == 4 * 84
    # per condition and version, the loop's episodes are its results.json's: 84 tasks, one trial each, same SR
    loop = json.loads((results / "loop-full" / "results.json").read_text(encoding="utf-8"))
    for condition, by_version in loop["conditions"].items():
        for version, figures in by_version.items():
            path = results / "loop-full" / condition / version / "episodes.jsonl"
            rows = viewer.selection({"file": str(path)})[3]
            got = aggregate(rs, rows)
            assert got["trials"] == {"1": figures["tasks"]} and got["recordings"] == 0, (condition, version)
            assert got["success"]["n"] == figures["SR"]["n"] == figures["tasks"], (condition, version)
            assert got["success"]["mean"] == pytest.approx(figures["SR"]["mean"]), (condition, version)
            assert got["strict_success"]["mean"] == pytest.approx(figures["strict SR"]["mean"])
    # one task of one version in one condition: one row of the list is its episode, one its recording
    recorded = viewer.page({"kind": "recording", "condition": "steward", "limit": "1"})["rows"][0]
    one = viewer.page({"task": recorded["task_id"], "condition": "steward", "version": recorded["version"]})
    assert sorted(r["kind"] for r in one["rows"]) == ["episode", "recording"]
    pooled = aggregate(rs, viewer.selection({"task": "accounts_payable-0031"})[3])
    assert (
        set(pooled["trials"]) == {"1"} and pooled["pass_k"] == {}
    )  # 12 files of one task: no trial of another
