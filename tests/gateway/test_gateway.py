"""The gateway with the `mcp` SDK's own client: in-memory and over streamable HTTP, one backend session per
client session, tool lists cached, clear errors for an unreachable backend, health, metrics, the token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from toolshift.errors import BadInputError
from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.backends import BackendUnreachable
from toolshift.gateway.build import prepare
from toolshift.gateway.server import http_gateway_thread, in_memory_client
from toolshift.world import load_domain
from toolshift.world.mcp.serve import WorldServer, free_port


def _gateway(**fields: Any) -> tuple[Any, GatewayServer]:
    fields.setdefault("backends", [{"name": "clinic", "world": "clinic"}])
    gw = build_gateway(GatewayConfig(**fields))
    return gw, GatewayServer(gw)


def test_fronts_a_world_one_backend_session_per_client_session_tools_cached():
    gw, server = _gateway()
    world_server = gw.backends["clinic"].world_server

    async def main() -> None:
        await prepare(gw)
        async with gw.running():
            async with in_memory_client(server) as a, in_memory_client(server) as b:
                for _ in range(3):
                    listed = await a.list_tools()
                assert len(listed.tools) == 41
                assert {t.name for t in listed.tools} == {t.name for t in load_domain("clinic").tools}
                cancelled = await a.call_tool("cancel_appointment", {"appointment_id": "APT-00003"})
                assert cancelled.structured_content["status"] == "cancelled"
                assert cancelled.meta["toolshift/changes"][0]["after"] == "cancelled"
                # b has its own backend session, so its own world: a's write is not in it
                seen = await b.call_tool("get_appointment", {"appointment_id": "APT-00003"})
                assert seen.structured_content["status"] == "scheduled"
                again = await a.call_tool("get_appointment", {"appointment_id": "APT-00003"})
                assert again.structured_content["status"] == "cancelled"
                assert len(world_server.sessions) == 2  # one backend world per client session, not per call
                missing = await a.call_tool("get_patient", {"patient_id": "NOPE"})
                assert missing.is_error and json.loads(missing.content[0].text)["code"] == "not_found"
                metrics = gw.metrics()
                assert metrics["sessions_open"] == 2 and metrics["calls"] == 4
                assert metrics["tools_list_requests"] == 2  # a listed three times, b never: once per session
            await anyio.sleep(0)
        assert gw.metrics()["sessions_open"] == 0 and world_server.sessions == []

    anyio.run(main)


def test_tools_list_changed_refreshes_the_cache_and_reaches_the_client():
    gw, server = _gateway()
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.append(message.method)

    async def main() -> None:
        async with gw.running(), Client(server.server, mode="legacy", message_handler=on_message) as client:
            await client.list_tools()
            session = next(iter(gw.sessions.values()))
            handle = session.backends["clinic"]
            world = gw.backends["clinic"].world_server.sessions[0]
            world.set_tools([t for t in world.tools if t.name != "delete_patient"])
            await handle._on_message(types.ToolListChangedNotification())
            listed = await client.list_tools()
            assert "delete_patient" not in {t.name for t in listed.tools} and len(listed.tools) == 40
            assert handle.list_calls == 2
            for _ in range(50):
                if heard:
                    break
                await anyio.sleep(0.01)
        assert heard == ["notifications/tools/list_changed"]

    anyio.run(main)


def test_unreachable_backend_is_a_clear_error_at_start_and_per_call():
    gw, _ = _gateway(backends=[{"name": "gone", "url": "http://127.0.0.1:9/mcp"}], call_timeout=5)
    with pytest.raises(
        BackendUnreachable, match=r"backend 'gone' \(url http://127.0.0.1:9/mcp\) is unreachable"
    ):
        anyio.run(prepare, gw)

    world = WorldServer(load_domain("clinic"))
    with _stoppable_http(world) as (url, stop):
        gw, server = _gateway(backends=[{"name": "remote", "url": url}], call_timeout=5)

        async def main() -> None:
            async with gw.running(), in_memory_client(server) as client:
                ok = await client.call_tool("get_patient", {"patient_id": "PAT-00001"})
                assert not ok.is_error
                await anyio.to_thread.run_sync(stop)  # the backend goes away mid-session
                with anyio.fail_after(60), pytest.raises(MCPError, match=r"backend 'remote' .* unreachable"):
                    await client.call_tool("get_patient", {"patient_id": "PAT-00001"})

        anyio.run(main)


@contextmanager
def _stoppable_http(world: WorldServer) -> Iterator[tuple[str, Any]]:
    """A world over HTTP in a thread, and a function that stops it while the test goes on."""
    import threading
    import time

    import uvicorn

    port = free_port()
    userver = uvicorn.Server(uvicorn.Config(world.http_app(), port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=userver.run, daemon=True)
    thread.start()
    while not userver.started:
        assert thread.is_alive()
        time.sleep(0.01)

    def stop() -> None:
        # Gone at once, as a killed backend is: uvicorn's graceful shutdown would wait for the gateway's
        # open session to close, which it never does here (the join timed out after 30 s every run).
        userver.should_exit = userver.force_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive(), "the backend did not stop"

    try:
        yield f"http://127.0.0.1:{port}/mcp", stop
    finally:
        stop()


def anyio_sleep_sync(seconds: float) -> None:
    import time

    time.sleep(seconds)


def _http_client(url: str, token: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx.AsyncClient(headers=headers)), mode="legacy")


def test_http_sessions_health_metrics_and_the_token():
    _, server = _gateway(transport="http")
    with http_gateway_thread(server, token="s3cret") as url:
        base = url.rsplit("/", 1)[0]
        assert httpx.get(f"{base}/health").json()["status"] == "ok"
        assert httpx.get(f"{base}/metrics").status_code == 401
        assert httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 401

        async def main() -> None:
            async with _http_client(url, "s3cret") as a, _http_client(url, "s3cret") as b:
                await a.call_tool("cancel_appointment", {"appointment_id": "APT-00003"})
                seen = await b.call_tool("get_appointment", {"appointment_id": "APT-00003"})
                assert seen.structured_content["status"] == "scheduled"
                metrics = httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer s3cret"}).json()
                assert metrics["sessions_open"] == 2

            with pytest.raises(Exception):  # noqa: B017 — the wrong token never reaches a backend
                async with _http_client(url, "wrong") as c:
                    await c.list_tools()

        anyio.run(main)
        metrics = httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer s3cret"}).json()
        assert metrics["sessions_open"] == 0 and metrics["sessions_opened"] == 2


def test_idle_http_sessions_are_reclaimed_with_their_backend_sessions():
    gw, server = _gateway(transport="http", idle_timeout=0.5)
    with http_gateway_thread(server) as url:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        headers = {"Accept": "application/json, text/event-stream"}
        opened = httpx.post(url, json=init, headers=headers)
        sid = opened.headers["mcp-session-id"]
        headers |= {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        called = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "get_patient", "arguments": {"patient_id": "PAT-00001"}}},
            headers=headers,
        )  # fmt: skip
        assert called.status_code == 200 and gw.metrics()["sessions_open"] == 1
        # the client never ends its session: the gateway closes it (and its backend world) once idle
        for _ in range(600):
            if gw.metrics()["sessions_open"] == 0:
                break
            anyio_sleep_sync(0.05)
        assert gw.metrics()["sessions_open"] == 0
        assert gw.backends["clinic"].world_server.sessions == []


def test_beyond_loopback_needs_a_token(monkeypatch):
    from toolshift.gateway.server import check_binding

    with pytest.raises(BadInputError, match="TOOLSHIFT_GATEWAY_TOKEN"):
        check_binding("0.0.0.0", None, "TOOLSHIFT_GATEWAY_TOKEN")
    check_binding("0.0.0.0", "t", "TOOLSHIFT_GATEWAY_TOKEN")
    check_binding("127.0.0.1", None, "TOOLSHIFT_GATEWAY_TOKEN")


def test_two_backends_route_by_prefix_and_a_clash_is_refused():
    gw, server = _gateway(backends=[{"name": "a", "world": "clinic"}, {"name": "b", "world": "library"}])

    async def main() -> None:
        await prepare(gw)
        async with gw.running(), in_memory_client(server) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"get_patient", "get_title"} <= names

    anyio.run(main)
    clash, _ = _gateway(backends=[{"name": "a", "world": "clinic"}, {"name": "b", "world": "clinic"}])
    with pytest.raises(BadInputError, match="both offer the tool"):
        anyio.run(prepare, clash)
    prefixed, _ = _gateway(
        backends=[{"name": "a", "world": "clinic"}, {"name": "b", "world": "clinic", "prefix": "b."}]
    )
    assert "b.get_patient" in {t.name for t in anyio.run(prefixed.probe)}
