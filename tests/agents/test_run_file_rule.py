"""One rule for a run file's lines, applied alike by the run planner, the writer, `agents results` and `traces stats`.

A complete last line without its newline is an episode; a torn last line (a kill mid-append) is not done
and is cut on the next append; a bad line anywhere else is refused, naming the file and the line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.agents.config import RunConfig
from toolshift.agents.runner import plan_run
from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.taskfile import read_tasks

runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=True)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tasks) -> tuple[Path, list[str]]:
    """A finished oracle run of 2 tasks × 3 trials: its folder, and its episode file's lines."""
    from toolshift.taskfile import write_tasks

    folder = tmp_path_factory.mktemp("finished")
    tasks_file = write_tasks(folder / "tasks.jsonl", tasks)
    args = _run_args(tasks_file, folder / "run")
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    (path,) = (folder / "run").glob("run-*.episodes.jsonl")
    return folder, path.read_text().splitlines(keepends=True)


def _run_args(tasks_file: Path, out: Path, trials: int = 3) -> list[str]:
    return ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle", "--trials", str(trials),
            "--no-check", "--out", str(out)]  # fmt: skip


def _variant(finished_run, tmp_path: Path, damage) -> tuple[Path, Path, list[str]]:
    """A copy of the finished run whose episode file's lines went through `damage`."""
    import shutil

    folder, lines = finished_run
    shutil.copytree(folder / "run", tmp_path / "run")
    (path,) = (tmp_path / "run").glob("run-*.episodes.jsonl")
    path.write_text("".join(damage(list(lines))))
    return tmp_path / "run", folder / "tasks.jsonl", lines


def _planned(folder: Path, tasks_file: Path) -> int:
    """Episodes the planner counts as done."""
    plan = plan_run(RunConfig(world="clinic", model="oracle"), read_tasks(tasks_file), 3, folder)
    return 6 - len(plan.todo)


def _results_episodes(folder: Path) -> int:
    result = _invoke("agents", "results", str(folder))
    assert result.exit_code == 0, result.output
    return int(re.search(r"episodes\s*│\s*(\d+)", result.output).group(1))


def _stats_episodes(folder: Path) -> tuple[int, int]:
    (path,) = folder.glob("run-*.episodes.jsonl")
    result = _invoke("traces", "stats", str(path), "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    return payload["total"]["episodes"], payload["torn_last_lines"]


def _episode_lines(folder: Path) -> list[str]:
    (path,) = folder.glob("run-*.episodes.jsonl")
    text = path.read_text()
    assert text.endswith("\n")
    return text.splitlines()[1:]


def test_a_complete_last_line_without_newline_is_done_everywhere_and_kept(finished_run, tmp_path):
    def no_newline(lines):
        lines[-1] = lines[-1].rstrip("\n")
        return lines

    folder, tasks_file, lines = _variant(finished_run, tmp_path, no_newline)
    assert _planned(folder, tasks_file) == 6
    assert _results_episodes(folder) == 6
    assert _stats_episodes(folder) == (6, 0)
    result = _invoke(*_run_args(tasks_file, folder, trials=4))  # same configuration, a fourth trial each
    assert result.exit_code == 0, result.output
    assert "2 to run, 6 already done" in result.output
    kept = _episode_lines(folder)
    assert len(kept) == 8 and kept[:6] == [line.rstrip("\n") for line in lines[1:]]  # the writer kept it


def test_a_torn_last_line_is_not_done_anywhere_and_cut_by_the_writer(finished_run, tmp_path):
    def torn(lines):
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        return lines

    folder, tasks_file, lines = _variant(finished_run, tmp_path, torn)
    assert _planned(folder, tasks_file) == 5
    assert _results_episodes(folder) == 5
    assert _stats_episodes(folder) == (5, 1)
    result = _invoke(*_run_args(tasks_file, folder))
    assert result.exit_code == 0, result.output
    assert "1 to run, 5 already done" in result.output
    kept = _episode_lines(folder)
    assert len(kept) == 6 and kept[:5] == [line.rstrip("\n") for line in lines[1:6]]
    assert all(json.loads(line)["id"] for line in kept)


def test_a_corrupt_middle_line_is_refused_everywhere_naming_file_and_line(finished_run, tmp_path):
    def corrupt(lines):
        lines[3] = lines[3][:40] + "\n"
        return lines

    folder, tasks_file, _ = _variant(finished_run, tmp_path, corrupt)
    (path,) = folder.glob("run-*.episodes.jsonl")
    before = path.read_bytes()
    with pytest.raises(BadInputError, match="line 4") as planned:
        _planned(folder, tasks_file)
    assert planned.value.source == str(path) and planned.value.record == 2
    for args in (
        ["agents", "results", str(folder)],
        ["traces", "stats", str(path)],
        _run_args(tasks_file, folder),
    ):
        result = _invoke(*args)
        assert isinstance(result.exception, BadInputError), (args, result.output)
        assert result.exception.source == str(path) and "line 4" in str(result.exception)
    assert path.read_bytes() == before  # nothing was appended beside the bad line
