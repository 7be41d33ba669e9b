"""The τ² worlds as a user meets them: listed (or unavailable with the reason), served over MCP, imported, run, evolved.

The data is read from the real shared folder; a test that needs it skips where it is absent. Bad
data is made by pointing `TOOLSHIFT_SHARED` at a temporary folder holding links to the real files
with one of them missing or altered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from toolshift.errors import BadInputError
from toolshift.shared import ENV, server_environment
from toolshift.world import World
from toolshift.world.language.datasets import DataUnavailable
from toolshift.world.language.spec import load_spec
from toolshift.world.mcp.serve import parse_tool_result
from toolshift.world.state.compiler import compile_domain
from toolshift.world.state.registry import resolve_spec_path
from toolshift.world.tau2 import files
from toolshift.world.tau2.domains import tau2_world
from toolshift.world.tau2.tasks import import_tasks

REAL_SHARED = files.shared_root()


def _need(name: str) -> None:
    why = tau2_world(name).unavailable()
    if why is not None:
        pytest.skip(f"{name} unavailable: {why}")


def _toolshift(*args: str, env: dict[str, str] | None = None, timeout: float = 600):
    return subprocess.run(
        [sys.executable, "-m", "toolshift", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        # the shared folder this run was pointed at, unless the test points it elsewhere
        env={
            "COLUMNS": "200",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **({ENV: os.environ[ENV]} if os.environ.get(ENV) else {}),
            **(env or {}),
        },
    )


def _fake_shared(tmp_path: Path, *, drop: str | None = None, alter: str | None = None) -> Path:
    """A shared folder of links to the real airline files, with one file missing or one byte changed."""
    world = tau2_world("tau2-airline")
    for rel in (*world.data_files, world.tasks_file):
        if rel == drop:
            continue
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        real = REAL_SHARED / rel
        if rel == alter:
            data = bytearray(real.read_bytes())
            data[-2] = ord(" ") if data[-2] != ord(" ") else ord("\n")
            target.write_bytes(bytes(data))
        else:
            target.symlink_to(real)
    return tmp_path


def _compile_airline():
    path = resolve_spec_path("tau2-airline")
    return compile_domain(load_spec(path), str(path))


def test_world_domains_lists_imported_worlds_unavailable_without_data(tmp_path):
    proc = _toolshift("world", "domains", env={"TOOLSHIFT_SHARED": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("tau2-")]
    assert [line.split()[0] for line in lines] == ["tau2-airline", "tau2-retail"]
    assert "data/tau-bench/airline/flights.json" in lines[0] and "not found" in lines[0]
    assert "data/tau2-bench/retail/db.json" in lines[1]
    assert "clinic" in proc.stdout  # the other worlds are listed as before


@pytest.mark.shared
def test_a_missing_or_altered_data_file_is_named(tmp_path, monkeypatch):
    _need("tau2-airline")
    monkeypatch.setenv(
        "TOOLSHIFT_SHARED",
        str(_fake_shared(tmp_path / "a", drop=files.FILES["data/tau-bench/airline/users.json"].path)),
    )
    with pytest.raises(DataUnavailable, match=r"users\.json.*not found"):
        _compile_airline()
    monkeypatch.setenv(
        "TOOLSHIFT_SHARED", str(_fake_shared(tmp_path / "b", alter="data/tau-bench/airline/users.json"))
    )
    with pytest.raises(
        DataUnavailable, match=r"users\.json: not the published τ-bench airline users: SHA-256"
    ):
        _compile_airline()
    monkeypatch.setenv("TOOLSHIFT_SHARED", str(_fake_shared(tmp_path / "c")))
    assert _compile_airline().row_counts()["reservation"] == 2000


@pytest.mark.slow
@pytest.mark.shared
def test_a_world_served_over_stdio_reads_the_shared_folder_this_process_was_given(tmp_path, monkeypatch):
    """The SDK's default child environment drops TOOLSHIFT_SHARED; the server would then read the real folder
    beside the checkout. Pointed at a copy without users.json, the server must say that file is missing."""
    from toolshift.traces.mcp_catalog import catalog_of_world

    _need("tau2-airline")
    dropped = files.FILES["data/tau-bench/airline/users.json"].path
    monkeypatch.setenv(ENV, str(_fake_shared(tmp_path / "s", drop=dropped)))
    assert server_environment()[ENV] == str(tmp_path / "s")
    assert "OPENAI_API_KEY" not in server_environment()  # the SDK's default still keeps keys out
    with pytest.raises(BadInputError, match=r"users\.json.*not found"):
        anyio.run(catalog_of_world, "tau2-airline")


@pytest.mark.shared
def test_a_seed_cannot_change_a_data_world():
    _need("tau2-airline")
    proc = _toolshift("world", "call", "tau2-airline", "list_all_airports", "--seed", "3")
    assert proc.returncode == 2 and "a seed cannot change it" in proc.stderr + proc.stdout


@pytest.mark.shared
def test_failing_expected_actions_are_reported_and_the_task_kept():
    _need("tau2-retail")
    report = import_tasks("tau2-retail", ids=["35", "105"])
    assert [t.id for t in report.tasks] == ["35", "105"] and report.skipped == []
    failures = {(f.task_id, f.step, f.tool): f.reason for f in report.gold_errors}
    assert failures == {
        ("35", 0, "find_user_id_by_email"): "not_found: User not found",
        ("105", 0, "exchange_delivered_order_items"): (
            "refused: Insufficient gift card balance to pay for the price difference"
        ),
    }
    task = report.tasks[0]
    assert task.difficulty["gold_errors"] == [
        {"step": 0, "tool": "find_user_id_by_email", "error": "not_found: User not found"}
    ]
    assert task.expected_changes and task.instruction.rules and task.split in ("train", "test")


@pytest.mark.shared
def test_calls_follow_tau2s_behaviour():
    _need("tau2-airline")
    w = World(_compile_airline())
    try:
        r = w.call("get_reservation_details", {"reservation_id": "4WQ150"})
        assert r.ok and r.result["user_id"] == "chen_jackson_3290" and r.result["status"] is None
        r = w.call("cancel_reservation", {"reservation_id": "NOSUCH"})
        assert not r.ok and r.error == {"code": "not_found", "message": "Reservation NOSUCH not found"}
        before = w.snapshot()
        r = w.call("cancel_reservation", {"reservation_id": "4WQ150"})
        assert r.ok and r.result["status"] == "cancelled"
        refunds = r.result["payment_history"][len(r.result["payment_history"]) // 2 :]
        assert refunds and all(p["amount"] < 0 for p in refunds)
        changed = {(c.table, c.op) for c in w.changes_since(before)}
        assert ("reservation", "update") in changed and ("payment", "insert") in changed
        assert w.call("calculate", {"expression": "(200 + 13) * 0.5"}).result == "106.5"
        assert w.call("calculate", {"expression": "__import__('os')"}).error["message"] == (
            "Invalid characters in expression"
        )
    finally:
        w.close()


@pytest.mark.slow
@pytest.mark.shared
def test_serve_over_stdio_with_the_mcp_client():
    _need("tau2-airline")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolshift", "world", "serve", "tau2-airline", "--transport", "stdio"],
        env=server_environment(),
    )

    async def run():
        async with Client(params) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert len(tools) == 14 and "book_reservation" in tools
            assert tools["book_reservation"].input_schema["properties"]["passengers"]["type"] == "array"
            r = await client.call_tool("update_reservation_baggages", {
                "reservation_id": "4WQ150", "total_baggages": 1, "nonfree_baggages": 0, "payment_id": "nope"})  # fmt: skip
            assert r.is_error and parse_tool_result(r)[1]["message"] == "Payment method not found"
            r = await client.call_tool("get_user_details", {"user_id": "chen_jackson_3290"})
            ok, user = parse_tool_result(r)
            assert ok and "4WQ150" in user["reservations"]

    anyio.run(run)


@pytest.mark.slow
@pytest.mark.shared
def test_import_run_and_evolve_like_any_world(tmp_path):
    _need("tau2-airline")
    _need("tau2-retail")
    build = tmp_path / "build"
    proc = _toolshift("bench", "import", "tau2-airline,tau2-retail", "--out", str(build))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((build / "manifest.json").read_text())
    assert {(d["name"], d["tasks"], d["train"], d["test"]) for d in manifest["domains"]} == {
        ("tau2-airline", 50, 30, 20),
        ("tau2-retail", 114, 74, 40),
    }
    assert "task 35 step 0 find_user_id_by_email: not_found: User not found" in proc.stdout
    tasks = (build / "domains" / "tau2-airline" / "tasks.jsonl").read_text().splitlines()
    few = tmp_path / "few.jsonl"
    few.write_text("\n".join(tasks[:8]) + "\n")
    proc = _toolshift("run", "--world", "tau2-airline", "--tasks", str(few), "--model", "oracle",
                      "--out", str(tmp_path / "run"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (results,) = (tmp_path / "run").glob("*.results.json")
    summary = json.loads(results.read_text())
    assert summary["judged_tasks"] == 8 and summary["success"]["mean"] == 1.0
    proc = _toolshift("bench", "evolve", str(build), "--versions", "2", "--domains", "tau2-airline")
    assert proc.returncode == 0, proc.stderr
    history = json.loads((build / "ecosystem" / "domains" / "tau2-airline.json").read_text())
    assert len(history["versions"]) == 2 and history["versions"][1]["records"]


@pytest.mark.shared
def test_a_lookup_is_answered_by_the_live_world_at_an_episode_prefix():
    _need("tau2-airline")
    from toolshift.world.tau2.live import answer_lookup

    (task,) = import_tasks("tau2-airline", ids=["8"]).tasks
    calls = [(c.tool, c.arguments) for c in task.gold_path]
    booked = next(i for i, (name, _) in enumerate(calls) if name == "book_reservation")
    lookup = ("get_reservation_details", {"reservation_id": "HATHAT"})
    before = answer_lookup("tau2-airline", calls, booked, *lookup)
    after = answer_lookup("tau2-airline", calls, booked + 1, *lookup)
    assert not before.ok and before.error["message"] == "Reservation HATHAT not found"
    assert after.ok and after.result["user_id"] == calls[booked][1]["user_id"]
    with pytest.raises(BadInputError, match="a lookup must be read-only"):
        answer_lookup("tau2-airline", calls, 0, "cancel_reservation", {"reservation_id": "4WQ150"})
    with pytest.raises(BadInputError, match="outside the episode"):
        answer_lookup("tau2-airline", calls, len(calls) + 1, *lookup)
