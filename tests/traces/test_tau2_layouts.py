"""τ²-bench runs in every layout its own tooling and leaderboard read: a bare list of simulations, one simulation,
a leaderboard submission (its files trimmed by τ²'s own trimmer), metadata without simulations, a partial run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.traces.store import iter_episodes
from toolshift.traces.tau2 import convert_tau2, tau2_files

runner = CliRunner()
GROK3 = "tau2/blakeelias_grok-3/2025-10-13T00-01-41_airline_llm_agent_grok-3_user_simulator_grok-3.json"
GPT41_RETAIL = "published-runs/tau2/sierra_model_training_gpt-4.1/gpt-4.1_retail_defautl_gpt-4.1_1trials.json"


def _convert(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["traces", "convert", "tau2", *args])
    return result.exit_code, " ".join(result.output.split())


def _refused(*args: str) -> str:
    """The real command's refusal: exit 2 and one line on stderr, nothing on stdout."""
    done = subprocess.run([sys.executable, "-m", "toolshift", "traces", "convert", "tau2", *args],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    return done.stderr


def _results(shared_data: Path) -> dict:
    return json.loads((shared_data / GPT41_RETAIL).read_text())


@pytest.mark.shared
def test_a_bare_list_and_one_simulation_convert_with_the_domain_their_name_holds(
    tmp_path, shared_data
) -> None:
    doc = _results(shared_data)
    (tmp_path / "gpt41_retail_sims.json").write_text(json.dumps(doc["simulations"][:5]))
    (tmp_path / "task_3_simulation.json").write_text(json.dumps(doc["simulations"][3]))
    code, out = _convert(str(tmp_path / "gpt41_retail_sims.json"), "--out", str(tmp_path / "a"))
    assert code == 0, out
    episodes = list(iter_episodes(tmp_path / "a" / "retail.episodes.jsonl"))
    reference = convert_tau2(shared_data / GPT41_RETAIL).episodes[:5]
    assert [e.messages for e in episodes] == [e.messages for e in reference]
    assert {(e.domain, e.agent) for e in episodes} == {("retail", "gpt41_retail_sims")}
    # no domain in the name: refused in one line, then read with --domain
    assert "pass --domain" in _refused(str(tmp_path / "task_3_simulation.json"), "--out", str(tmp_path / "b"))
    code, out = _convert(
        str(tmp_path / "task_3_simulation.json"), "--domain", "retail", "--out", str(tmp_path / "b")
    )
    assert code == 0, out
    (one,) = iter_episodes(tmp_path / "b" / "retail.episodes.jsonl")
    assert one.messages == reference[3].messages


@pytest.mark.shared
def test_a_leaderboard_submission_trimmed_by_taus_own_trimmer_converts(tmp_path, shared_data) -> None:
    sub = tmp_path / "my-agent_2025-12-01"
    (sub / "trajectories").mkdir(parents=True)
    source = sub / "trajectories" / "retail_results.json"
    source.write_text(json.dumps(_results(shared_data)))
    trimmer = shared_data.parent / "peers" / "tau2-bench" / "src" / "tau2" / "scripts" / "leaderboard"
    if not (trimmer / "trim_trajectories.py").is_file():
        pytest.skip(f"τ²-bench's trimmer not found in {trimmer}")
    subprocess.run([sys.executable, str(trimmer / "trim_trajectories.py"), str(source), "--target-mb", "0.8",
                    "--truncate-content", "--in-place"], check=True, capture_output=True)  # fmt: skip
    trimmed = json.loads(source.read_text())
    assert all("id" not in m for s in trimmed["simulations"] for m in s["messages"] if m["role"] == "tool")
    (sub / "submission.json").write_text(json.dumps({
        "model_name": "my-agent", "trajectories_available": True,
        "trajectory_files": {"retail": "retail_results.json"},
    }))  # fmt: skip
    assert tau2_files(tmp_path) == [source] == tau2_files(sub)
    code, out = _convert(str(tmp_path), "--out", str(tmp_path / "out"))
    assert code == 0, out
    assert "trimmed for size" in out
    got = list(iter_episodes(tmp_path / "out" / "retail.episodes.jsonl"))
    full = convert_tau2(shared_data / GPT41_RETAIL).episodes
    assert len(got) == len(full) == 40
    # tool messages without ids still answer their calls, in order
    for mine, theirs in zip(got, full, strict=True):
        assert [m.name for m in mine.messages if m.role == "tool"] == [
            m.name for m in theirs.messages if m.role == "tool"
        ]


def test_metadata_without_simulations_is_refused_in_one_line(tmp_path) -> None:
    run = tmp_path / "voice_run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({
        "info": {"environment_info": {"domain_name": "retail"}}, "tasks": [],
        "simulation_index": [{"id": "s1", "task_id": "1", "trial": 0}],
    }))  # fmt: skip
    out = _refused(str(run), "--out", str(tmp_path / "out"))
    assert "no simulations" in out and "simulation index" in out


@pytest.mark.shared
def test_a_partial_run_converts_and_says_how_much_it_holds(tmp_path, shared_data) -> None:
    code, out = _convert(str(shared_data / "published-runs" / GROK3), "--out", str(tmp_path))
    assert code == 0, out
    assert "a partial run: 41 of the 200 simulations its config describes (50 tasks × 4 trials)" in out
    code, out = _convert(str(shared_data / GPT41_RETAIL), "--out", str(tmp_path / "whole"))
    assert code == 0 and "a partial run" not in out
