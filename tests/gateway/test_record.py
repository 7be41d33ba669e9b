"""The record middleware: one episode per client session, read by `traces stats` and `flows learn` as they are;
secrets redacted; sessions still open at shutdown flushed; the config refuses what it cannot serve."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway, load_config
from toolshift.gateway.build import prepare
from toolshift.gateway.server import in_memory_client
from toolshift.traces.store import iter_episodes, read_header


def _recording_gateway(out: Path, **extra):
    cfg = GatewayConfig(
        backends=[{"name": "clinic", "world": "clinic"}],
        middleware=["record"],
        record={"out": str(out), "agent": "scripted-test", "redact": ["reason"]},
        **extra,
    )
    gw = build_gateway(cfg)
    return gw, GatewayServer(gw)


async def _session(server, calls, *, task: str | None = None) -> None:
    async with in_memory_client(server) as client:
        await client.list_tools()
        for name, args in calls:
            meta = {"toolshift/task": task} if task else None
            await client.call_tool(name, args, meta=meta)


CALLS = [
    ("get_appointment", {"appointment_id": "APT-00003"}),
    (
        "get_patient",
        {"patient_id": "PAT-00065", "api_key": "sk-live-123"},
    ),  # refused by the world: bad argument
    ("cancel_appointment", {"appointment_id": "APT-00003"}),
]


def test_each_session_is_one_episode_that_traces_and_flows_read(tmp_path):
    out = tmp_path / "rec"
    gw, server = _recording_gateway(out)

    async def main() -> None:
        await prepare(gw)
        async with gw.running():
            await _session(server, CALLS, task="task-7")
            await _session(server, CALLS[:1])

    anyio.run(main)
    path = out / "clinic.episodes.jsonl"
    assert read_header(path).meta["recorded_by"] == "toolshift gateway"
    episodes = list(iter_episodes(path))
    assert [e.task_id for e in episodes][:1] == ["task-7"] and len(episodes) == 2
    first = episodes[0]
    assert first.agent == "scripted-test" and first.harness == "toolshift-gateway"
    assert [m.role for m in first.messages] == ["assistant", "tool"] * 3
    calls = [m.tool_calls[0] for m in first.messages if m.role == "assistant"]
    assert [c.name for c in calls] == [n for n, _ in CALLS]
    assert calls[1].arguments == {"patient_id": "PAT-00065", "api_key": "[redacted]"}
    assert "sk-live-123" not in path.read_text()
    results = [m for m in first.messages if m.role == "tool"]
    assert [m.error for m in results] == [False, True, False]
    assert json.loads(results[2].content)["status"] == "cancelled"
    assert [(c.field, c.after) for c in first.world_diff] == [("status", "cancelled")]
    assert first.termination_reason == "gateway_session_closed"

    catalog = out / "clinic.catalog.json"
    effects = {t["name"]: t["effect"] for t in json.loads(catalog.read_text())["tools"]}
    assert effects["get_patient"] == "read" and effects["cancel_appointment"] == "write"

    runner = CliRunner()
    stats = runner.invoke(app, ["traces", "stats", str(path), "--json"])
    assert stats.exit_code == 0, stats.output
    (group,) = json.loads(stats.output)["groups"]
    assert (group["agent"], group["episodes"], group["turns"]) == ("scripted-test", 2, 4)
    assert group["turn_counts"] == {"read": 3, "write": 1} and group["unknown_tools"] == {}
    learned = runner.invoke(
        app,
        [
            "flows",
            "learn",
            str(path),
            "--catalog",
            str(catalog),
            "--out",
            str(tmp_path / "flow.json"),
            "--learn-from-all",
        ],
    )
    assert learned.exit_code == 0, learned.output
    flow = json.loads((tmp_path / "flow.json").read_text())
    assert flow["domain"] == "clinic" and flow["learned_from"]["episodes"] == 2


def test_open_sessions_are_flushed_at_shutdown_and_appended_after(tmp_path):
    out = tmp_path / "rec"
    gw, server = _recording_gateway(out)

    async def main() -> None:
        async with gw.running():
            client_cm = in_memory_client(server)
            client = await client_cm.__aenter__()
            await client.call_tool("get_appointment", {"appointment_id": "APT-00001"})
            gw_sessions = list(gw.sessions.values())
            assert len(gw_sessions) == 1
            # shutdown while the client is still connected: the gateway flushes its session
            await gw.end_session(gw_sessions[0], "shutdown")
            await client_cm.__aexit__(None, None, None)

    anyio.run(main)
    first = list(iter_episodes(out / "clinic.episodes.jsonl"))
    assert [e.termination_reason for e in first] == ["gateway_shutdown"]
    gw2, server2 = _recording_gateway(out)

    async def again() -> None:
        async with gw2.running():
            await _session(server2, CALLS[:1])

    anyio.run(again)
    assert len(list(iter_episodes(out / "clinic.episodes.jsonl"))) == 2  # appended, the first kept


def test_redaction_of_names_nested_values_and_the_token():
    from toolshift.gateway.config import RecordConfig
    from toolshift.gateway.record import RecordMiddleware

    m = RecordMiddleware(
        RecordConfig(out=Path("/nonexistent"), redact=["ssn"]), domain="d", secrets=("tok-9",)
    )
    value = {
        "user": "a",
        "Password": "p",
        "nested": [{"ssn": "1"}, {"note": "bearer tok-9 here"}],
        "auth_token": 3,
    }
    assert m.redact(value) == {
        "user": "a",
        "Password": "[redacted]",
        "nested": [{"ssn": "[redacted]"}, {"note": "bearer [redacted] here"}],
        "auth_token": "[redacted]",
    }


def test_config_file_is_validated_naming_the_field(tmp_path):
    good = tmp_path / "gateway.yaml"
    good.write_text(
        "format: toolshift.gateway/1\nbackends:\n  - {name: clinic, world: clinic}\n"
        "middleware: [record]\nrecord: {out: rec}\n"
    )
    cfg = load_config(good)
    assert cfg.record.out == tmp_path / "rec"
    bad = tmp_path / "bad.yaml"
    for text, field in [
        ("backends: [{name: x}]\n", "backends.0"),
        ("backends: [{name: x, world: clinic, url: 'http://h'}]\n", "backends.0"),
        ("backends: [{name: x, world: clinic}]\nmiddleware: [steward]\n", None),
        ("backends: [{name: x, world: clinic}]\nmiddleware: [record]\n", None),
        ("backends: [{name: x, world: clinic}]\nport: 99999\n", "port"),
        ("backends: [{name: x, world: clinic}]\nbackends: []\n", None),
        ("format: toolshift.gateway/9\nbackends: []\n", "format"),
    ]:
        bad.write_text(text)
        with pytest.raises(BadInputError) as info:
            load_config(bad)
        assert str(bad) in str(info.value)
        if field:
            assert info.value.field is not None and info.value.field.startswith(field), (
                text,
                info.value.field,
            )
    bad.write_text("backends: [{name: x, world: clinic}]\nmiddleware: [steward]\n")
    with pytest.raises(BadInputError, match="needs a steward section"):
        load_config(bad)


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "gateway.yaml"
    bad.write_text("backends: [{name: x, world: clinic, colour: red}]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "toolshift", "gateway", "check", "--config", str(bad)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and str(bad) in proc.stderr and "colour" in proc.stderr


def test_flags_layer_over_a_config_file(tmp_path):
    from toolshift.gateway.cli import config_from_flags

    file = tmp_path / "gateway.yaml"
    file.write_text("backends: [{name: clinic, world: clinic}]\nport: 9000\nflows: {flow: f.json, catalog: c.json}\n"
                    "middleware: [flows]\n")  # fmt: skip
    cfg = config_from_flags(file, record=tmp_path / "rec", threshold=0.5, transport="http")
    assert cfg.middleware == ["record", "flows"] and cfg.port == 9000 and cfg.transport == "http"
    assert cfg.flows.threshold == 0.5 and cfg.flows.flow == tmp_path / "f.json"
    alone = config_from_flags(
        None, world=["clinic"], command=["fs=mcp-server-filesystem /srv"], url=["http://h:1/mcp"]
    )
    assert [(b.name, b.kind) for b in alone.backends] == [
        ("clinic", "world"),
        ("fs", "command"),
        ("remote3", "url"),
    ]
    assert alone.backends[1].command == ["mcp-server-filesystem", "/srv"]
    with pytest.raises(BadInputError, match="--flow and --catalog go together"):
        config_from_flags(None, world=["clinic"], flow=tmp_path / "f.json")
