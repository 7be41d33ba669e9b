"""`toolshift traces`: convert, stats (with catalog discovery and unknown tools), split, export, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.traces.demo import EXAMPLE_RUN
from toolshift.traces.store import iter_episodes
from toolshift.traces.tau2 import read_results

DATA = Path(__file__).parent / "data"
runner = CliRunner()


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


@pytest.mark.shared
def test_convert_then_stats_on_taubench(tmp_path, shared_data):
    out = _ok(
        "traces",
        "convert",
        "taubench-v1",
        str(shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json"),
        "--out",
        str(tmp_path),
    )
    assert "kept" in out and "100" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "taubench-v1-airline.catalog.json",
        "taubench-v1-airline.episodes.jsonl",
    ]
    stats = json.loads(_ok("traces", "stats", str(tmp_path / "taubench-v1-airline.episodes.jsonl"), "--json"))
    (group,) = stats["groups"]
    assert (group["domain"], group["agent"], group["episodes"], group["tasks"], group["turns"]) == (
        "taubench-v1-airline",
        "gpt-4o",
        100,
        50,
        1229,
    )
    assert (
        group["replies_pct"] == 53.46
        and group["write_turns_pct"] == 9.85
        and group["read_only_turns_pct"] == 27.42
    )
    assert stats["missing_catalogs"] == [] and group["unknown_tools"] == {}


@pytest.mark.shared
def test_stats_reports_unknown_tools_without_a_catalog(tmp_path, shared_data):
    _ok(
        "traces",
        "convert",
        "taubench-v1",
        str(shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json"),
        "--out",
        str(tmp_path),
    )
    lonely = tmp_path / "elsewhere"
    lonely.mkdir()
    (tmp_path / "taubench-v1-airline.episodes.jsonl").rename(lonely / "taubench-v1-airline.episodes.jsonl")
    stats = json.loads(_ok("traces", "stats", str(lonely / "taubench-v1-airline.episodes.jsonl"), "--json"))
    assert stats["missing_catalogs"] == ["taubench-v1-airline"]
    assert stats["total"]["unknown_tools"]["get_reservation_details"] == 187
    assert stats["total"]["unknown_turns_pct"] == pytest.approx(100 - 53.46, abs=0.01)
    text = _ok("traces", "stats", str(lonely / "taubench-v1-airline.episodes.jsonl"))
    assert "unknown tools" in text and "14 names" in text
    given = json.loads(
        _ok(
            "traces",
            "stats",
            str(lonely / "taubench-v1-airline.episodes.jsonl"),
            "--catalog",
            str(tmp_path / "taubench-v1-airline.catalog.json"),
            "--json",
        )
    )
    assert given["total"]["unknown_tools"] == {}


@pytest.mark.shared
def test_workbench_domain_folder_and_grouping(tmp_path, shared_data):
    _ok(
        "traces",
        "convert",
        "workbench",
        str(shared_data / "workbench" / "results" / "email"),
        "--out",
        str(tmp_path),
    )
    stats = json.loads(
        _ok("traces", "stats", str(tmp_path / "email.episodes.jsonl"), "--by", "agent,harness", "--json")
    )
    assert [(g["agent"], g["harness"].rsplit("/", 1)[1], g["episodes"]) for g in stats["groups"]] == [
        ("claude-2", "all", 90), ("claude-2", "domains", 90), ("gpt-4", "all", 90), ("gpt-4", "domains", 90),
    ]  # fmt: skip


def test_split_and_export(tmp_path):
    _ok("traces", "convert", "tau2", str(EXAMPLE_RUN), "--out", str(tmp_path / "conv"))
    episodes = tmp_path / "conv" / "airline.episodes.jsonl"
    _ok("traces", "split", str(episodes), "--out", str(tmp_path / "split"))
    train = list(iter_episodes(tmp_path / "split" / "airline.train.episodes.jsonl"))
    test = list(iter_episodes(tmp_path / "split" / "airline.test.episodes.jsonl"))
    assert len(train) + len(test) == 2 and {e.task_id for e in train} == {
        "1",
        "7",
    }  # positions 0, 1: both train
    _ok("traces", "export-tau2", str(episodes), "--out", str(tmp_path / "back.json"))
    again = read_results(tmp_path / "back.json")
    assert [e.id for e in again.episodes] == [e.id for e in read_results(EXAMPLE_RUN).episodes]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    return subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, env=env, check=False
    )


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "x.episodes.jsonl"
    bad.write_text(
        '{"format": "toolshift.episodes/1"}\n{"format": "toolshift.episode/1", "id": "a", "domain": "d"}\n'
    )
    result = _cli("traces", "stats", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "record 0" in result.stderr and "task_id" in result.stderr
    skipped = _cli("traces", "stats", str(bad), "--skip-bad", "--json")
    assert skipped.returncode == 0 and json.loads(skipped.stdout)["total"]["episodes"] == 0


def test_unknown_converter_and_missing_input_are_bad_input(tmp_path):
    unknown = _cli("traces", "convert", "agentbench", str(tmp_path), "--out", str(tmp_path / "o"))
    assert unknown.returncode == 2 and "unknown converter 'agentbench'" in unknown.stderr
    missing = _cli("traces", "convert", "workbench", str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert missing.returncode == 2 and "no such WorkBench results file or folder" in missing.stderr


def test_stats_refuses_an_unknown_grouping(tmp_path):
    _ok("traces", "convert", "tau2", str(EXAMPLE_RUN), "--out", str(tmp_path))
    result = _cli("traces", "stats", str(tmp_path / "airline.episodes.jsonl"), "--by", "domain,colour")
    assert result.returncode == 2 and "--by" in result.stderr and "colour" in result.stderr


def test_catalog_world_matches_the_worlds_tools(tmp_path):
    world_mod = pytest.importorskip("toolshift.world")
    _ok("traces", "catalog-world", "clinic", "--out", str(tmp_path))
    from toolshift.traces.catalog import load_catalog

    catalog = load_catalog(tmp_path / "clinic.catalog.json")
    assert catalog.effects() == {t.name: t.effect for t in world_mod.World.load("clinic").tools}


def test_export_with_a_missing_policy_and_catalog_of_a_dead_server_are_one_line(tmp_path):
    _ok("traces", "convert", "tau2", str(EXAMPLE_RUN), "--out", str(tmp_path))
    episodes = str(tmp_path / "airline.episodes.jsonl")
    policy = _cli("traces", "export-tau2", episodes, "--out", str(tmp_path / "r.json"), "--policy", "nope.md")
    assert policy.returncode == 2 and "--policy" in policy.stderr and "Traceback" not in policy.stderr
    dead = _cli("traces", "catalog-mcp", "http://127.0.0.1:9/mcp", "--domain", "x", "--out", str(tmp_path))
    assert dead.returncode == 1 and dead.stderr.strip().count("\n") == 0
    assert "ConnectError" in dead.stderr and "TaskGroup" not in dead.stderr


def test_an_output_path_under_a_regular_file_is_one_line_bad_input(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = _cli("traces", "convert", "tau2", str(EXAMPLE_RUN), "--out", str(blocker / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{blocker}" in result.stderr and "cannot use this path" in result.stderr


def test_malformed_published_runs_end_in_one_line_and_exit_2(tmp_path):
    tau2 = json.loads(EXAMPLE_RUN.read_text())
    tau2["simulations"][1]["trial"] = "second"
    (tmp_path / "tau2.json").write_text(json.dumps(tau2))
    (tmp_path / "gpt-4o-airline.json").write_text(
        json.dumps([{"task_id": 0, "reward": True, "info": {}, "traj": 7}])
    )
    wb = tmp_path / "wb" / "results" / "email" / "gpt-4_all_2024-03-21_15-21-12.csv"
    wb.parent.mkdir(parents=True)
    wb.write_text('"query","function_calls","full_response","error"\n"q","[]","{}",""\n')
    tasks = tmp_path / "wb" / "processed" / "queries_and_answers" / "email_queries_and_answers.csv"
    tasks.parent.mkdir(parents=True)
    tasks.write_text('"question","answer"\n"q","[]"\n')
    cases = [
        ("tau2", tmp_path / "tau2.json", tmp_path / "tau2.json", "record 1: field 'trial'"),
        (
            "taubench-v1",
            tmp_path / "gpt-4o-airline.json",
            tmp_path / "gpt-4o-airline.json",
            "record 0: field 'traj'",
        ),
        ("workbench", wb, tasks, "record header: field 'query'"),
    ]
    for kind, path, named, where in cases:
        result = _cli("traces", "convert", kind, str(path), "--out", str(tmp_path / "out"))
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
        assert f"{named}: {where}" in result.stderr.replace("\n", "")
