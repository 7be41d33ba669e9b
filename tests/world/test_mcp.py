"""MCP round trips with the real `mcp` client: in memory, streamable HTTP (per-session state) and stdio."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters

from toolshift.world import World
from toolshift.world.mcp.serve import (
    CHANGES_META_KEY,
    WorldServer,
    http_server_thread,
    in_memory_session,
    parse_tool_result,
)


def test_in_memory_session_lists_calls_and_reports_errors(clinic):
    before = clinic.snapshot()

    async def run():
        async with in_memory_session(clinic) as session:
            tools = (await session.list_tools()).tools
            by_name = {t.name: t for t in tools}
            assert len(tools) == len(clinic.tools)
            assert by_name["get_patient"].input_schema["required"] == ["patient_id"]
            assert by_name["get_patient"].annotations.read_only_hint is True
            assert by_name["delete_patient"].annotations.destructive_hint is True
            assert by_name["book_appointment"].annotations.read_only_hint is False

            r = await session.call_tool("pay_invoice", {"invoice_id": _open_invoice(clinic)})
            ok, payload = parse_tool_result(r)
            assert ok and payload["status"] == "paid" and r.structured_content == payload
            assert {c["field"] for c in r.meta[CHANGES_META_KEY]} == {"status", "paid_on"}

            r = await session.call_tool("get_patient", {"patient_id": 12})
            ok, payload = parse_tool_result(r)
            assert (
                r.is_error and payload["code"] == "invalid_arguments" and "patient_id" in payload["message"]
            )

            r = await session.call_tool("cancel_appointment", {"appointment_id": "APT-99999"})
            assert r.is_error and parse_tool_result(r)[1]["code"] == "not_found"

            r = await session.call_tool("frobnicate", {})
            assert r.is_error and parse_tool_result(r)[1]["code"] == "unknown_tool"

    anyio.run(run)
    diff = clinic.changes_since(before)
    assert {(c.table, c.field) for c in diff} == {("invoice", "status"), ("invoice", "paid_on")}


def _open_invoice(world: World) -> str:
    return world.runtime.find("invoice", status="open")[0]["invoice_id"]


@pytest.mark.slow
def test_streamable_http_gives_each_session_its_own_world(clinic_domain):
    server = WorldServer(clinic_domain)
    seeded = server.base.snapshot()

    async def run(url: str):
        async with Client(url) as a, Client(url) as b:
            r = await a.call_tool("update_patient", {"patient_id": "PAT-00001", "phone": "000"})
            assert not r.is_error
            seen_b = parse_tool_result(await b.call_tool("get_patient", {"patient_id": "PAT-00001"}))[1]
            seen_a = parse_tool_result(await a.call_tool("get_patient", {"patient_id": "PAT-00001"}))[1]
            assert seen_a["phone"] == "000" and seen_b["phone"] != "000"
            assert len(server.sessions) == 2
            diffs = sorted(len(w.diff(server.base, w)) for w in server.sessions)
            assert diffs == [0, 1]
            tools = (await b.list_tools()).tools
            assert any(t.name == "book_appointment" for t in tools)
            r = await b.call_tool("book_appointment", {"patient_id": "PAT-00001"})
            assert r.is_error and parse_tool_result(r)[1]["code"] == "invalid_arguments"

    with http_server_thread(server) as url:
        anyio.run(run, url)
    assert server.base.changes_since(seeded) == []


@pytest.mark.slow
def test_streamable_http_shared_state(clinic_domain):
    server = WorldServer(clinic_domain, shared_state=True)

    async def run(url: str):
        async with Client(url) as a:
            await a.call_tool("update_patient", {"patient_id": "PAT-00002", "phone": "111"})
        async with Client(url) as b:
            seen = parse_tool_result(await b.call_tool("get_patient", {"patient_id": "PAT-00002"}))[1]
            assert seen["phone"] == "111"

    with http_server_thread(server) as url:
        anyio.run(run, url)


@pytest.mark.slow
def test_stdio_subprocess_round_trip():
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolshift", "world", "serve", "clinic", "--transport", "stdio"]
    )

    async def run():
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            assert len(tools) == 41
            r = await client.call_tool("cancel_appointment", {"appointment_id": "APT-00003"})
            ok, payload = parse_tool_result(r)
            assert ok and payload["status"] == "cancelled"
            r = await client.call_tool("cancel_appointment", {"appointment_id": "APT-00003"})
            assert r.is_error and parse_tool_result(r)[1]["code"] == "not_scheduled"
            r = await client.call_tool("get_appointment", {"appointment_id": "APT-00003"})
            assert parse_tool_result(r)[1]["status"] == "cancelled"

    anyio.run(run)


def test_a_blocking_tool_does_not_stall_the_client_in_process(clinic):
    """Tool handlers run off the event loop, so an in-process client's own timeout fires while one blocks."""
    import threading

    from toolshift.world import Tool

    release, left = threading.Event(), threading.Event()

    def blocking(runtime, args):
        release.wait(120)  # released by the test once the client's timeout has fired
        left.set()
        return {"slept": True}

    clinic.add_tool(
        Tool(
            name="slow_read",
            description="Blocks until released.",
            effect="read",
            input_schema={"type": "object", "properties": {}},
            handler=blocking,
        )
    )

    async def main() -> bool:
        async with in_memory_session(clinic) as session:
            with anyio.move_on_after(0.2) as scope:
                await session.call_tool("slow_read", {})
            timed_out_while_blocked = scope.cancelled_caught and not left.is_set()
            release.set()
            return timed_out_while_blocked

    try:
        assert anyio.run(main), "the client's timeout waited for a blocking handler"
    finally:
        release.set()
