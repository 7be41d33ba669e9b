"""A killed `traces convert` leaves no hidden temp file: SIGTERM cleans up, and after a SIGKILL the next run does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
RUN = Path(__file__).parent / "data" / "tau2_telecom_run"

# Runs `toolshift traces convert tau2 ...`, sending itself a signal just after the first episode is written.
KILLED_AFTER_ONE_EPISODE = """
import os, signal, sys
from toolshift import cli
from toolshift.traces import store

write, sig = store.EpisodeWriter.write, getattr(signal, sys.argv[1])

def write_then_die(self, episode):
    write(self, episode)
    os.kill(os.getpid(), sig)

store.EpisodeWriter.write = write_then_die
sys.argv = ["toolshift", "traces", "convert", "tau2", sys.argv[2], "--out", sys.argv[3]]
cli.main()
"""


def _convert_killed(sig: str, out: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    args = [sys.executable, "-c", KILLED_AFTER_ONE_EPISODE, sig, str(RUN), str(out)]
    return subprocess.run(args, env=env, capture_output=True, check=False).returncode


def _hidden(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


def test_sigterm_leaves_no_temp_file(tmp_path):
    out = tmp_path / "out"
    assert _convert_killed("SIGTERM", out) == 128 + signal.SIGTERM
    assert _hidden(out) == [] and not list(out.glob("*.episodes.jsonl"))


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_the_next_convert_removes_what_a_killed_one_left(tmp_path, sig):
    from typer.testing import CliRunner

    from toolshift.cli import app

    out = tmp_path / "out"
    out.mkdir()
    (out / ".notes.txt").write_text("a user's own hidden file stays")
    code = _convert_killed(sig, out)
    assert code == (-signal.SIGKILL if sig == "SIGKILL" else 128 + signal.SIGTERM)
    if sig == "SIGKILL":
        assert [n for n in _hidden(out) if n.endswith(".tmp")]  # a SIGKILL cannot clean up ...
    result = CliRunner().invoke(app, ["traces", "convert", "tau2", str(RUN), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert _hidden(out) == [".notes.txt"]  # ... the next write into the folder removes its temp files
