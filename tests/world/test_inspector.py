"""The official MCP Inspector CLI (npm `@modelcontextprotocol/inspector`, `--cli`) lists and calls a world's
tools over stdio and streamable HTTP. `make test` installs it into `.cache/npm` (`make inspector`)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolshift.world.mcp.serve import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = Path(
    os.environ.get("TOOLSHIFT_MCP_INSPECTOR", ROOT / ".cache/npm/node_modules/.bin/mcp-inspector")
)
SERVE = [sys.executable, "-m", "toolshift", "world", "serve", "clinic"]


@pytest.fixture(scope="module")
def inspector(tmp_path_factory) -> Iterator[Any]:
    if not INSPECTOR.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm not found: the MCP Inspector CLI cannot be installed here")
        pytest.skip(f"MCP Inspector not installed at {INSPECTOR}: run `make inspector` (make test does)")
    home = tmp_path_factory.mktemp("inspector-home")
    env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json")}

    def run(*args: str, exit_code: int = 0) -> dict[str, Any]:
        # No connect timeout (its 15 s default failed a busy machine): the subprocess timeout is the hang guard.
        proc = subprocess.run(
            [str(INSPECTOR), "--cli", "--connect-timeout", "0", *args],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
            check=False,
        )
        assert proc.returncode == exit_code, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
        return json.loads(proc.stdout)

    yield run


def _checks(run, target: list[str]) -> None:
    listing = run(*target, "--method", "tools/list")
    tools = {t["name"]: t for t in listing["tools"]}
    assert len(tools) == 41 and tools["get_patient"]["annotations"]["readOnlyHint"] is True
    assert tools["get_patient"]["inputSchema"]["required"] == ["patient_id"]

    called = run(
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        "cancel_appointment",
        "--tool-arg",
        "appointment_id=APT-00003",
    )
    assert called["isError"] is False and called["structuredContent"]["status"] == "cancelled"
    assert {(c["field"], c["after"]) for c in called["_meta"]["toolshift/changes"]} == {
        ("status", "cancelled")
    }

    # The Inspector exits 5 when a tool answers isError.
    refused = run(
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        "get_patient",
        "--tool-arg",
        "patient_id=NOPE",
        exit_code=5,
    )
    assert refused["isError"] is True and json.loads(refused["content"][0]["text"])["code"] == "not_found"


def test_inspector_lists_and_calls_over_stdio(inspector):
    _checks(inspector, [*SERVE, "--transport", "stdio"])


def test_inspector_lists_and_calls_over_http_each_run_in_its_own_world(inspector):
    port = free_port()
    server = subprocess.Popen([*SERVE, "--transport", "http", "--port", str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600  # a hang guard, never a speed limit
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        _checks(inspector, [url])
        again = inspector(
            url,
            "--method",
            "tools/call",
            "--tool-name",
            "get_appointment",
            "--tool-arg",
            "appointment_id=APT-00003",
        )
        assert again["structuredContent"]["status"] == "scheduled"  # the cancelling run's world was its own
    finally:
        server.terminate()
        server.wait(timeout=120)
