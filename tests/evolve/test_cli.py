"""`toolshift evolve` end to end on a fresh folder: seeds, run, show, resume, select, report; bad input is exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from toolshift.cli import app

RUNNER = CliRunner()


def _ok(*args: str):
    result = RUNNER.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_seeds_run_resume_select_report(tmp_path: Path):
    seeds, out, md = tmp_path / "seeds.jsonl", tmp_path / "run", tmp_path / "results" / "evolve.md"
    _ok("evolve", "seeds", "--out", str(seeds))
    assert (
        "9 seed tasks over 3 domains" in RUNNER.invoke(app, ["evolve", "seeds", "--out", str(seeds)]).output
    )
    run = ["evolve", "run", "--seeds", str(seeds), "--out", str(out), "--solver", "noisy-oracle:0.7",
           "--attempts", "4", "--generations", "1"]  # fmt: skip
    first = _ok(*run, "--max-steps", "2")
    assert "final dataset" not in first.output  # stopped before the last step: nothing selected yet
    assert len(list((out / "programs").glob("*.s*.json"))) == 2
    again = _ok(*run)
    assert "resuming" in again.output and "final dataset" in again.output
    assert len(list((out / "programs").glob("*.s*.json"))) == 9
    shown = _ok("evolve", "show", str(out))
    assert "demo-cancel.s0000" in shown.output
    one = _ok("evolve", "show", str(out), "--program", "demo-cancel")
    assert "EVOLVE-BLOCK-START" in one.output
    _ok("evolve", "resume", str(out), "--generations", "2")
    assert len(list((out / "programs").glob("*.s*.json"))) == 18
    _ok("evolve", "select", str(out))
    assert (out / "final" / "tasks.jsonl").is_file()
    _ok("evolve", "report", str(out), "--out", str(md), "--embeddings", "tfidf")
    text = md.read_text()
    assert "Made by: `toolshift evolve report" in text and "## Completion rates before and after" in text
    assert "## Lineages: before and after" in text and "## Naturalness rubric" in text
    for png in ("completion", "features", "heatmap", "embedding", "cooccurrence", "lineages"):
        assert (md.parent / f"evolve-{png}.png").stat().st_size > 1000


def _toolshift(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, timeout=300
    )


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path):
    missing = _toolshift(
        "evolve", "run", "--seeds", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "r")
    )
    assert missing.returncode == 2 and "no such task file" in missing.stderr
    bad = _toolshift("evolve", "run", "--seeds", "x", "--out", str(tmp_path / "r"), "--solver", "gpt")
    assert bad.returncode == 2 and "unknown model 'gpt'" in bad.stderr
    not_a_run = _toolshift("evolve", "resume", str(tmp_path))
    assert not_a_run.returncode == 2 and "not an evolve run" in not_a_run.stderr
    for result in (missing, bad, not_a_run):
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_seeds_from_another_benchmark_and_a_bad_world_is_one_line_exit_2(tmp_path: Path):
    import pytest

    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from toolshift.taskfile import read_tasks

    out = tmp_path / "seeds.jsonl"
    _ok(
        "evolve",
        "seeds",
        "--no-builtin",
        "--world",
        "bfcl",
        "--per-world",
        "2",
        "--world-calls",
        "5-9",
        "--out",
        str(out),
    )
    tasks = read_tasks(out)
    assert len(tasks) == 2 and all(
        t.judge == "bfcl-multi-turn-checker" and 5 <= len(t.gold_path) <= 9 for t in tasks
    )
    for world in ("nosuch", "tau2-airline:x"):
        result = _toolshift("evolve", "seeds", "--no-builtin", "--world", world, "--out", str(out))
        lines = [x for x in result.stderr.splitlines() if x.strip()]
        assert result.returncode == 2 and len(lines) == 1 and "world" in lines[0], result.stderr
