"""The gateway as an MCP server (the SDK's low-level `Server`): stdio, streamable HTTP, in-memory.

Each MCP connection (the stdio process, an HTTP `Mcp-Session-Id` session, an in-memory client) is one
`GatewaySession`, opened on its first request and ended when the connection ends, when the SDK reclaims
it idle (`idle_timeout`), or at shutdown. Over HTTP, `server/discover` is refused so clients fall back to
the initialize handshake and its sessions (a backend session per client session needs a client session),
and a 2026-07-28 request without one is refused with that reason. `/health` answers `{"status": "ok"}`
and `/metrics` the gateway's counters as JSON, or in Prometheus' text format to a scraper (an Accept naming
`text/plain` or OpenMetrics, or `?format=prometheus`); each POST to the MCP path is screened first
(`toolshift.world.mcp.http_guard.ScreenGate`: malformed JSON-RPC gets one short error per request id); with a token (required when bound beyond loopback) every
path but `/health` needs `Authorization: Bearer <token>`. A request whose Host is not loopback to a gateway
bound to loopback gets 421 on every path (`HostGate`: the viewer and the world server share the rule).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolshift.gateway.backends import BackendUnreachable
from toolshift.gateway.chain import TASK_META_KEY, GatewaySession
from toolshift.gateway.core import Gateway
from toolshift.gateway.flows import render_outcome
from toolshift.world.mcp.http_guard import HostGate, ScreenGate, TokenGate, require_token

__all__ = ["GatewayServer", "TokenGate", "check_binding", "http_gateway_thread", "in_memory_client"]

_STATE_KEY = "toolshift.gateway"


class GatewayServer:
    """An MCP server in front of a `Gateway`."""

    def __init__(self, gateway: Gateway, *, name: str = "toolshift-gateway") -> None:
        self.gateway = gateway
        self.single: GatewaySession | None = None
        self.single_session = False
        self._opening = anyio.Lock()
        self.server: Server[Any] = Server(
            name,
            version="1",
            instructions="toolshift gateway: "
            + ", ".join(f"{b.name} ({b.describe()})" for b in gateway.backends.values()),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.server.add_request_handler("server/discover", types.RequestParams, self._discover)

    def init_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    async def session_for(self, ctx: ServerRequestContext[Any]) -> GatewaySession:
        """This connection's gateway session, opened (with its backend sessions) on its first request."""
        if self.single_session:
            async with self._opening:
                if self.single is None or self.single.closed:
                    self.single = await self._open(ctx)
            return self.single
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and ctx.request is not None:
            raise MCPError(
                types.INVALID_REQUEST,
                "the toolshift gateway keeps one backend session per client session, and a 2026-07-28 request "
                "over HTTP has none: connect with the initialize handshake (an Mcp-Session-Id session)",
            )
        connection = getattr(ctx.session, "_connection", None)
        if connection is None:
            raise MCPError(types.INTERNAL_ERROR, "no connection to keep this session's backends in")
        session = connection.state.get(_STATE_KEY)
        if session is None:
            session = await self._open(ctx)
            connection.state[_STATE_KEY] = session
            connection.exit_stack.push_async_callback(self.gateway.end_session, session, "closed")
        return session

    async def _open(self, ctx: ServerRequestContext[Any]) -> GatewaySession:
        try:
            session = await self.gateway.open_session()
        except BackendUnreachable as exc:
            raise MCPError(types.INTERNAL_ERROR, f"toolshift gateway: {exc}") from None
        server_session = ctx.session
        session.notify = server_session.send_tool_list_changed
        return session

    async def _discover(
        self, ctx: ServerRequestContext[Any], params: types.RequestParams
    ) -> types.DiscoverResult:
        from toolshift.world.mcp.serve import discover_sessions_only

        return discover_sessions_only(self.server, ctx, "the gateway needs sessions (initialize handshake)")

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        session = await self.session_for(ctx)
        try:
            tools = await self.gateway.list_tools(session)
        except BackendUnreachable as exc:
            raise MCPError(types.INTERNAL_ERROR, f"toolshift gateway: {exc}") from None
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session = await self.session_for(ctx)
        task = (ctx.meta or {}).get(TASK_META_KEY)
        if task is not None:
            session.task = str(task)[:200]
        outcome = await self.gateway.call_tool(session, params.name, dict(params.arguments or {}))
        return render_outcome(outcome)

    # --- transports -----------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve this process's stdin and stdout: one client, one gateway session."""
        from mcp.server.stdio import stdio_server

        from toolshift.world.mcp.jsonrpc_guard import ScreenedLines

        self.single_session = True
        lines = ScreenedLines.stdin()
        async with self.gateway.running(), stdio_server(stdin=lines) as (read, write):
            lines.replies = write
            await self.server.run(read, write, self.init_options())
            if self.single is not None:
                await self.gateway.end_session(self.single, "closed")

    def http_app(self, *, host: str = "127.0.0.1", path: str = "/mcp", token: str | None = None) -> Any:
        """The ASGI app: streamable HTTP at `path`, `/health`, `/metrics`, behind the token check."""
        from starlette.requests import Request
        from starlette.responses import JSONResponse, PlainTextResponse
        from starlette.routing import Route

        config = self.gateway.config

        async def health(request: Request) -> JSONResponse:
            return JSONResponse({"status": "ok", "backends": sorted(self.gateway.backends)})

        async def metrics(request: Request) -> Any:
            values = self.gateway.metrics()
            if wants_prometheus(request.headers.get("accept", ""), request.query_params.get("format")):
                return PlainTextResponse(prometheus_text(values), media_type=PROMETHEUS_TYPE)
            return JSONResponse(values)

        app = self.server.streamable_http_app(
            streamable_http_path=path,
            host=host,
            json_response=True,
            session_idle_timeout=config.idle_timeout,
            max_sessions=config.max_sessions,
            custom_starlette_routes=[Route("/health", health), Route("/metrics", metrics)],
        )
        inner_lifespan = app.router.lifespan_context
        gateway = self.gateway

        @asynccontextmanager
        async def lifespan(a: Any) -> AsyncIterator[Any]:
            async with gateway.running(), inner_lifespan(a) as state:
                yield state

        app.router.lifespan_context = lifespan
        limit, idle = config.max_sessions, config.idle_timeout
        reclaimed = (
            f"sessions unused for {idle:g} s are closed (idle_timeout)" if idle else "idle sessions stay open"
        )
        busy = (
            f"toolshift gateway: {limit} sessions are open, the limit (max_sessions in the gateway config); "
            f"end one (HTTP DELETE) or retry later: {reclaimed}"
        )
        # malformed JSON-RPC and a refusal for capacity are answered under their id, as `world serve` answers them
        screened = ScreenGate(app, path, busy=lambda: busy)
        return HostGate(TokenGate(screened, token) if token else screened, host)

    def run_http(self, *, host: str, port: int, token: str | None) -> None:
        import uvicorn

        check_binding(host, token, self.gateway.config.token_env)
        uvicorn.run(self.http_app(host=host, token=token), host=host, port=port, log_level="warning")


PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_COUNTERS = frozenset(
    {
        "sessions_opened",
        "sessions_closed",
        "calls",
        "call_errors",
        "backend_unreachable",
        "tools_list_requests",
    }
)


def wants_prometheus(accept: str, fmt: str | None) -> bool:
    """`?format=prometheus`, or an Accept naming Prometheus' text or OpenMetrics before (or without) JSON."""
    if fmt is not None:
        return fmt == "prometheus"
    accept = accept.lower()
    text = min(
        (accept.find(t) for t in ("text/plain", "application/openmetrics-text") if t in accept), default=-1
    )
    json_at = accept.find("application/json")
    return text >= 0 and (json_at < 0 or text < json_at)


def prometheus_text(values: dict[str, Any]) -> str:
    """The gateway's numeric metrics in Prometheus' text exposition format (0.0.4), prefixed `toolshift_gateway_`.

    The gateway's own counters are counters (`_total`), `backend_seconds` a counter in seconds, the rest gauges.
    """
    lines: list[str] = []
    for key in sorted(values):
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        name = "toolshift_gateway_" + "".join(c if c.isalnum() or c == "_" else "_" for c in key)
        kind = "counter" if key in _COUNTERS or key == "backend_seconds" else "gauge"
        if kind == "counter":
            name += "_total"
        lines += [
            f"# HELP {name} toolshift gateway {key.replace('_', ' ')}",
            f"# TYPE {name} {kind}",
            f"{name} {float(value) if isinstance(value, float) else value}",
        ]
    return "\n".join(lines) + "\n"


def check_binding(host: str, token: str | None, token_env: str) -> None:
    """HTTP bound beyond loopback needs a token: refuse to start without one."""
    require_token(host, token, token_env)


@asynccontextmanager
async def in_memory_client(server: GatewayServer) -> AsyncIterator[Client]:
    """An SDK client connected in-process (memory streams, the real protocol) to a running gateway."""
    async with Client(server.server, mode="legacy") as client:
        yield client


@contextmanager
def http_gateway_thread(
    server: GatewayServer, *, host: str = "127.0.0.1", port: int | None = None, token: str | None = None,
    timeout: float = 60.0,
) -> Iterator[str]:  # fmt: skip
    """Run the gateway's HTTP transport on a loopback port in a background thread; yields the MCP URL."""
    from toolshift.world.mcp.serve import loopback_http_thread

    with loopback_http_thread(
        server, name="gateway HTTP", host=host, port=port, token=token, timeout=timeout
    ) as url:
        yield url
