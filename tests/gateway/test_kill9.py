"""kill -9 of a recording gateway loses at most the call in flight: each call is journalled (appended) as
it completes, and the next start writes the sessions the kill left open as `gateway_killed` episodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio

from toolshift.gateway import GatewayConfig, build_gateway
from toolshift.gateway.build import prepare
from toolshift.traces.store import iter_episodes

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
CALLS = [
    ("get_appointment", {"appointment_id": "APT-00003"}),
    ("cancel_appointment", {"appointment_id": "APT-00003"}),
    ("get_patient", {"patient_id": "PAT-00065", "password": "pw-secret-77"}),
]


def _line(proc: subprocess.Popen[bytes], message: dict) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    if "id" not in message:
        return {}
    reply = json.loads(proc.stdout.readline())
    assert reply.get("id") == message["id"], reply
    return reply


def _killed_gateway(rec: Path, calls: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolshift", "gateway", "serve", "--world", "clinic", "--record", str(rec)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _line(proc, INIT)
        _line(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for k, (name, args) in enumerate(CALLS[:calls], 1):
            reply = _line(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": k,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": args},
                },
            )
            assert "result" in reply, reply
    finally:
        proc.kill()  # SIGKILL: no finally, no flush
        proc.wait(timeout=120)


def _restart(rec: Path) -> int:
    gw = build_gateway(
        GatewayConfig(
            backends=[{"name": "clinic", "world": "clinic"}], middleware=["record"], record={"out": str(rec)}
        )
    )
    anyio.run(prepare, gw)
    return gw.metrics()["record_episodes_recovered"]


def test_a_killed_gateway_loses_no_completed_call_and_a_restart_closes_the_session(tmp_path):
    rec = tmp_path / "rec"
    _killed_gateway(rec, calls=3)
    journal = rec / "clinic.journal.jsonl"
    assert journal.is_file() and "pw-secret-77" not in journal.read_text(encoding="utf-8")
    assert (
        not list(iter_episodes(rec / "clinic.episodes.jsonl"))
        if (rec / "clinic.episodes.jsonl").exists()
        else True
    )
    assert _restart(rec) == 1
    (episode,) = list(iter_episodes(rec / "clinic.episodes.jsonl"))
    calls = [c.name for m in episode.messages for c in m.tool_calls or []]
    assert calls == [name for name, _ in CALLS] and episode.termination_reason == "gateway_killed"
    assert episode.world_diff and {c.table for c in episode.world_diff} == {"appointment"}
    assert not journal.exists()
    assert _restart(rec) == 0 and len(list(iter_episodes(rec / "clinic.episodes.jsonl"))) == 1  # no duplicate


def test_a_torn_last_journal_line_is_the_call_in_flight(tmp_path):
    rec = tmp_path / "rec"
    _killed_gateway(rec, calls=2)
    journal = rec / "clinic.journal.jsonl"
    with journal.open("ab") as fh:
        fh.write(b'{"session": "x", "call": {"messages": [')  # a write the kill interrupted
    assert _restart(rec) == 1
    (episode,) = list(iter_episodes(rec / "clinic.episodes.jsonl"))
    assert len([m for m in episode.messages if m.role == "tool"]) == 2
