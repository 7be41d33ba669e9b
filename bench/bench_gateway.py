"""The gateway's added latency per call against calling the backend directly (in-memory and loopback HTTP, every
middleware on: record + flows), as a ratio in one interleaved run; throughput of 100 concurrent HTTP sessions and
their cross-session leaks."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from paired import Paired, interleave_async, percentile
from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.build import prepare
from toolshift.gateway.server import http_gateway_thread
from toolshift.report.benchlog import record
from toolshift.world import World, load_domain
from toolshift.world.mcp.serve import WorldServer, http_server_thread

CALLS = 400
WARMUP = 30
SESSIONS = 100
PER_SESSION = 6


def learned_flow(out: Path) -> tuple[Path, Path]:
    """A clinic flow learned from scripted sessions recorded through the gateway (a measuring instrument)."""
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.model import save_flow
    from toolshift.flows.timeline import Catalog, timelines
    from toolshift.traces.catalog import load_catalog
    from toolshift.traces.store import iter_episodes

    world = World(load_domain("clinic"))
    gw = build_gateway(
        GatewayConfig(
            backends=[{"name": "clinic", "world": "clinic"}], middleware=["record"], record={"out": str(out)}
        )
    )
    server = GatewayServer(gw)

    async def main() -> None:
        await prepare(gw)
        async with gw.running():
            for i in range(1, 9):
                row = world.call("get_appointment", {"appointment_id": f"APT-{i:05d}"}).result
                async with Client(server.server, mode="legacy") as client:
                    await client.call_tool("get_appointment", {"appointment_id": f"APT-{i:05d}"})
                    await client.call_tool("get_patient", {"patient_id": row["patient_id"]})
                    await client.call_tool("get_doctor", {"doctor_id": row["doctor_id"]})

    anyio.run(main)
    catalog_path = out / "clinic.catalog.json"
    catalog = Catalog.of(load_catalog(catalog_path))
    flow = learn_flow(
        timelines(iter_episodes(out / "clinic.episodes.jsonl"), catalog), catalog, learn_from_all=True
    )
    return save_flow(flow, out / "clinic.flow.json"), catalog_path


def every_middleware(
    out: Path, flow: Path, catalog: Path, backend: dict[str, str] | None = None, **extra: Any
) -> GatewayServer:
    cfg = GatewayConfig(
        backends=[backend or {"name": "clinic", "world": "clinic"}],
        middleware=["record", "flows"],
        record={"out": str(out / "rec")},
        flows={"flow": str(flow), "catalog": str(catalog)},
        **extra,
    )
    return GatewayServer(build_gateway(cfg))


def medication(i: int) -> dict[str, str]:
    """A read no flow site follows (so the figure is the chain's own cost, not lookups')."""
    return {"medication_id": f"MED-{1 + i % 20:03d}"}


async def interleaved(direct: Client, through: Client) -> Paired:
    """The same read (same tool, same arguments) on the backend directly and through the gateway, alternating."""

    def side(client: Client) -> Callable[[int], Awaitable[None]]:
        async def call(i: int) -> None:
            assert not (await client.call_tool("get_medication", medication(i))).is_error

        return call

    for i in range(WARMUP):
        await side(direct)(i)
        await side(through)(i)
    return await interleave_async(side(direct), side(through), range(CALLS), names=("direct", "gateway"))


async def lookup_call(client: Client) -> list[float]:
    """A call after which the flow makes two lookups (their cost is in the response's latency)."""
    out = []
    for i in range(60):
        t0 = time.perf_counter()
        result = await client.call_tool("get_appointment", {"appointment_id": f"APT-{1 + i % 60:05d}"})
        out.append((time.perf_counter() - t0) * 1000)
        assert not result.is_error
    return out


async def in_memory(gateway: GatewayServer) -> tuple[Paired, list[float]]:
    direct_server = WorldServer(load_domain("clinic"))
    async with (
        gateway.gateway.running(),
        Client(direct_server.server, mode="legacy") as direct,
        Client(gateway.server, mode="legacy") as through,
    ):
        return await interleaved(direct, through), await lookup_call(through)


async def over_http(direct_url: str, gateway_url: str) -> Paired:
    async with Client(direct_url, mode="legacy") as direct, Client(gateway_url, mode="legacy") as through:
        return await interleaved(direct, through)


async def http_backend(direct_url: str, gateway: GatewayServer) -> Paired:
    """An MCP backend over loopback HTTP, called directly and through the gateway (its client in this process)."""
    async with (
        gateway.gateway.running(),
        Client(direct_url, mode="legacy") as direct,
        Client(gateway.server, mode="legacy") as through,
    ):
        return await interleaved(direct, through)


async def concurrent_sessions(url: str) -> tuple[float, int, int, int]:
    """SESSIONS clients at once, each writing its own phone number and reading it back: (seconds, calls, leaks,
    sessions that failed: a dropped connection under load is counted, not fatal)."""
    leaks = 0
    calls = 0
    failed = 0

    async def one(s: int) -> None:
        nonlocal leaks, calls, failed
        try:
            async with Client(url, mode="legacy") as client:
                for k in range(PER_SESSION // 2):
                    mine = f"555-{s:03d}-{k}"
                    await client.call_tool("update_patient", {"patient_id": "PAT-00001", "phone": mine})
                    got = await client.call_tool("get_patient", {"patient_id": "PAT-00001"})
                    calls += 2
                    if got.structured_content.get("phone") != mine:
                        leaks += 1
        except Exception:
            failed += 1

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for s in range(SESSIONS):
            tg.start_soon(one, s)
    return time.perf_counter() - t0, calls, leaks, failed


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        flow, catalog = learned_flow(out / "learn")
        gw_mem = every_middleware(out / "mem", flow, catalog)
        mem, mem_lookups = anyio.run(in_memory, gw_mem)
        lookups_made = gw_mem.gateway.metrics()["flows_lookups_made"]
        own_mem = percentile(list(gw_mem.gateway.own_ms)[: WARMUP + CALLS], 0.5)
        gw_http = every_middleware(out / "http", flow, catalog, transport="http")
        with (
            http_server_thread(WorldServer(load_domain("clinic"))) as direct_url,
            http_gateway_thread(gw_http) as url,
        ):
            http = anyio.run(over_http, direct_url, url)
        own_http = percentile(gw_http.gateway.own_ms, 0.5)
        with http_server_thread(WorldServer(load_domain("clinic"))) as backend_url:
            gw_remote = every_middleware(
                out / "remote", flow, catalog, {"name": "clinic", "url": backend_url}
            )
            remote = anyio.run(http_backend, backend_url, gw_remote)
        own_remote = percentile(gw_remote.gateway.own_ms, 0.5)
        gw_many = every_middleware(out / "many", flow, catalog, transport="http")
        with http_gateway_thread(gw_many) as url:
            seconds, calls, leaks, failed = anyio.run(concurrent_sessions, url)
        opened = gw_many.gateway.metrics()["sessions_opened"]

    def added(run: Paired) -> str:
        return f"{1000 * (run.p('b', 0.5) - run.p('a', 0.5)):.3f}"

    rows = [
        *mem.rows("in-memory get_medication"),
        ("in-memory: added per call, p50 − p50 ms", added(mem), "< 1"),
        (
            "in-memory: the chain's own time per call p50 ms (record + flows, minus the backend)",
            f"{own_mem:.3f}",
            "< 1",
        ),
        *http.rows("loopback HTTP get_medication"),
        ("loopback HTTP: added per call, p50 − p50 ms", added(http), "< 1"),
        ("loopback HTTP: the chain's own time per call p50 ms", f"{own_http:.3f}", "< 1"),
        *remote.rows("HTTP backend get_medication (gateway's client in-memory)"),
        ("HTTP backend: added per call, p50 − p50 ms", added(remote), "< 1"),
        ("HTTP backend: the chain's own time per call p50 ms", f"{own_remote:.3f}", "< 1"),
        ("in-memory: get_appointment with its 2 lookups, p50 ms", f"{percentile(mem_lookups, 0.5):.3f}", ""),
        ("lookups made in the in-memory run", str(lookups_made), ""),
        (f"{SESSIONS} concurrent HTTP sessions: calls/s", f"{calls / seconds:.0f}", ""),
        (f"{SESSIONS} concurrent HTTP sessions: cross-session leaks", f"{leaks} of {calls // 2} reads", "0"),
        (f"{SESSIONS} concurrent HTTP sessions: gateway sessions opened", str(opened), str(SESSIONS)),
        (
            f"{SESSIONS} concurrent HTTP sessions: sessions that failed (a dropped connection)",
            str(failed),
            "0",
        ),
    ]
    record(
        "gateway added latency and concurrent sessions (clinic; record + flows on)",
        rows,
        note=(
            f"{CALLS} calls each way after {WARMUP} warm-up calls; {mem.note()} Over HTTP likewise "
            f"(load {http.load_start:.2f} → {http.load_end:.2f}). In the in-memory and loopback-HTTP rows the backend is "
            "the clinic world in the gateway's process (called directly by each gateway session, D149; before D149 over "
            "the SDK's memory transport), against the clinic world served in this process in-memory / over loopback HTTP; "
            "in the HTTP-backend rows the backend is a clinic world server on loopback HTTP, called by its URL directly "
            "and by a gateway (whose client is in-memory) in front of it. The client is in this process. "
            f"`{Path(sys.argv[0]).name}`."
        ),
    )


if __name__ == "__main__":
    main()
