"""SIGTERM ends every command with one line (`terminated`, exit 143): servers blocked reading stdin, commands inside
anyio task groups (where it arrives wrapped in an exception group), and `gateway report`. Readiness is read from the
process itself (a reply, a progress line), never waited for by the clock."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

EXIT_WAIT = 300.0
"""Liveness bound for the process to end after SIGTERM (a hang fails here); never a speed check."""
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def _ended(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=EXIT_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running {EXIT_WAIT:.0f} s after SIGTERM")
    return proc.returncode, err.decode("utf-8", "replace")


@pytest.mark.parametrize(
    "argv",
    [["world", "serve", "clinic"], ["gateway", "serve", "--world", "clinic"]],
    ids=["world", "gateway"],
)
def test_a_stdio_server_ends_on_sigterm_with_one_line(argv, tmp_path):
    if argv[0] == "gateway":
        argv = [*argv, "--record", str(tmp_path / "rec")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolshift", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INIT).encode() + b"\n")
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline().replace(b" ", b"")  # serving, and the stdin reader is blocked
    code, err = _ended(proc)
    assert code == 143 and err.strip() == "terminated", err


@pytest.mark.slow
def test_gateway_report_ends_on_sigterm_with_one_line(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolshift", "gateway", "report", "--work", str(tmp_path / "w"),
         "--out", str(tmp_path / "flows-live.md"), "--per-domain", "2", "--live-tasks", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    seen = [proc.stderr.readline() for _ in range(2)]  # two progress lines: it is at work
    assert all(seen), seen
    code, rest = _ended(proc)
    assert code == 143 and rest.strip().splitlines()[-1] == "terminated", rest
    assert "Traceback" not in rest and "ExceptionGroup" not in rest and len(rest.strip().splitlines()) <= 3, (
        rest
    )
