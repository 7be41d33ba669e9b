"""`world compile --out F` writes beside F and renames: a kill mid-write leaves the previous F whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.world import World

SRC = Path(__file__).resolve().parents[2] / "src"

# Copies the world page by page into the file, and the process SIGKILLs itself after the first page.
KILLED_MID_WRITE = """
import os, signal, sys
from toolshift.world.state.world import Snapshot, World

world = World.load("clinic", seed=11)

class DiesAfterOnePage:
    def backup(self, dst):
        world.conn.backup(dst, pages=1, progress=lambda *_: os.kill(os.getpid(), signal.SIGKILL))

Snapshot("clinic", DiesAfterOnePage()).save(sys.argv[1])
"""


def _rows(path: Path) -> dict[str, int]:
    return World.open(path).row_counts()


def test_a_compile_killed_mid_write_keeps_the_previous_file(tmp_path):
    out = tmp_path / "clinic.sqlite"
    runner = CliRunner()
    assert runner.invoke(app, ["world", "compile", "clinic", "--out", str(out)]).exit_code == 0
    good, before = _rows(out), out.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(out)], env=env, check=False)
    assert killed.returncode == -signal.SIGKILL
    assert out.read_bytes() == before and _rows(out) == good
    assert list(tmp_path.glob(".clinic.sqlite.*.tmp"))  # a SIGKILL leaves its temp file ...
    again = runner.invoke(app, ["world", "compile", "clinic", "--out", str(out), "--seed", "3"])
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clinic.sqlite"]  # ... the next write removes it
    assert _rows(out) == good  # same row counts, new seed's contents
