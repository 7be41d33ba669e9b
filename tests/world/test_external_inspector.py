"""The official MCP Inspector CLI lists and calls BFCL and AgentDojo worlds served by `toolshift world serve`
over stdio: their tools, annotations and schemas as an MCP client sees them, and a call that changes the
benchmark's own state, reported leaf by leaf."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = Path(
    os.environ.get("TOOLSHIFT_MCP_INSPECTOR", ROOT / ".cache/npm/node_modules/.bin/mcp-inspector")
)


@pytest.fixture(scope="module")
def inspector(tmp_path_factory):
    if not INSPECTOR.exists():
        pytest.skip(f"MCP Inspector not installed at {INSPECTOR}: run `make inspector` (make test does)")
    home = tmp_path_factory.mktemp("inspector-home")
    env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json")}

    def run(world: str, *args: str) -> dict[str, Any]:
        serve = [sys.executable, "-m", "toolshift", "world", "serve", world, "--transport", "stdio"]
        proc = subprocess.run(
            # No connect timeout (importing agentdojo alone outlasts its 15 s default on a busy machine): the
            # subprocess timeout is the hang guard, never a speed limit (D64).
            [str(INSPECTOR), "--cli", "--connect-timeout", "0", *serve, *args],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
        return json.loads(proc.stdout)

    return run


def test_inspector_lists_and_calls_a_bfcl_world(inspector):
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    world = "bfcl:multi_turn_base_0"  # GorillaFileSystem and TwitterAPI
    tools = {t["name"]: t for t in inspector(world, "--method", "tools/list")["tools"]}
    assert len(tools) == 32 and tools["mkdir"]["annotations"]["readOnlyHint"] is False
    assert tools["ls"]["annotations"]["readOnlyHint"] is True
    assert tools["mkdir"]["inputSchema"]["required"] == ["dir_name"]
    called = inspector(world, "--method", "tools/call", "--tool-name", "mkdir", "--tool-arg", "dir_name=temp")
    assert called["isError"] is False
    assert sorted(
        (c["table"], c["key"], c["field"], c["after"]) for c in called["_meta"]["toolshift/changes"]
    ) == [
        ("GorillaFileSystem", "root", "/contents/temp/contents", {}),
        ("GorillaFileSystem", "root", "/contents/temp/name", "temp"),
    ]
    listed = inspector(world, "--method", "tools/call", "--tool-name", "ls")  # a new server: a fresh world
    assert listed["structuredContent"] == {"current_directory_content": ["document", "archive"]}


def test_inspector_lists_and_calls_an_agentdojo_world(inspector):
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    world = "agentdojo:banking.user_task_0"
    tools = {t["name"]: t for t in inspector(world, "--method", "tools/list")["tools"]}
    assert len(tools) == 11 and tools["get_balance"]["annotations"]["readOnlyHint"] is True
    assert tools["send_money"]["inputSchema"]["required"] == ["recipient", "amount", "subject", "date"]
    args = ["recipient=GB29NWBK60161331926819", "amount=12.5", "subject=rent", "date=2022-04-01"]
    called = inspector(
        world, "--method", "tools/call", "--tool-name", "send_money",
        *[x for a in args for x in ("--tool-arg", a)],
    )  # fmt: skip
    assert called["isError"] is False and "12.5" in called["content"][0]["text"]
    changes = {(c["key"], c["field"]): c["after"] for c in called["_meta"]["toolshift/changes"]}
    inserted = [field for key, field in changes if key == "transactions" and field.endswith("/amount")]
    assert len(inserted) == 1 and changes[("transactions", inserted[0])] == 12.5
