"""MCP tool-call latency p50/p99 against a served clinic world: loopback streamable HTTP and in-memory."""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
from mcp import Client

from toolshift.report.benchlog import record
from toolshift.world import World, load_domain
from toolshift.world.serve import WorldServer, free_port, http_server_thread, in_memory_session

CALLS = 400
WARMUP = 30


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed_calls(call) -> list[float]:
    for i in range(WARMUP):
        await call(i)
    out = []
    for i in range(CALLS):
        t0 = time.perf_counter()
        await call(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def http_latency(url: str) -> tuple[list[float], list[float]]:
    async with Client(url) as client:

        async def read(i: int) -> None:
            r = await client.call_tool("get_patient", {"patient_id": f"PAT-{1 + i % 300:05d}"})
            assert not r.is_error

        async def write(i: int) -> None:
            r = await client.call_tool(
                "update_patient", {"patient_id": f"PAT-{1 + i % 300:05d}", "phone": str(i)}
            )
            assert not r.is_error

        return await timed_calls(read), await timed_calls(write)


async def memory_latency(world: World) -> list[float]:
    async with in_memory_session(world) as session:

        async def read(i: int) -> None:
            r = await session.call_tool("get_patient", {"patient_id": f"PAT-{1 + i % 300:05d}"})
            assert not r.is_error

        return await timed_calls(read)


@contextmanager
def server_process() -> Iterator[str]:
    """`toolshift world serve clinic --transport http` in a subprocess; yields its MCP URL once it answers."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolshift",
            "world",
            "serve",
            "clinic",
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP server process did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    domain = load_domain("clinic")
    server = WorldServer(domain)
    with http_server_thread(server) as url:
        http_reads, http_writes = anyio.run(http_latency, url)
    with server_process() as url:
        proc_reads, proc_writes = anyio.run(http_latency, url)
    mem_reads = anyio.run(memory_latency, World(domain))
    world = World(domain)
    t0 = time.perf_counter()
    for i in range(CALLS):
        world.call("get_patient", {"patient_id": f"PAT-{1 + i % 300:05d}"})
    direct_ms = (time.perf_counter() - t0) * 1000 / CALLS
    record(
        "world MCP call latency (clinic)",
        [
            (
                "HTTP, server thread in the client's process: get_patient p50 ms",
                f"{statistics.median(http_reads):.2f}",
                "<= 3",
            ),
            (
                "HTTP, server thread in the client's process: get_patient p99 ms",
                f"{pct(http_reads, 0.99):.2f}",
                "",
            ),
            (
                "HTTP, server thread in the client's process: update_patient p50 ms",
                f"{statistics.median(http_writes):.2f}",
                "",
            ),
            (
                "HTTP, server thread in the client's process: update_patient p99 ms",
                f"{pct(http_writes, 0.99):.2f}",
                "",
            ),
            (
                "HTTP, server in its own process: get_patient p50 ms",
                f"{statistics.median(proc_reads):.2f}",
                "<= 3",
            ),
            ("HTTP, server in its own process: get_patient p99 ms", f"{pct(proc_reads, 0.99):.2f}", ""),
            (
                "HTTP, server in its own process: update_patient p50 ms",
                f"{statistics.median(proc_writes):.2f}",
                "",
            ),
            ("in-memory get_patient p50 ms", f"{statistics.median(mem_reads):.2f}", ""),
            ("in-memory get_patient p99 ms", f"{pct(mem_reads, 0.99):.2f}", ""),
            ("direct World.call get_patient mean ms", f"{direct_ms:.3f}", ""),
        ],
        note=f"{CALLS} sequential calls after {WARMUP} warm-up calls, one client session, official mcp SDK "
        "client and server (uvicorn, loopback, JSON responses); HTTP measured twice: server thread in the benchmark process, and `toolshift world serve` in its own process.",
    )


if __name__ == "__main__":
    main()
