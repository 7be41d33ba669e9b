"""The middleware chain: what a middleware sees of a client session, a tool listing and a call.

A middleware may rewrite the tool list a client sees (a supply middleware such as Steward's adds
`retrieve_tools` and hides the rest), wrap each call (record it, answer it, make lookups after it), and
hear when a session opens, ends, or its backend's tools change. The chain runs outermost first; the
innermost step forwards to the backend. A call's answer travels up as a `CallOutcome`: the backend's
result untouched plus what middleware added (lookups), so an outer recorder records what the backend
said and the server renders the additions once, at the top.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from toolshift.gateway.backends import BackendSession


@dataclass
class ServedLookup:
    """A read-only lookup the flows middleware made after a call, delivered with that call's response."""

    tool: str
    arguments: dict[str, Any]
    key: str
    score: float
    result: types.CallToolResult
    state_version: int
    seconds: float = 0.0
    """How long the backend took to answer it."""


@dataclass
class CallOutcome:
    """One call's answer on its way up the chain."""

    result: types.CallToolResult
    lookups: list[ServedLookup] = field(default_factory=list)
    answered_by: str = "backend"
    """`backend`, or `lookup` when a prefetched lookup answered the call (same key, no write between)."""
    backend_seconds: float = 0.0


@dataclass
class Route:
    """Where an exposed tool name goes: a backend session and the tool's name there."""

    backend: str
    name: str
    tool: types.Tool


@dataclass
class GatewaySession:
    """One client session of the gateway: its backend sessions, routes, and middleware state."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    backends: dict[str, BackendSession] = field(default_factory=dict)
    routes: dict[str, Route] | None = None
    state: dict[str, Any] = field(default_factory=dict)
    """Per-middleware state, keyed by the middleware's name."""
    opened: float = field(default_factory=time.time)
    calls: int = 0
    notify: Callable[[], Awaitable[None]] | None = None
    """Tells this session's client its tools changed (set by the server from the first request)."""
    closed: bool = False
    task: str | None = None
    """The task the client says it is doing (`_meta["toolshift/task"]` on a call), for the recording."""


TASK_META_KEY = "toolshift/task"


Next = Callable[[GatewaySession, str, dict[str, Any]], Awaitable[CallOutcome]]


class Middleware:
    """A step of the chain. The defaults pass everything through."""

    name = "middleware"
    gateway: Any = None
    """The `Gateway` this middleware serves in (set by the gateway): routes, backend sessions."""

    def attach(self, gateway: Any) -> None:
        self.gateway = gateway

    async def open(self, session: GatewaySession) -> None:
        """The client session's first request (its backends are open)."""

    def close(self, session: GatewaySession, reason: str) -> None:
        """The client session ended (`closed`, `idle`, `shutdown`): flush what it holds. Must not raise."""

    async def tools_changed(self, session: GatewaySession) -> None:
        """A backend said its tools changed: drop anything derived from the old list."""

    async def list_tools(self, session: GatewaySession, tools: list[types.Tool]) -> list[types.Tool]:
        return tools

    async def call(
        self, session: GatewaySession, name: str, arguments: dict[str, Any], call_next: Next
    ) -> CallOutcome:
        return await call_next(session, name, arguments)

    def metrics(self) -> dict[str, Any]:
        return {}
