"""Clients and servers nobody here wrote, through the gateway: the official MCP Inspector CLI (npm
`@modelcontextprotocol/inspector --cli`) over stdio and HTTP, and the reference filesystem MCP server (npm
`@modelcontextprotocol/server-filesystem`) as a backend. `make test` installs both into `.cache/npm`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.build import prepare
from toolshift.gateway.server import in_memory_client
from toolshift.traces.store import iter_episodes
from toolshift.world.mcp.serve import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NPM_BIN = ROOT / ".cache/npm/node_modules/.bin"
INSPECTOR = Path(os.environ.get("TOOLSHIFT_MCP_INSPECTOR", NPM_BIN / "mcp-inspector"))
FILESYSTEM = NPM_BIN / "mcp-server-filesystem"
GATEWAY = [sys.executable, "-m", "toolshift", "gateway", "serve"]


def _need(path: Path) -> None:
    if not path.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm not found: the npm MCP packages cannot be installed here")
        pytest.skip(f"{path.name} not installed at {path}: run `make inspector` (make test does)")


@pytest.fixture(scope="module")
def inspector(tmp_path_factory) -> Any:
    _need(INSPECTOR)
    home = tmp_path_factory.mktemp("inspector-home")
    env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json")}

    def run(*args: str, exit_code: int = 0) -> dict[str, Any]:
        proc = subprocess.run(
            [str(INSPECTOR), "--cli", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=False,
        )
        assert proc.returncode == exit_code, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
        return json.loads(proc.stdout)

    return run


def _wait_port(port: int, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.1)


def test_inspector_through_the_gateway_over_stdio_records_each_run(inspector, tmp_path):
    rec = tmp_path / "rec"
    target = [*GATEWAY, "--world", "clinic", "--record", str(rec), "--transport", "stdio"]
    listing = inspector(*target, "--method", "tools/list")
    tools = {t["name"]: t for t in listing["tools"]}
    assert len(tools) == 41 and tools["get_patient"]["annotations"]["readOnlyHint"] is True
    called = inspector(
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        "cancel_appointment",
        "--tool-arg",
        "appointment_id=APT-00003",
    )
    assert called["structuredContent"]["status"] == "cancelled"
    assert called["_meta"]["toolshift/changes"][0]["after"] == "cancelled"
    refused = inspector(
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        "get_patient",
        "--tool-arg",
        "patient_id=NOPE",
        exit_code=5,
    )
    assert json.loads(refused["content"][0]["text"])["code"] == "not_found"
    episodes = list(iter_episodes(rec / "clinic.episodes.jsonl"))
    # the listing-only run made no call and is not an episode; each calling run is one
    assert [[m.tool_calls[0].name for m in e.messages if m.role == "assistant"] for e in episodes] == [
        ["cancel_appointment"],
        ["get_patient"],
    ]


def test_inspector_over_http_and_sigterm_flushes_open_sessions(inspector, tmp_path):
    rec = tmp_path / "rec"
    port = free_port()
    proc = subprocess.Popen(
        [*GATEWAY, "--world", "clinic", "--record", str(rec), "--transport", "http", "--port", str(port)],
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        called = inspector(
            url,
            "--method",
            "tools/call",
            "--tool-name",
            "cancel_appointment",
            "--tool-arg",
            "appointment_id=APT-00003",
        )
        assert called["structuredContent"]["status"] == "cancelled"
        again = inspector(
            url,
            "--method",
            "tools/call",
            "--tool-name",
            "get_appointment",
            "--tool-arg",
            "appointment_id=APT-00003",
        )
        assert again["structuredContent"]["status"] == "scheduled"  # each Inspector run is its own session
        # a session left open (initialize, a call, no DELETE) is flushed by a graceful shutdown
        import httpx

        headers = {"Accept": "application/json, text/event-stream"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        sid = httpx.post(url, json=init, headers=headers).headers["mcp-session-id"]
        headers |= {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "get_doctor", "arguments": {"doctor_id": "DOC-001"}}}  # fmt: skip
        assert httpx.post(url, json=call, headers=headers).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    episodes = list(iter_episodes(rec / "clinic.episodes.jsonl"))
    names = sorted(m.tool_calls[0].name for e in episodes for m in e.messages if m.role == "assistant")
    assert names == ["cancel_appointment", "get_appointment", "get_doctor"]


def _filesystem_gateway(root: Path, rec: Path) -> tuple[Any, GatewayServer]:
    cfg = GatewayConfig(
        backends=[{"name": "files", "command": [str(FILESYSTEM), str(root)]}],
        middleware=["record"],
        record={"out": str(rec), "domain": "filesystem"},
        call_timeout=60,
    )
    gw = build_gateway(cfg)
    return gw, GatewayServer(gw)


def test_a_third_party_server_as_backend_with_the_sdk_client(tmp_path):
    _need(FILESYSTEM)
    root = tmp_path / "files"
    root.mkdir()
    (root / "a.txt").write_text("hello from a\n")
    gw, server = _filesystem_gateway(root, tmp_path / "rec")

    async def main() -> None:
        await prepare(gw)
        async with gw.running(), in_memory_client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["read_text_file"].annotations.read_only_hint is True
            read = await client.call_tool("read_text_file", {"path": str(root / "a.txt")})
            assert "hello from a" in read.content[0].text
            wrote = await client.call_tool("write_file", {"path": str(root / "b.txt"), "content": "written"})
            assert not wrote.is_error
            outside = await client.call_tool("read_text_file", {"path": "/etc/hostname"})
            assert outside.is_error  # the server's own sandbox answers through the gateway
            listed = await client.call_tool("list_directory", {"path": str(root)})
            assert "b.txt" in listed.content[0].text

    anyio.run(main)
    assert (root / "b.txt").read_text() == "written"
    (episode,) = iter_episodes(tmp_path / "rec" / "filesystem.episodes.jsonl")
    calls = [m.tool_calls[0].name for m in episode.messages if m.role == "assistant"]
    assert calls == ["read_text_file", "write_file", "read_text_file", "list_directory"]
    assert episode.world_diff is None  # a third-party server reports no row changes: the diff is unknown
    catalog = json.loads((tmp_path / "rec" / "filesystem.catalog.json").read_text())
    effects = {t["name"]: (t["effect"], t["origin"]) for t in catalog["tools"]}
    assert effects["read_text_file"] == ("read", "mcp-annotation") and effects["write_file"][0] == "write"


def test_inspector_reaches_the_third_party_server_through_the_gateway(inspector, tmp_path):
    _need(FILESYSTEM)
    root = tmp_path / "files"
    root.mkdir()
    (root / "note.md").write_text("# a note\n")
    target = [*GATEWAY, "--command", f"files={FILESYSTEM} {root}", "--transport", "stdio"]
    read = inspector(
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        "read_text_file",
        "--tool-arg",
        f"path={root}/note.md",
    )
    assert "# a note" in read["content"][0]["text"]
