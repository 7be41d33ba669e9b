"""MCP tool-call latency against a served clinic world (in-memory, loopback HTTP), each path interleaved with `World.call` on the same call."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from mcp import Client

from paired import Paired, interleave_async, percentile
from toolshift.report.benchlog import record
from toolshift.world import World, load_domain
from toolshift.world.mcp.serve import WorldServer, free_port, http_server_thread, in_memory_session

CALLS = 400
WARMUP = 30


def read(i: int) -> tuple[str, dict[str, str]]:
    return "get_patient", {"patient_id": f"PAT-{1 + i % 300:05d}"}


def write(i: int) -> tuple[str, dict[str, str]]:
    return "update_patient", {"patient_id": f"PAT-{1 + i % 300:05d}", "phone": str(i)}


async def paired_calls(
    world: World, session: Any, call: Callable[[int], tuple[str, dict[str, str]]], name: str
) -> Paired:
    """The same call (same tool, same arguments) made directly with `World.call` and over an MCP session, interleaved."""

    async def direct(i: int) -> None:
        assert world.call(*call(i)).ok

    async def over_mcp(i: int) -> None:
        assert not (await session.call_tool(*call(i))).is_error

    for i in range(WARMUP):
        await direct(i)
        await over_mcp(i)
    return await interleave_async(direct, over_mcp, range(CALLS), names=("World.call", name))


async def over_http(url: str, world: World, name: str) -> tuple[Paired, Paired]:
    async with Client(url) as client:
        return await paired_calls(world, client, read, name), await paired_calls(world, client, write, name)


async def in_memory(world: World, direct: World) -> Paired:
    async with in_memory_session(world) as session:
        return await paired_calls(direct, session, read, "in-memory MCP")


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
    direct = World(domain)
    runs: list[tuple[str, Paired]] = []
    runs.append(("get_patient, in-memory MCP vs World.call", anyio.run(in_memory, World(domain), direct)))
    with http_server_thread(WorldServer(domain)) as url:
        reads, writes = anyio.run(over_http, url, direct, "HTTP (server thread)")
    runs += [("get_patient, HTTP to a server thread in this process vs World.call", reads),
             ("update_patient, HTTP to a server thread in this process vs World.call", writes)]  # fmt: skip
    with server_process() as url:
        reads, writes = anyio.run(over_http, url, direct, "HTTP (server process)")
    runs += [("get_patient, HTTP to `toolshift world serve` in its own process vs World.call", reads),
             ("update_patient, HTTP to `toolshift world serve` in its own process vs World.call", writes)]  # fmt: skip
    rows = [row for what, run in runs for row in run.rows(what)]
    rows.append(("HTTP, server in its own process: get_patient p99 ms", f"{1000 * percentile(reads.values('b'), 0.99):.2f}", "<= 3 at p50"))  # fmt: skip
    record(
        "world MCP call latency (clinic), each path interleaved with World.call on the same call",
        rows,
        note=f"Per path: {CALLS} calls after {WARMUP} warm-up calls, each call made directly (`World.call` on a clinic "
        "world in this process) and over the path (same tool, same arguments), alternating; one client session, "
        "official mcp SDK client and server (uvicorn, loopback, JSON responses); wall clock. Each pairing: "
        + " ".join(run.note() for _, run in runs[:1])
        + " Loads for every pairing are in the table.",
    )


if __name__ == "__main__":
    main()
