"""The ecosystem commands of `toolshift bench`: a run end to end, and bad input as one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from toolshift.bench.build import build_domain, write_manifest
from toolshift.cli import app

runner = CliRunner()


def _toolshift(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, timeout=900, check=False
    )


@pytest.fixture(scope="module")
def small_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli-build")
    build_domain(out, "payroll", seed=0, per_domain=10)
    write_manifest(out, ["payroll"], 0, 10)
    return out


@pytest.mark.slow
def test_evolve_reference_baseline_eval(small_build, tmp_path):
    def ok(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output + repr(result.exception)
        return result.output

    out = ok("bench", "evolve", str(small_build), "--versions", "3")
    assert "v3" in out and "ecosystem eco-" in out
    md = tmp_path / "eco.md"
    out = ok("bench", "reference", str(small_build), "--markdown", str(md))
    assert "30 task × version instances: 30 valid" in out.replace("\n", " ")
    assert (tmp_path / "eco_drift.png").is_file() and "| v3 |" in md.read_text()
    runs = tmp_path / "runs"
    ok("bench", "baseline", str(small_build), "--agent", "oracle", "--split", "all", "--out", str(runs))
    assert (runs / "oracle.episodes.jsonl").is_file()
    res = tmp_path / "baselines.md"
    js = tmp_path / "baselines.json"
    ok("bench", "eval", str(runs), "--build", str(small_build), "--markdown", str(res), "--json-out", str(js))
    body = json.loads(js.read_text())
    assert body["agents"]["oracle"]["all"]["Strict-SR"]["mean"] == 1.0
    assert body["agents"]["oracle"]["all"]["Collateral"]["mean"] == 0.0
    assert body["collateral"] == {"oracle": []}
    text = res.read_text()
    assert "## oracle" in text and "| all | 100.0 [100.0, 100.0] |" in text
    assert "toolshift bench baseline" in text  # the command that recorded the runs


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["bench", "evolve", "/nonexistent/build"], "not a bench build"),
        (["bench", "reference", "/nonexistent/build"], "no evolved ecosystem here"),
        (
            ["bench", "eval", "/nonexistent/runs", "--build", "/nonexistent/build"],
            "no evolved ecosystem here",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle):
    result = _toolshift(*args)
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2  # one message (rich may wrap a long line once)


@pytest.mark.slow
def test_unknown_agent_and_domain_are_refused(small_build):
    runner.invoke(app, ["bench", "evolve", str(small_build), "--versions", "2"])
    result = _toolshift("bench", "baseline", str(small_build), "--agent", "gpt-4", "--out", "/tmp/unused")
    assert result.returncode == 2 and "unknown agent 'gpt-4'" in result.stderr
    result = _toolshift("bench", "evolve", str(small_build), "--domains", "nope")
    assert result.returncode == 2 and "not domains of this build: nope" in result.stderr


@pytest.mark.slow
def test_settings_users_and_cost_models_are_checked(small_build):
    runner.invoke(app, ["bench", "evolve", str(small_build), "--versions", "2"])
    cases = [
        (["bench", "baseline", str(small_build), "--setting", "everything"], "unknown setting 'everything'"),
        (["bench", "baseline", str(small_build), "--user", "gpt-4"], "unknown user simulator 'gpt-4'"),
        (["bench", "serve", str(small_build), "--setting", "task-tools"], "give --task"),
        (["bench", "serve", str(small_build), "payroll"], "the standard setting serves every domain"),
        (["bench", "serve", str(small_build), "--task", "nope", "--setting", "task-tools"], "task 'nope'"),
        (["bench", "evolve", str(small_build), "--cost-model", "scripted"], "needs a chat model"),
    ]
    for args, needle in cases:
        result = _toolshift(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert needle in result.stderr, (args, result.stderr)


def test_settings_are_listed():
    result = runner.invoke(app, ["bench", "settings"])
    assert result.exit_code == 0, result.output
    for name in ("standard", "domain-tools", "task-tools", "oracle-tools", "oracle-path"):
        assert name in result.output
