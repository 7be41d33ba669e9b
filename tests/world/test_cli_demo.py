"""The `toolshift world` commands and the world demo step, run as a user would."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from rich.console import Console

from toolshift.world.demo import run as world_demo


def _toolshift(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolshift", "world", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={
            "COLUMNS": "200",
            "PATH": "/usr/bin:/bin",
            **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
        },
    )


def test_call_prints_the_result_as_json_on_stdout_and_the_diff_on_stderr():
    proc = _toolshift("call", "clinic", "cancel_appointment", "--args", '{"appointment_id": "APT-00003"}')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "cancelled"  # stdout is the result, JSON only
    assert proc.stderr.startswith("ok cancel_appointment") and "State diff" in proc.stderr
    assert "scheduled" in proc.stderr


def test_call_json_is_one_document_with_the_result_and_the_diff():
    proc = _toolshift(
        "call", "clinic", "cancel_appointment", "--args", '{"appointment_id": "APT-00003"}', "--json"
    )
    assert proc.returncode == 0 and proc.stderr == ""
    body = json.loads(proc.stdout)
    assert body["tool"] == "cancel_appointment" and body["ok"] is True
    assert body["result"]["status"] == "cancelled"
    assert body["changes"] == [
        {"table": "appointment", "key": "APT-00003", "field": "status", "op": "update",
         "before": "scheduled", "after": "cancelled"}
    ]  # fmt: skip


def test_call_failing_precondition_exits_1_without_changes():
    proc = _toolshift("call", "library", "return_copy", "--args", '{"loan_id": "LN-000002"}')
    assert proc.returncode == 1 and json.loads(proc.stdout)["code"] == "already_returned"
    assert "no state change" in proc.stderr
    failed = _toolshift("call", "library", "return_copy", "--args", '{"loan_id": "LN-000002"}', "--json")
    body = json.loads(failed.stdout)
    assert failed.returncode == 1 and body["ok"] is False and body["changes"] == []


def test_call_bad_json_args_exit_2():
    proc = _toolshift("call", "clinic", "get_patient", "--args", "{patient_id: 1}")
    assert proc.returncode == 2 and "--args" in proc.stderr


def test_call_unknown_tool_exit_2_with_suggestion():
    proc = _toolshift("call", "clinic", "get_patiant", "--args", "{}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (
        "'get_patiant'" in proc.stderr and "get_patient" in proc.stderr and len(proc.stderr.splitlines()) == 1
    )


def test_call_schema_rejected_args_exit_2_naming_the_argument():
    proc = _toolshift("call", "clinic", "get_patient", "--args", '{"patient_id": 7}')
    assert proc.returncode == 2 and "--args" in proc.stderr and "'patient_id'" in proc.stderr


def test_tools_and_domains_tables():
    tools = _toolshift("tools", "freight_depot")
    assert (
        tools.returncode == 0
        and "depot_assign_dock" in tools.stdout
        and "write (destructive)" in tools.stdout
    )
    domains = _toolshift("domains", "--world-only")
    assert domains.returncode == 0
    assert all(name in domains.stdout for name in ("clinic", "library", "freight_depot"))


def test_tools_and_domains_json():
    tools = json.loads(_toolshift("tools", "freight_depot", "--json").stdout)
    assign = next(t for t in tools["tools"] if t["name"] == "depot_assign_dock")
    assert tools["domain"] == "freight_depot" and assign["effect"] == "write"
    assert set(assign["required"]) <= set(assign["params"])
    assert any(t["destructive"] for t in tools["tools"])  # the table's "write (destructive)"
    domains = json.loads(_toolshift("domains", "--world-only", "--json").stdout)
    by_name = {d["domain"]: d for d in domains["domains"]}
    assert {"clinic", "library", "freight_depot"} <= set(by_name) and by_name["clinic"]["tools"] > 0
    assert {f["family"] for f in domains["families"]} == {"bfcl", "agentdojo"}


def test_compile_writes_the_file(tmp_path):
    out = tmp_path / "clinic.sqlite"
    proc = _toolshift("compile", "clinic", "--out", str(out), "--seed", "5")
    assert proc.returncode == 0 and out.is_file()
    meta = dict(sqlite3.connect(out).execute("SELECT key, value FROM _ts_meta"))
    assert meta["seed"] == "5"


def test_compile_to_a_folder_is_bad_input(tmp_path):
    proc = _toolshift("compile", "clinic", "--out", str(tmp_path))
    assert proc.returncode == 2 and "--out" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_world_demo_step_runs_a_real_mcp_session():
    buf = io.StringIO()
    world_demo(Console(file=buf, width=200))
    text = buf.getvalue()
    for expected in ("slot_in_past", "invalid_arguments", "unknown_tool", "APT-00501", "its own copy"):
        assert expected in text
    assert "base world unchanged by the session: True" in text
