"""Isolation and resources over streamable HTTP, with the real `mcp` SDK client in every protocol era.

Clients pinned to the session-less 2026-07-28 era are refused without a world key and isolated with
one; handshake-era clients (`legacy`, and `auto`, which falls back to it) get a world per session.
Idle expiry is driven by an injected clock, never by waiting.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from toolshift.world.mcp.serve import (
    OPEN_WORLD,
    WorldServer,
    close_world,
    free_port,
    http_server_thread,
    open_world,
    parse_tool_result,
    world_meta,
)
from toolshift.world.mcp.sessions import SessionTable

pytestmark = pytest.mark.slow

MODERN = "2026-07-28"


class FakeClock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _phone(client: Client, key: str | None = None) -> str:
    meta = world_meta(key) if key else None
    r = await client.call_tool("get_patient", {"patient_id": "PAT-00001"}, meta=meta)
    return parse_tool_result(r)[1]["phone"]


async def _set_phone(client: Client, phone: str, key: str | None = None) -> None:
    meta = world_meta(key) if key else None
    r = await client.call_tool("update_patient", {"patient_id": "PAT-00001", "phone": phone}, meta=meta)
    assert not r.is_error, parse_tool_result(r)


async def _refusal(client: Client) -> str:
    """The MCP error message a client gets on connecting (the SDK raises it inside an exception group)."""
    try:
        async with client:
            pass
    except BaseException as exc:  # unwrapped below; re-raised unless it is an MCP error
        found = exc
        while isinstance(found, BaseExceptionGroup) and len(found.exceptions) == 1:
            found = found.exceptions[0]
        if isinstance(found, MCPError):
            return found.error.message
        raise
    raise AssertionError("the client connected")


def test_a_2026_client_without_a_world_key_is_refused_not_served_a_shared_world(clinic_domain):
    server = WorldServer(clinic_domain)
    seeded = server.base.snapshot()

    async def run(url: str) -> None:
        async with Client(url, mode=MODERN) as a, Client(url, mode=MODERN) as b:
            assert a.protocol_version == MODERN
            with pytest.raises(MCPError) as refused:
                await _set_phone(a, "000")
            assert (
                OPEN_WORLD in refused.value.error.message and "toolshift/world" in refused.value.error.message
            )
            with pytest.raises(MCPError):
                await _phone(b)
            assert len((await b.list_tools()).tools) == len(server.base.tools)  # listing needs no world

    with http_server_thread(server) as url:
        anyio.run(run, url)
    assert server.base.changes_since(seeded) == [] and server.shared.changes_since(seeded) == []


@pytest.mark.parametrize("mode", ["legacy", "auto", MODERN])
def test_two_clients_never_see_each_others_writes_in_any_era(clinic_domain, mode):
    server = WorldServer(clinic_domain)

    async def run(url: str) -> None:
        async with Client(url, mode=mode) as a, Client(url, mode=mode) as b:
            ka = await open_world(a.session) if mode == MODERN else None
            kb = await open_world(b.session) if mode == MODERN else None
            seeded = await _phone(b, kb)
            await _set_phone(a, "000", ka)
            assert await _phone(a, ka) == "000"
            assert await _phone(b, kb) == seeded
            await _set_phone(b, "111", kb)
            assert await _phone(a, ka) == "000"
            assert len(server.sessions) == 2
            if mode == MODERN:
                await close_world(a.session, ka)
                assert len(server.sessions) == 1
                with pytest.raises(MCPError, match="unknown world key"):
                    await _phone(a, ka)

    with http_server_thread(server) as url:
        anyio.run(run, url)


def test_idle_sessions_and_world_keys_are_closed_after_the_timeout(clinic_domain):
    clock = FakeClock()
    server = WorldServer(clinic_domain, idle_timeout=60, clock=clock)

    async def run(url: str) -> None:
        async with Client(url, mode="legacy") as old, Client(url, mode=MODERN) as modern:
            await _set_phone(old, "000")
            key = await open_world(modern.session)
            await _set_phone(modern, "222", key)
            assert len(server.sessions) == 2 and len(server.table) == 2
            clock.now += 59
            await _phone(old)  # used within the timeout: both stay
            assert len(server.table) == 2
            clock.now += 2  # the world key is now 61 s idle, the session 2 s
            async with Client(url, mode="legacy") as fresh:
                assert len(server.table) == 2  # the key was closed before `fresh` was admitted
                with pytest.raises(MCPError, match="60 s unused"):
                    await _phone(modern, key)
                clock.now += 59  # `old` is 61 s idle, `fresh` 59 s
                await _phone(fresh)
                assert len(server.table) == 1 and len(server.sessions) == 1
                with pytest.raises(MCPError, match="60 s unused"):
                    await _phone(old)
                assert await _phone(fresh) != "000"  # a new session starts from the seeded world

    with http_server_thread(server) as url:
        anyio.run(run, url)


async def _until(done, bound: float = 60.0) -> None:
    """Wait for a condition the server reaches on its own; `bound` is a liveness bound, never a speed check."""
    give_up = time.monotonic() + bound
    while not done():
        assert time.monotonic() < give_up, "the server never reached the state"
        await anyio.sleep(0.01)


def test_sessions_past_the_cap_are_refused_clearly_until_one_ends(clinic_domain):
    clock = FakeClock()
    server = WorldServer(clinic_domain, idle_timeout=300, max_sessions=2, clock=clock)

    async def run(url: str) -> None:
        async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
            await _phone(a)
            await _phone(b)
            message = await _refusal(Client(url, mode="legacy"))
            assert "--max-sessions 2" in message and "2 sessions are open" in message
            async with Client(url, mode=MODERN) as modern:
                with pytest.raises(MCPError, match="--max-sessions 2"):
                    await open_world(modern.session)
        # `a` and `b` ended their sessions (HTTP DELETE) on leaving: there is room again. The server finishes
        # its bookkeeping of a DELETE after the response is sent, so the table is read until it empties.
        await _until(lambda: len(server.table) == 0)
        async with Client(url, mode="legacy") as c:
            await _phone(c)
            assert len(server.table) == 1
            clock.now += 301
            async with Client(url, mode="legacy") as d, Client(url, mode="legacy") as e:
                await _phone(d)
                await _phone(e)  # `c` was idle past the timeout: it made room

    with http_server_thread(server) as url:
        anyio.run(run, url)


def test_a_session_serving_a_request_is_never_idle():
    clock = FakeClock()
    table = SessionTable(idle_timeout=10, clock=clock)
    table.add("session:a")
    table.add("session:b")
    table.live["session:a"].in_flight = 1
    clock.now += 11
    assert [s.key for s in table.expired()] == ["session:b"]
    assert anyio.run(table.reap) == 1 and list(table.live) == ["session:a"]
    assert "10 s unused" in table.ended["session:b"]


def test_limits_are_checked():
    with pytest.raises(ValueError):
        SessionTable(idle_timeout=0)
    with pytest.raises(ValueError):
        SessionTable(max_sessions=0)
    assert SessionTable(idle_timeout=None, max_sessions=None).full() is False


def _serve(*flags: str) -> list[str]:
    return [sys.executable, "-m", "toolshift", "world", "serve", "clinic", "--transport", "http", *flags]


@pytest.mark.parametrize(
    ("flag", "value"), [("--idle-timeout", "-1"), ("--idle-timeout", "nan"), ("--max-sessions", "-2")]
)
def test_serve_refuses_bad_limits_in_one_line(flag, value):
    proc = subprocess.run(_serve(flag, value), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 2 and flag in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_serve_max_sessions_flag_refuses_the_next_session_clearly():
    port = free_port()
    proc = subprocess.Popen(
        _serve("--port", str(port), "--max-sessions", "1", "--idle-timeout", "900"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"

    async def run() -> str:
        async with Client(url, mode="legacy") as first:
            await _phone(first)
            return await _refusal(Client(url, mode="legacy"))

    try:
        _wait_for_port(port, proc)
        message = anyio.run(run)
        assert "--max-sessions 1" in message and "900 s" in message
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=120)
    assert "sessions unused for 900 s are closed, at most 1 live" in err


def _wait_for_port(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 600  # a hang guard, never a speed limit
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
