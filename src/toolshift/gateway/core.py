"""The gateway itself, apart from any transport: client sessions, their backends, routing and the chain.

`Gateway.running()` holds the task group that owns every backend client; leaving it ends every open
session the way a client ending it would (so recordings are flushed: graceful shutdown) and then closes
the backends. A client session opens one `BackendSession` per backend on its first request and keeps
them until it ends or is reclaimed idle. Tool names are routed to their backend (with the backend's
`prefix`); two backends offering one name is refused at start, naming both.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolshift.errors import BadInputError
from toolshift.gateway.backends import Backend, BackendSession, BackendUnreachable
from toolshift.gateway.chain import CallOutcome, GatewaySession, Middleware, Next, Route
from toolshift.gateway.config import GatewayConfig

log = logging.getLogger(__name__)


class Gateway:
    """Backends, the middleware chain and the open client sessions."""

    def __init__(self, config: GatewayConfig, middleware: list[Middleware] | None = None) -> None:
        self.config = config
        self.backends = {b.name: Backend(b, call_timeout=config.call_timeout) for b in config.backends}
        self.middleware: list[Middleware] = []
        self.sessions: dict[str, GatewaySession] = {}
        self.counters: dict[str, int] = {
            "sessions_opened": 0,
            "sessions_closed": 0,
            "calls": 0,
            "call_errors": 0,
            "backend_unreachable": 0,
            "tools_list_requests": 0,
        }
        self.backend_seconds = 0.0
        self.own_ms: deque[float] = deque(maxlen=10_000)
        """The gateway's own time per call (the chain, minus the time the backend took), the last 10,000."""
        self._tg: anyio.abc.TaskGroup | None = None
        self.redactor: Any = None
        """The `Redactor` of the gateway's own secrets (token, backend env), kept alive for log scrubbing."""
        self._chain: Next = self._forward
        self.use(middleware or [])

    def use(self, middleware: list[Middleware]) -> None:
        """Install the chain (outermost first)."""
        self.middleware = list(middleware)
        for m in self.middleware:
            m.attach(self)
        self._chain = self._build_chain()

    # --- life ----------------------------------------------------------------------------------

    async def probe(self) -> list[types.Tool]:
        """Reach every backend once and check its tool names route uniquely; the tools as exposed.

        Raises `BackendUnreachable` (or `BadInputError` for two backends offering one name) on the first failure.
        """
        listed = {name: await b.probe() for name, b in self.backends.items()}
        return [r.tool for r in self._routes_of(listed).values()]

    async def probe_each(self) -> list[tuple[str, list[types.Tool] | None, str]]:
        """Reach every backend once, each whatever the others do: (name, its tools or None, why not)."""
        out: list[tuple[str, list[types.Tool] | None, str]] = []
        for name, b in self.backends.items():
            try:
                out.append((name, await b.probe(), ""))
            except BackendUnreachable as exc:
                out.append((name, None, str(exc)))
        return out

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """The gateway's life: backend clients live in this task group; leaving it flushes every session."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    for session in list(self.sessions.values()):
                        await self.end_session(session, "shutdown")
                self._tg = None
                tg.cancel_scope.cancel()

    async def open_session(self, session: GatewaySession | None = None) -> GatewaySession:
        """A client session with one open backend session per backend (raises `BackendUnreachable`)."""
        if self._tg is None:
            raise RuntimeError("the gateway is not running: use `async with gateway.running()`")
        session = session or GatewaySession()
        try:
            for name, backend in self.backends.items():
                handle = BackendSession(backend)
                handle.listeners.append(lambda s=session: self._tools_changed(s))
                await self._tg.start(handle.own)
                session.backends[name] = handle
        except BackendUnreachable:
            self.counters["backend_unreachable"] += 1
            for handle in session.backends.values():
                handle.close()
            raise
        self.sessions[session.id] = session
        self.counters["sessions_opened"] += 1
        for m in self.middleware:
            await m.open(session)
        return session

    async def end_session(self, session: GatewaySession, reason: str = "closed") -> None:
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.id, None)
        for m in self.middleware:
            try:
                m.close(session, reason)
            except Exception:  # one middleware's failure must not keep the others from flushing
                log.exception("middleware %s failed closing session %s", m.name, session.id)
        for handle in session.backends.values():
            handle.close()
        self.counters["sessions_closed"] += 1

    async def _tools_changed(self, session: GatewaySession) -> None:
        session.routes = None
        for m in self.middleware:
            await m.tools_changed(session)
        if session.notify is not None:
            try:
                await session.notify()
            except Exception:  # best effort: a client that went away needs no notice
                log.debug("could not forward tools/list_changed", exc_info=True)

    # --- tools ---------------------------------------------------------------------------------

    def _routes_of(self, listed: dict[str, list[types.Tool]]) -> dict[str, Route]:
        routes: dict[str, Route] = {}
        for backend, tools in listed.items():
            prefix = self.backends[backend].config.prefix
            for tool in tools:
                exposed = prefix + tool.name
                if exposed in routes:
                    raise BadInputError(
                        f"backends {routes[exposed].backend!r} and {backend!r} both offer the tool {exposed!r}: "
                        "give one of them a prefix",
                        field="backends",
                    )
                shown = tool.model_copy(update={"name": exposed}) if prefix else tool
                routes[exposed] = Route(backend, tool.name, shown)
        return routes

    async def routes(self, session: GatewaySession) -> dict[str, Route]:
        if session.routes is None:
            listed = {}
            for name, handle in session.backends.items():
                before = handle.list_calls
                listed[name] = await handle.list_tools()
                self.counters["tools_list_requests"] += handle.list_calls - before
            session.routes = self._routes_of(listed)
        return session.routes

    async def list_tools(self, session: GatewaySession) -> list[types.Tool]:
        tools = [r.tool for r in (await self.routes(session)).values()]
        for m in self.middleware:
            tools = await m.list_tools(session, tools)
        return tools

    # --- calls ---------------------------------------------------------------------------------

    def _build_chain(self) -> Next:
        call_next: Next = self._forward
        for m in reversed(self.middleware):
            call_next = _bind(m, call_next)
        return call_next

    async def _forward(self, session: GatewaySession, name: str, arguments: dict[str, Any]) -> CallOutcome:
        route = (await self.routes(session)).get(name)
        if route is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}: not offered by any backend")
        started = time.perf_counter()
        result = await session.backends[route.backend].call_tool(route.name, arguments)
        seconds = time.perf_counter() - started
        self.backend_seconds += seconds
        return CallOutcome(result=result, backend_seconds=seconds)

    async def call_tool(self, session: GatewaySession, name: str, arguments: dict[str, Any]) -> CallOutcome:
        """The client's call through the chain; an unreachable backend is an `isError` result naming it."""
        self.counters["calls"] += 1
        session.calls += 1
        started = time.perf_counter()
        try:
            outcome = await self._chain(session, name, arguments)
        except BackendUnreachable as exc:
            self.counters["backend_unreachable"] += 1
            self.counters["call_errors"] += 1
            raise MCPError(types.INTERNAL_ERROR, f"toolshift gateway: {exc}") from None
        if outcome.result.is_error:
            self.counters["call_errors"] += 1
        backend = outcome.backend_seconds + sum(lk.seconds for lk in outcome.lookups)
        self.own_ms.append((time.perf_counter() - started - backend) * 1000)
        return outcome

    def metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.counters)
        out["sessions_open"] = len(self.sessions)
        out["backend_seconds"] = round(self.backend_seconds, 6)
        if self.own_ms:
            out["gateway_own_ms_p50"] = round(statistics.median(self.own_ms), 4)
        for m in self.middleware:
            for key, value in m.metrics().items():
                out[f"{m.name}_{key}"] = value
        return out


def _bind(m: Middleware, call_next: Next) -> Next:
    async def step(session: GatewaySession, name: str, arguments: dict[str, Any]) -> CallOutcome:
        return await m.call(session, name, arguments, call_next)

    return step
