"""`make demo`'s steps for the three systems, at small scale, on the report tests' small evolved build: Steward
learns a library and keeps it through two version changes, task evolution makes a generation of children on the
clinic world and says what changed, the gateway records sessions and serves a learned flow's lookups; and every
command the demo prints runs as printed in a new shell."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys

from rich.console import Console

from toolshift.report.inputs import discover


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200), buffer


def _new_shell(command: str, cwd) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")} | {
        "PATH": "/usr/bin:/bin"
    }
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_three_systems_steps_show_what_they_say_and_print_commands_that_run(
    eco_runs, tmp_path, monkeypatch
):
    from toolshift.evolve.demo import run as evolve_demo
    from toolshift.gateway.demo import run as gateway_demo
    from toolshift.report.demo import run as report_demo
    from toolshift.steward.demo import run as steward_demo

    build, _ = eco_runs
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".venv").symlink_to(sys.prefix, target_is_directory=True)  # the printed command is the venv's
    out = tmp_path / "demo-out"
    console, said = _console()

    steward = steward_demo(console, build, out / "steward")
    assert set(steward["versions"]) == {2, 3}  # maintained onto each later version
    assert all(sum(ops.values()) > 0 for ops in steward["versions"].values())
    assert "a library learned from" in said.getvalue() and (out / "steward" / "library.sqlite").is_file()

    children = evolve_demo(console, out / "evolve")
    assert len(children) == 3 and all(c["move"] for c in children)  # one child per clinic seed, each a move
    assert any(c["diff"] for c in children) and "completion: parent → child" in said.getvalue()

    served = gateway_demo(console, out / "gateway")
    assert (
        served["lookups"] and served["next"][2] == "lookup"
    )  # served with the call, then answering the read
    kinds = {f.kind for f in discover([out / "gateway"], cache=tmp_path / "cache").files}
    assert {"episodes", "catalog", "flow"} <= kinds

    report_demo(console, out)
    text = said.getvalue()
    printed = [
        line.split(": ", 1)[1]
        for line in text.splitlines()
        if ": " in line and "toolshift " in line.split(": ", 1)[1]
    ]
    view = next(c for c in printed if " view " in c)
    show = next(c for c in printed if " steward show " in c)
    assert shlex.split(view)[0] == shlex.split(show)[0] != "toolshift"  # not on a new shell's PATH: its path
    for command in (show, view + " --export exported --select kind=recording"):
        done = _new_shell(command, tmp_path)
        assert done.returncode == 0, (command, done.stderr)
    assert (
        tmp_path / "exported" / "index.html"
    ).is_file()  # the gateway's recordings are among the demo's runs
