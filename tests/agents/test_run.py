"""`toolshift run`: resume after an interrupted run, configuration keys, invalid tasks, bad input."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.agents.config import RunConfig
from toolshift.agents.runner import plan_run, run_local
from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.taskfile import read_tasks
from toolshift.traces.store import iter_episodes

runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=True)


def _episodes(folder: Path) -> list:
    (path,) = folder.glob("run-*.episodes.jsonl")
    return list(iter_episodes(path))


def test_run_writes_episodes_results_and_flags_invalid_tasks(tasks_file, tmp_path):
    out = tmp_path / "run"
    result = _invoke("run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle",
                     "--trials", "2", "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    episodes = _episodes(out)
    assert len(episodes) == 6 and len({e.id for e in episodes}) == 6
    (results_path,) = out.glob("run-*.results.json")
    results = json.loads(results_path.read_text())
    assert results["invalid_tasks"] == ["impossible"]
    assert results["success"]["mean"] == 1.0 and results["judged_tasks"] == 2
    assert "invalid tasks" in result.output


def test_rerun_resumes_after_an_interrupted_run(tasks_file, tmp_path):
    out = tmp_path / "run"
    args = [
        "run",
        "--world",
        "clinic",
        "--tasks",
        str(tasks_file),
        "--model",
        "oracle",
        "--trials",
        "3",
        "--out",
        str(out),
    ]
    assert _invoke(*args).exit_code == 0
    (path,) = out.glob("run-*.episodes.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) == 1 + 9
    kept = {json.loads(line)["id"] for line in lines[1:5]}
    # A killed run: four finished episodes and half of a fifth line.
    path.write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    assert "5 to run, 4 already done" in result.output
    episodes = _episodes(out)
    assert len(episodes) == 9 and len({e.id for e in episodes}) == 9
    assert kept <= {e.id for e in episodes}
    again = _invoke(*args)
    assert "0 to run, 9 already done" in again.output
    assert len(_episodes(out)) == 9


def test_changed_configuration_is_never_mixed_in(tasks_file, tmp_path):
    out = tmp_path / "run"
    base = ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(out)]
    assert _invoke(*base).exit_code == 0
    assert _invoke(*base, "--max-turns", "5").exit_code == 0
    files = sorted(out.glob("run-*.episodes.jsonl"))
    assert len(files) == 2
    keys = {f.name.split(".")[0] for f in files}
    for f in files:
        assert {e.id.split(":")[0] for e in iter_episodes(f)} == {f.name.split(".")[0].removeprefix("run-")}
    assert len(keys) == 2


def test_changed_task_is_rerun(tasks, tmp_path):
    config = RunConfig(world="clinic", model="oracle")
    plan = plan_run(config, tasks, 1, tmp_path)
    asyncio.run(run_local(plan))
    edited = [tasks[0].model_copy(update={"public_request": "Cancel it, please."}), tasks[1]]
    again = plan_run(config, edited, 1, tmp_path)
    assert [(t.id, k) for t, k in again.todo] == [(tasks[0].id, 0)]


def test_bad_input_is_one_clear_line(tasks_file, tmp_path):
    r = _invoke(
        "run", "--world", "clinik", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(tmp_path)
    )
    assert isinstance(r.exception, BadInputError) and "unknown domain 'clinik'" in str(r.exception)
    assert "did you mean clinic" in str(r.exception)
    r = _invoke(
        "run",
        "--world",
        "clinic",
        "--tasks",
        str(tmp_path / "none.jsonl"),
        "--model",
        "oracle",
        "--out",
        str(tmp_path),
    )
    assert isinstance(r.exception, BadInputError) and "no such task file" in str(r.exception)
    r = _invoke(
        "run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "gpt4", "--out", str(tmp_path)
    )
    assert isinstance(r.exception, BadInputError) and "unknown model" in str(r.exception)
    base = ["run", "--world", "clinic", "--tasks", str(tasks_file), "--out", str(tmp_path / "never")]
    r = _invoke(*base, "--model", "scripted")  # a user simulator is not an agent
    assert isinstance(r.exception, BadInputError) and r.exception.field == "model"
    r = _invoke(*base, "--model", "oracle", "--user", "oracle")  # nor is a scripted policy a user
    assert isinstance(r.exception, BadInputError) and r.exception.field == "user"
    with socket.socket() as s:  # a port nobody listens on once the socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = _invoke("run", "--world", f"http://127.0.0.1:{port}/mcp", "--tasks", str(tasks_file),
                "--model", "oracle", "--out", str(tmp_path / "never"))  # fmt: skip
    assert isinstance(r.exception, BadInputError) and r.exception.field == "world"
    assert "cannot open an MCP session" in str(r.exception)
    assert not (tmp_path / "never").exists() or not list((tmp_path / "never").glob("run-*"))
    r = _invoke(*base[:-1], str(tasks_file), "--model", "oracle")
    assert isinstance(r.exception, BadInputError) and r.exception.field == "out"


def test_task_file_errors_name_record_and_field(tasks_file, tmp_path):
    lines = tasks_file.read_text().splitlines()
    broken = json.loads(lines[2])
    del broken["public_request"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], json.dumps(broken)]) + "\n")
    with pytest.raises(BadInputError) as err:
        read_tasks(bad)
    assert err.value.record == 1 and err.value.field == "public_request"
    bad.write_text(lines[1] + "\n" + lines[1] + "\n")
    with pytest.raises(BadInputError, match="repeats"):
        read_tasks(bad)


def test_replay_reexecutes_a_recorded_run(tasks_file, tmp_path):
    first = tmp_path / "first"
    assert (
        _invoke(
            "run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(first)
        ).exit_code
        == 0
    )
    (recorded,) = first.glob("run-*.episodes.jsonl")
    again = tmp_path / "again"
    result = _invoke("run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "replay",
                     "--replay-from", str(recorded), "--out", str(again))  # fmt: skip
    assert result.exit_code == 0, result.output
    replayed = {e.task_id: e for e in _episodes(again)}
    original = {e.task_id: e for e in iter_episodes(recorded)}
    assert {k: e.world_diff for k, e in replayed.items()} == {k: e.world_diff for k, e in original.items()}
    assert replayed["demo-cancel"].outcome.success is True and replayed["demo-cancel"].model == "replay"


def test_results_command_reprints_a_run_folder(tasks_file, tmp_path):
    out = tmp_path / "run"
    assert (
        _invoke(
            "run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(out)
        ).exit_code
        == 0
    )
    result = _invoke("agents", "results", str(out))
    assert result.exit_code == 0, result.output
    (config,) = [p for p in out.glob("run-*.json") if not p.name.endswith(".results.json")]
    assert json.loads(config.read_text())["key"] in result.output and "oracle on clinic" in result.output
    as_json = subprocess.run(
        [sys.executable, "-m", "toolshift", "agents", "results", str(out), "--episodes", "--json"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr
    (run,) = json.loads(as_json.stdout)["runs"]  # stdout: one JSON document, nothing else
    assert run["key"] == json.loads(config.read_text())["key"] and (run["model"], run["world"]) == (
        "oracle",
        "clinic",
    )
    assert run["results"]["format"] == "toolshift.run-results/1"
    assert run["results"]["invalid_tasks"] == ["impossible"]  # the oracle cannot solve it: not scored
    rows = {e["task"]: e for e in run["episodes"]}
    assert rows["demo-cancel"]["success"] is True and rows["demo-cancel"]["strict_success"] is True
    assert rows["demo-cancel"]["collateral_changes"] == 0 and rows["impossible"]["success"] is False
    empty = _invoke("agents", "results", str(tmp_path))
    assert isinstance(empty.exception, BadInputError)
    config.write_text('{"key": ')  # a torn configuration file is named, not a traceback
    torn = _invoke("agents", "results", str(out))
    assert isinstance(torn.exception, BadInputError) and torn.exception.source == str(config)


def test_tasks_of_another_domain_are_refused(tasks_file, tmp_path):
    r = _invoke("run", "--world", "procurement", "--tasks", str(tasks_file), "--model", "oracle",
                "--out", str(tmp_path / "run"))  # fmt: skip
    assert isinstance(r.exception, BadInputError)
    assert r.exception.record == 0 and r.exception.field == "domain" and "'clinic' task" in str(r.exception)
    assert not (tmp_path / "run").exists()


def _closed_url() -> str:
    with socket.socket() as s:  # nobody listens on it once the socket is closed
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _configs(folder: Path) -> dict[str, dict]:
    found = [p for p in folder.glob("run-*.json") if not p.name.endswith(".results.json")]
    return {json.loads(p.read_text())["key"]: json.loads(p.read_text())["config"] for p in found}


def test_the_endpoint_is_part_of_the_run_key(tasks_file, tmp_path, monkeypatch):
    """D24: one folder run against two endpoints is two runs; the second never resumes the first's episodes.

    (The key ignored TOOLSHIFT_BASE_URL: the second endpoint reported "0 to run, 3 already done".) The
    endpoints are unreachable, so each run stops at its first model call; a run that never judged an
    episode leaves no files behind (issue 25), so the run keys are read from what each run prints.
    """
    out = tmp_path / "run"
    args = ["run", "--world", "clinic", "--tasks", str(tasks_file), "--limit", "1", "--model", "openai:m",
            "--no-check", "--out", str(out)]  # fmt: skip
    for var in ("TOOLSHIFT_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    first, second, third = _closed_url(), _closed_url().replace("127.0.0.1", "localhost"), _closed_url()

    def key_of(result) -> str:
        assert result.exit_code != 0 and "1 to run, 0 already done" in result.output, result.output
        return re.search(r"run ([0-9a-f]{12})", result.output).group(1)

    monkeypatch.setenv("TOOLSHIFT_BASE_URL", first)
    key_first = key_of(_invoke(*args))
    monkeypatch.setenv("TOOLSHIFT_BASE_URL", second)
    key_second = key_of(_invoke(*args))
    monkeypatch.delenv("TOOLSHIFT_BASE_URL")
    monkeypatch.setenv("OPENAI_BASE_URL", third)
    key_third = key_of(_invoke(*args))
    assert len({key_first, key_second, key_third}) == 3
    assert (
        key_of(_invoke(*args, "--base-url", first)) == key_first
    )  # the flag is the first endpoint's run again
    # An endpoint no model of the run uses does not change its key.
    plain, with_env = tmp_path / "plain", tmp_path / "env"
    oracle = ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle", "--limit", "1"]
    assert _invoke(*oracle, "--out", str(plain)).exit_code == 0
    monkeypatch.setenv("TOOLSHIFT_BASE_URL", first)
    assert _invoke(*oracle, "--out", str(with_env)).exit_code == 0
    assert _configs(plain) == _configs(with_env) and next(iter(_configs(plain).values()))["base_url"] is None
    refused = _invoke(*oracle, "--out", str(plain), "--base-url", first)
    assert isinstance(refused.exception, BadInputError) and refused.exception.field == "base_url"
