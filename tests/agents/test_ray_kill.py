"""A killed `--executor ray` run leaves no Ray process behind: SIGTERM, SIGINT, and SIGKILL of the driver.

The local cluster is owned by a watchdog in a session of its own (`toolshift.agents.ray_watchdog`); every
process of that session, the dashboard and runtime-env agents included, must be gone once it exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolshift.traces.store import iter_episodes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)"),
]

HANG_GUARD = 600.0
"""Seconds before a wait is called a hang: only ever reached when something is broken, never a speed limit."""


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, session id, state) of a live process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[3]), fields[0]


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[2] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _session(sid: int) -> dict[int, str]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == sid and stat[2] != "Z":
                out[int(entry.name)] = _cmdline(int(entry.name))
    return out


def _children(pid: int, marker: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] == pid and marker in _cmdline(int(entry.name)):
                out.append(int(entry.name))
    return out


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while not condition():
        assert time.monotonic() < deadline, f"hung waiting for {what}"
        time.sleep(0.2)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["term", "int", "kill"])
def test_a_killed_ray_run_leaves_no_process_behind(sig, tasks_file: Path, tmp_path: Path):
    pytest.importorskip("ray")
    out = tmp_path / "run"
    args = [sys.executable, "-m", "toolshift", "run", "--world", "clinic", "--tasks", str(tasks_file),
            "--model", "oracle", "--trials", "100", "--no-check", "--executor", "ray", "--concurrency", "2",
            "--out", str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    # A shell's background job inherits SIGINT ignored (so would this driver): give it the default back.
    driver = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True, preexec_fn=_default_sigint)  # fmt: skip
    try:

        def running() -> bool:
            assert driver.poll() is None, f"the run ended early: {driver.stderr.read().decode()[-2000:]}"
            found = list(out.glob("run-*.episodes.jsonl"))
            return bool(found) and sum(1 for _ in iter_episodes(found[0])) >= 2

        _wait(running, "the Ray run's first episodes")
        (watchdog,) = _children(driver.pid, "ray_watchdog.py")  # the run's cluster is owned by a watchdog ...
        cluster = _session(watchdog)  # ... in a session of its own
        names = " ".join(cluster.values())
        assert "ray::DashboardAgent" in names and "ray::RuntimeEnvAgent" in names and "raylet" in names
        driver.send_signal(sig)
        driver.wait(HANG_GUARD)
        _wait(lambda: not _alive(watchdog), "the watchdog to stop the cluster")
        left = {pid: cmd for pid, cmd in cluster.items() if _alive(pid)}
        assert left == {} and _session(watchdog) == {}, f"left behind: {left}"
        if sig != signal.SIGKILL:
            assert driver.returncode in (130, 128 + signal.SIGTERM), driver.stderr.read().decode()[-2000:]
        (path,) = out.glob("run-*.episodes.jsonl")
        assert sum(1 for _ in iter_episodes(path)) >= 2  # what finished is kept
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def test_ports_chosen_for_one_cluster_are_distinct() -> None:
    """The GCS and the dashboard agent were once handed the same port (two bind-and-close calls in a row);
    ports chosen together are held until all are chosen, so they never repeat."""
    from toolshift.agents.ray_watchdog import free_ports

    for _ in range(20):
        ports = free_ports(8)
        assert len(set(ports)) == 8, ports
