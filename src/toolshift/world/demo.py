"""Demo step: compile every built-in domain, serve the clinic over streamable HTTP, run a scripted MCP session."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
from mcp import Client
from rich.console import Console
from rich.table import Table

from toolshift.errors import ToolshiftError
from toolshift.world.cli import changes_table
from toolshift.world.mcp.serve import WorldServer, http_server_thread, parse_tool_result
from toolshift.world.state.registry import builtin_domains, load_domain

SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("search_patients", {"full_name": "Abbott", "limit": 3}),
    ("get_patient", {"patient_id": "PAT-00001"}),
    ("list_patient_appointments", {"patient_id": "PAT-00001", "limit": 5}),
    (
        "book_appointment",
        {"patient_id": "PAT-00001", "doctor_id": "DOC-001", "starts_at": "2026-06-10T10:00"},
    ),
    (
        "book_appointment",
        {"patient_id": "PAT-00001", "doctor_id": "DOC-001", "starts_at": "2026-05-20T10:00"},
    ),
    ("update_patient", {"patient_id": "PAT-00001", "phone": 5550100}),
    ("update_patient", {"patient_id": "PAT-00001", "phone": "+1-555-010-0000"}),
    ("cancel_appointment", {"appointment_id": "APT-00003"}),
    ("get_pateint", {"patient_id": "PAT-00001"}),
]


def _summary(payload: Any, width: int = 48) -> str:
    if isinstance(payload, dict) and "items" in payload:
        keys = [next(iter(i.values())) for i in payload["items"]]
        return f"{payload['total']} rows: {', '.join(map(str, keys))}"
    if isinstance(payload, dict):
        text = " ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in payload.items())
    else:
        text = str(payload)
    return text if len(text) <= width else text[: width - 1] + "…"


def compile_all(console: Console) -> None:
    table = Table(title="Built-in domains compiled to SQLite")
    for col in ("domain", "entities", "tools", "rows", "compile ms"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    for name in builtin_domains():
        t0 = time.perf_counter()
        try:
            d = load_domain(name, fresh=True)
        except ToolshiftError as exc:
            table.add_row(name, "[red]error[/]", "", "", str(exc))
            continue
        ms = (time.perf_counter() - t0) * 1000
        rows = sum(d.row_counts().values())
        table.add_row(name, str(len(d.spec.entities)), str(len(d.tools)), str(rows), f"{ms:.0f}")
    console.print(table)


async def _session(
    server: WorldServer, url: str
) -> tuple[list[tuple[str, dict[str, Any], bool, Any]], list[Any]]:
    """Run the script as one MCP client session; return the calls and the session world's diff."""
    out: list[tuple[str, dict[str, Any], bool, Any]] = []
    async with Client(url) as client:
        listed = await client.list_tools()
        out.append(("tools/list", {}, True, f"{len(listed.tools)} tools"))
        for tool, args in SCRIPT:
            result = await client.call_tool(tool, args)
            ok, payload = parse_tool_result(result)
            out.append((tool, args, ok, payload))
        session_world = server.sessions[-1]
        diff = session_world.diff(server.base, session_world)
        async with Client(url) as other:
            seen = parse_tool_result(await other.call_tool("get_patient", {"patient_id": "PAT-00001"}))[1]
        written = next(args["phone"] for tool, args in reversed(SCRIPT) if tool == "update_patient")
        isolated = seen["phone"] != written
        own = {"phone": seen["phone"], "note": "its own copy of the world" if isolated else "sees the write"}
        out.append(("get_patient (a second, concurrent session)", {"patient_id": "PAT-00001"}, True, own))
    return out, diff


def run(console: Console) -> None:
    """Compile, serve clinic over MCP (streamable HTTP on loopback), script a session, show calls and diff."""
    compile_all(console)
    server = WorldServer(load_domain("clinic"))
    seeded = server.base.snapshot()
    with http_server_thread(server) as url:
        console.print(f"serving [bold]clinic[/] over streamable HTTP at {url} (one world per MCP session)")
        calls, diff = anyio.run(_session, server, url)
    table = Table(title="Scripted MCP client session")
    for col in ("#", "tool", "arguments", "outcome"):
        table.add_column(col, overflow="fold")
    for i, (tool, args, ok, payload) in enumerate(calls):
        outcome = (
            f"[green]ok[/] {_summary(payload)}"
            if ok
            else f"[red]{payload.get('code')}[/] {payload.get('message')}"
        )
        table.add_row(str(i), tool, _summary(args, 60) if args else "", outcome)
    console.print(table)
    console.print(changes_table(diff, title="State diff of the session's world against the seeded world"))
    console.print(f"base world unchanged by the session: {not server.base.changes_since(seeded)}")
