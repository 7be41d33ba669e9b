"""The demo's last line names a `toolshift` a new shell can run: the bare name only when the PATH finds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CLOSING = "from toolshift.demo import closing_line; print(closing_line())"


def _closing_line(path: str, cwd: Path) -> str:
    env = {"PATH": path, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", CLOSING], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_the_venv_on_path_the_line_names_the_script_and_how_to_add_it(tmp_path):
    script = Path(sys.executable).parent / "toolshift"
    line = _closing_line("/usr/bin:/bin", tmp_path)
    assert line.startswith(f"next: {script} --help")
    assert f"export PATH={script.parent}:$PATH" in line
    assert Path(line.split()[1]).is_file()


def test_from_the_repository_the_script_is_named_as_venv_bin_toolshift():
    repo = Path(sys.executable).parents[2]
    if (repo / ".venv" / "bin" / "toolshift") != Path(sys.executable).parent / "toolshift":
        pytest.skip("the tests run from a venv outside the repository; the first test covers that case")
    assert _closing_line("/usr/bin:/bin", repo).startswith("next: .venv/bin/toolshift --help")


def test_with_the_venv_on_path_the_bare_name_is_enough(tmp_path):
    bin_dir = Path(sys.executable).parent
    assert _closing_line(f"{bin_dir}:/usr/bin:/bin", tmp_path) == "next: toolshift --help"
