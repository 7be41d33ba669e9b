"""Demo step: the gateway in front of the clinic world records each client session as an episode, a flow is
learned from the recordings, and a gateway with the flow serves the lookups a session will need with the call
that makes them needed, answering the session's next read from them.

The client is a scripted one (a measuring instrument, not a model): look an appointment up, read its patient and
its doctor, note a follow-up on it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

APPOINTMENTS = [f"APT-{i:05d}" for i in range(1, 10)]
LEARN_FROM = 8
"""Sessions recorded to learn from; the last appointment is served with the flow."""


def _script(appointment: str, world: Any) -> list[tuple[str, dict[str, Any]]]:
    row = world.call("get_appointment", {"appointment_id": appointment}).result
    return [
        ("get_appointment", {"appointment_id": appointment}),
        ("get_patient", {"patient_id": row["patient_id"]}),
        ("get_doctor", {"doctor_id": row["doctor_id"]}),
        ("update_appointment", {"appointment_id": appointment, "reason": f"follow-up for {appointment}"}),
    ]


def run(console: Console, out: Path) -> dict[str, Any]:
    """Record, learn, serve; leave the recordings, the catalog and the flow in `out`; return what was served."""
    import anyio

    from toolshift.flows.learn import learn_flow
    from toolshift.flows.model import save_flow
    from toolshift.flows.timeline import Catalog, timelines
    from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
    from toolshift.gateway.build import prepare
    from toolshift.gateway.flows import ANSWERED_BY_META_KEY, LOOKUPS_META_KEY
    from toolshift.gateway.server import in_memory_client
    from toolshift.traces.catalog import load_catalog
    from toolshift.traces.store import iter_episodes
    from toolshift.world import World, load_domain

    shutil.rmtree(out, ignore_errors=True)
    recordings = out / "recordings"
    world = World(load_domain("clinic"))
    scripts = [_script(a, world) for a in APPOINTMENTS]
    recorder = build_gateway(GatewayConfig(backends=[{"name": "clinic", "world": "clinic"}], middleware=["record"],
                                           record={"out": str(recordings)}))  # fmt: skip

    async def record() -> None:
        await prepare(recorder)
        async with recorder.running():
            for calls in scripts[:LEARN_FROM]:
                async with in_memory_client(GatewayServer(recorder)) as client:
                    for name, args in calls:
                        await client.call_tool(name, args)

    anyio.run(record)
    store = recordings / "clinic.episodes.jsonl"
    episodes = list(iter_episodes(store))
    first = episodes[0]
    console.print(f"{len(episodes)} client sessions recorded through the gateway as episodes in {store} "
                  f"(the calls, their results and the world diff; harness {first.harness})", soft_wrap=True)  # fmt: skip
    calls = Table(title=f"one recorded session: {first.id}")
    for col in ("#", "call", "arguments"):
        calls.add_column(col)
    for k, m in enumerate(m for m in first.messages if m.tool_calls):
        for c in m.tool_calls or []:
            calls.add_row(str(k + 1), c.name, json.dumps(c.arguments))
    console.print(calls)
    catalog_path = recordings / "clinic.catalog.json"
    catalog = Catalog.of(load_catalog(catalog_path))
    flow = learn_flow(timelines(episodes, catalog), catalog, learn_from_all=True)
    flow_path = save_flow(flow, out / "clinic.flow.json")
    console.print(f"flow learned from the recordings: {flow_path}")
    served_gateway = build_gateway(GatewayConfig(
        backends=[{"name": "clinic", "world": "clinic"}], middleware=["record", "flows"],
        record={"out": str(out / "served")}, flows={"flow": str(flow_path), "catalog": str(catalog_path)},
    ))  # fmt: skip
    served: dict[str, Any] = {}

    async def serve() -> None:
        await prepare(served_gateway)
        async with served_gateway.running(), in_memory_client(GatewayServer(served_gateway)) as client:
            name, args = scripts[LEARN_FROM][0]
            answer = await client.call_tool(name, args)
            served["call"] = (name, args)
            served["lookups"] = list((answer.meta or {}).get(LOOKUPS_META_KEY) or [])
            name, args = scripts[LEARN_FROM][1]
            repeat = await client.call_tool(name, args)
            served["next"] = (name, args, (repeat.meta or {}).get(ANSWERED_BY_META_KEY, "backend"))

    anyio.run(serve)
    table = Table(title=f"a new session with the flow: {served['call'][0]} {json.dumps(served['call'][1])}")
    for col in ("lookup served with the response", "arguments", "result (first fields)"):
        table.add_column(col)
    for lk in served["lookups"]:
        result = lk.get("result")
        shown = (
            json.dumps(dict(list(result.items())[:3]))
            if isinstance(result, dict)
            else json.dumps(result)[:80]
        )
        table.add_row(lk["tool"], json.dumps(lk["arguments"]), shown)
    console.print(table)
    name, args, by = served["next"]
    console.print(f"the session's next call, {name} {json.dumps(args)}, was answered by the {by}"
                  + (" (no round trip to the world)" if by == "lookup" else ""), soft_wrap=True)  # fmt: skip
    return served
