"""Issue 56's findings on the real command line: each hostile input gives one line naming file, record and field
and exit 2 (or is flagged), never a traceback, a wait without end or a silent wrong answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BFCL_RUN = ROOT / "tests" / "traces" / "data" / "bfcl" / "fixture-a-FC"
BFCL_FILE = "multi_turn/BFCL_v4_multi_turn_base_result.json"


def toolshift(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run the real CLI; a wait past `timeout` fails the test (it would be a hang)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    cmd = [sys.executable, "-m", "toolshift", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, check=False, timeout=timeout)


def refused(done: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2 with one line of error, no traceback, naming every needle."""
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and err.count("\n") == 0, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def _bfcl_copy(tmp: Path, edit) -> Path:
    run = tmp / "model-FC"
    shutil.copytree(BFCL_RUN, run)
    path = run / BFCL_FILE
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")
    return run


def test_a_lone_surrogate_in_a_bfcl_result_names_record_and_field_and_skip_bad_counts_it(tmp_path):
    run = _bfcl_copy(
        tmp_path, lambda ls: [ls[0].replace("I have done what you asked.", "I have \\ud800 done", 1), *ls[1:]]
    )
    err = refused(toolshift("traces", "convert", "bfcl", run, "--out", tmp_path / "o"), str(run / BFCL_FILE))
    assert "record 0" in err and "field 'result[0]" in err and "lone surrogate \\ud800" in err
    skipped = toolshift("traces", "convert", "bfcl", run, "--out", tmp_path / "o2", "--skip-bad")
    assert skipped.returncode == 0, skipped.stderr
    assert "lone surrogate" in skipped.stdout + skipped.stderr


def test_a_lone_surrogate_in_a_task_file_names_the_field(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "t1", "domain": "clinic", "instruction": "a\\ud800"}\n')
    done = toolshift(
        "run", "--world", "clinic", "--tasks", tasks, "--out", tmp_path / "runs", "--model", "oracle"
    )
    refused(done, str(tasks), "record 0", "field 'instruction'", "lone surrogate")


def test_nan_in_converter_input_is_refused_not_written_as_null(tmp_path):
    run = _bfcl_copy(
        tmp_path, lambda ls: [ls[0].replace('"latency": ', '"latency": NaN, "was": ', 1), *ls[1:]]
    )
    assert "NaN" in (run / BFCL_FILE).read_text()
    refused(
        toolshift("traces", "convert", "bfcl", run, "--out", tmp_path / "o"),
        "record 0",
        "nan is not a JSON number",
    )


@pytest.fixture(scope="module")
def small_build(tmp_path_factory, evolved_build) -> Path:
    return evolved_build(tmp_path_factory.mktemp("build") / "b", ["accounts_payable"], 12, 2)


def test_a_non_utf8_byte_in_a_builds_spec_is_one_line_for_every_command_that_reads_it(tmp_path, small_build):
    build = Path(shutil.copytree(small_build, tmp_path / "b"))
    spec = build / "domains" / "accounts_payable" / "spec.yaml"
    spec.write_bytes(spec.read_bytes() + b"\xff\xfe")
    for args in (("bench", "verify", build), ("bench", "stats", build)):
        refused(toolshift(*args), str(spec), "not UTF-8")
