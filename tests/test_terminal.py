"""Output piped to a file is not cut to rich's 80 columns: `$COLUMNS`, else 160; a terminal keeps its width."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from toolshift.terminal import PIPED_WIDTH, piped_width

LONG_CELL = "any OpenAI-compatible endpoint: OPENAI_API_KEY, TOOLSHIFT_BASE_URL or --base-url"


def _piped(*args: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(Path(__file__).parents[1] / "src")
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_a_piped_table_keeps_its_long_cell_on_one_line():
    done = _piped("agents", "models")
    assert done.returncode == 0, done.stderr
    assert LONG_CELL in done.stdout  # at 80 columns it was folded over two lines
    assert max(len(line) for line in done.stdout.splitlines()) > 80


def test_columns_sets_the_piped_width():
    done = _piped("agents", "models", columns="60")
    assert done.returncode == 0, done.stderr
    assert LONG_CELL not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 60


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_width_is_none_on_a_terminal_and_160_or_columns_elsewhere(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert piped_width(_Tty()) is None
    assert piped_width(io.StringIO()) == PIPED_WIDTH == 160
    monkeypatch.setenv("COLUMNS", "abc")
    assert piped_width(io.StringIO()) == 160
    monkeypatch.setenv("COLUMNS", "200")
    assert piped_width(io.StringIO()) == 200
