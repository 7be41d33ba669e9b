"""The README: its links resolve (files and the anchors of docs/usage.md) and its commands and flags exist."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_resolves():
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, target


def test_the_setup_and_one_screen_of_what_it_does_come_first():
    assert README.index("make demo") < README.index("## What it does") < README.index("## Docs")
    assert len(README.splitlines()) <= 120


def test_every_command_and_flag_in_what_it_does_exists():
    from toolshift.cli import app

    block = README.split("## What it does", 1)[1].split("```", 2)[1]
    group = typer.main.get_command(app)
    runner = CliRunner()
    checked = 0
    for line in block.splitlines():
        for part in line.split("#", 1)[0].split("&&"):
            words = part.split()
            if not words or words[0] not in ("toolshift", ".venv/bin/toolshift"):
                continue
            path, command = [], group
            for word in words[1:]:
                sub = getattr(command, "commands", {}).get(word)
                if sub is None:
                    break
                path.append(word)
                command = sub
            assert path, part
            if getattr(command, "commands", None) and "html" in command.commands:
                path.append("html")  # `toolshift report RUNS` is `toolshift report html RUNS`
            shown = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "250"})
            assert shown.exit_code == 0, (part, shown.output)
            for flag in re.findall(r"(--[a-z][a-z-]*)", part):
                assert flag in shown.output, (part, flag)
            checked += 1
    assert checked >= 8


SERVES = ("world serve", "view runs/")
"""Lines that serve until stopped: started as written and stopped once they say where they serve."""
NEEDS = {"harness:codex": "the Codex CLI `make test` installs with npm (tests/harness runs it)"}
"""Lines that need what the set-up commands install beside the venv, checked where it is."""


def _blocks_lines() -> list[str]:
    block = README.split("## What it does", 1)[1].split("```", 2)[1]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_every_line_of_what_it_does_runs_as_written_in_a_new_shell(tmp_path):
    """In a new shell (the PATH without the venv) from a copy of the repository's layout after `make demo` (the
    venv, and `demo-out/` with the τ²-bench example the demo keeps), each line runs as written, in order."""
    import os
    import shutil
    import signal
    import subprocess
    import sys

    from toolshift.traces.demo import EXAMPLE_RUN

    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1], target_is_directory=True)
    (tmp_path / "demo-out" / "tau2").mkdir(parents=True)
    shutil.copyfile(EXAMPLE_RUN, tmp_path / "demo-out" / "tau2" / EXAMPLE_RUN.name)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")} | {
        "PATH": "/usr/bin:/bin"
    }
    env["TOOLSHIFT_VIEW_CACHE"] = str(tmp_path / "view-cache")
    ran = 0
    for line in _blocks_lines():
        if any(word in line for word in NEEDS):
            continue
        if any(line.startswith(f".venv/bin/toolshift {s}") for s in SERVES):
            proc = subprocess.Popen(["bash", "-c", f"exec {line}"], cwd=tmp_path, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
            said = ""
            assert proc.stdout is not None
            for said_line in proc.stdout:
                said += said_line
                if "http://" in said_line or "Traceback" in said_line:
                    break
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=120)
            if "cannot listen" in said:  # the documented port is taken on this machine: nothing to learn here
                continue
            assert "http://127.0.0.1:" in said and "Traceback" not in said, (line, said)
            ran += 1
            continue
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=900)  # fmt: skip
        assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr, line
        ran += 1
    assert ran >= 8
    assert (tmp_path / "runs" / "report.html").is_file()
