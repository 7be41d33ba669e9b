"""The live sessions of a world server over HTTP: an idle timeout, a cap, and the gate in front of the SDK.

Two kinds of session hold a world: a handshake-era HTTP session (`Mcp-Session-Id`; the SDK owns it and
its world lives in the SDK connection's state) and a world key of the session-less 2026-07-28 era (the
table owns that world). `SessionTable` knows when each was last used; `reap()` ends those idle longer
than the timeout, and a new session past the cap is refused. Time comes from an injectable clock, so
expiry is tested by moving the clock, never by waiting.

`SessionGate` is the ASGI app in front of the SDK's streamable HTTP app. Every request first reaps what
is due; each POST body is screened (`jsonrpc_guard`), so malformed JSON-RPC gets one error per request
id; a POST opening a session is refused past the cap with its own id; and requests touch their session.
An idle session is ended the way a client ends it: an HTTP DELETE, sent by the gate to the SDK app.
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolshift.world.limits import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS
from toolshift.world.mcp.http_guard import reply as _reply
from toolshift.world.mcp.http_guard import screened_post
from toolshift.world.mcp.jsonrpc_guard import SERVER_BUSY, error_reply, top_level_id

if TYPE_CHECKING:
    from toolshift.world.state.world import World

log = logging.getLogger(__name__)

_ENDED_KEPT = 1024

Clock = Callable[[], float]


@dataclass
class LiveSession:
    """One session the server holds: when it was last used, and how to end it."""

    key: str
    last_used: float
    world: World | None = None
    """The world a key owns; None for an HTTP session, whose world lives in the SDK connection."""
    end: Callable[[], Awaitable[None]] | None = None
    """Ends an HTTP session through the SDK app (a DELETE)."""
    in_flight: int = 0
    """Requests being served (POST, DELETE); a session is never idle while one is."""


class SessionLimitError(Exception):
    """No room for another session: the message says which limit and what to do."""


@dataclass
class SessionTable:
    """Live sessions by key (`session:<Mcp-Session-Id>` or `key:<world key>`), with idle expiry and a cap."""

    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT
    max_sessions: int | None = DEFAULT_MAX_SESSIONS
    clock: Clock = time.monotonic
    live: dict[str, LiveSession] = field(default_factory=dict)
    opening: int = 0
    """Sessions being opened right now (admitted, not yet registered): they count against the cap."""
    ended: OrderedDict[str, str] = field(default_factory=OrderedDict)
    """Why recently reaped sessions ended (the last `_ENDED_KEPT`), so their next request is told."""
    _due: float = field(default=-math.inf, init=False, repr=False)
    """No session can expire before this time (a lower bound: last-used times only grow), so most requests
    skip the scan."""

    def __post_init__(self) -> None:
        if self.idle_timeout is not None and not (math.isfinite(self.idle_timeout) and self.idle_timeout > 0):
            raise ValueError("idle_timeout must be a positive number of seconds, or None")
        if self.max_sessions is not None and self.max_sessions < 1:
            raise ValueError("max_sessions must be at least 1, or None")

    def __len__(self) -> int:
        return len(self.live)

    def full(self) -> bool:
        return self.max_sessions is not None and len(self.live) + self.opening >= self.max_sessions

    def limit_message(self) -> str:
        idle = (
            f"sessions unused for {self.idle_timeout:g} s are closed (--idle-timeout)"
            if self.idle_timeout is not None
            else "idle sessions are never closed (--idle-timeout 0)"
        )
        return (
            f"toolshift world server: {len(self.live) + self.opening} sessions are open, the limit "
            f"(--max-sessions {self.max_sessions}); end one (HTTP DELETE, toolshift/closeWorld) or retry "
            f"later: {idle}"
        )

    def add(
        self, key: str, *, world: World | None = None, end: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        now = self.clock()
        self.live[key] = LiveSession(key, now, world=world, end=end)
        if self.idle_timeout is not None:
            self._due = min(self._due, now + self.idle_timeout)

    def touch(self, key: str) -> LiveSession | None:
        session = self.live.get(key)
        if session is not None:
            session.last_used = self.clock()
        return session

    def remove(self, key: str) -> LiveSession | None:
        session = self.live.pop(key, None)
        if session is not None and session.world is not None:
            session.world.close()
        return session

    def expired(self) -> list[LiveSession]:
        """The sessions idle longer than the timeout (none busy), oldest first."""
        if self.idle_timeout is None:
            return []
        cutoff = self.clock() - self.idle_timeout
        stale = [s for s in self.live.values() if s.in_flight == 0 and s.last_used <= cutoff]
        return sorted(stale, key=lambda s: s.last_used)

    async def reap(self) -> int:
        """End every session idle longer than the timeout; the number ended."""
        if self.idle_timeout is None or self.clock() < self._due:
            return 0
        ended = 0
        for session in self.expired():
            if self.live.get(session.key) is not session:
                continue
            self.remove(session.key)
            self.ended[session.key] = (
                f"this session was closed after {self.idle_timeout:g} s unused (the server's --idle-timeout); "
                "start a new one"
            )
            while len(self.ended) > _ENDED_KEPT:
                self.ended.popitem(last=False)
            if session.end is not None:
                try:
                    await session.end()
                except Exception:  # an SDK session that is already gone needs no ending
                    log.debug("ending idle session %s failed", session.key, exc_info=True)
            ended += 1
        if ended:
            log.info("closed %d idle session(s); %d live", ended, len(self.live))
            release_freed_memory()
        idle = [s.last_used for s in self.live.values() if s.in_flight == 0]
        self._due = min(idle) + self.idle_timeout if idle else -math.inf if self.live else math.inf
        return ended


def release_freed_memory() -> None:
    """Hand memory freed by closed worlds back to the OS (glibc keeps it otherwise: 300 closed clinic worlds
    left a process at 235 MB RSS, and 45 MB after this). A no-op where there is no glibc."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


def session_key(session_id: str) -> str:
    return f"session:{session_id}"


def world_key(key: str) -> str:
    return f"key:{key}"


Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class SessionGate:
    """ASGI app in front of the SDK's streamable HTTP app: reaping, screening, the cap, and session upkeep."""

    def __init__(self, inner: Callable[[Scope, Receive, Send], Awaitable[None]], table: SessionTable) -> None:
        self.inner = inner
        self.table = table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        await self.table.reap()
        headers = dict(scope.get("headers") or [])
        sid = _header(headers, b"mcp-session-id")
        version = _header(headers, b"mcp-protocol-version")
        body = b""
        if scope.get("method") == "POST":
            screened = await screened_post(receive, send)
            if screened is None:
                return
            body, receive = screened
            if sid is None and version not in MODERN_PROTOCOL_VERSIONS:
                await self._open(scope, receive, send, body)
                return
        if sid is None:
            await self.inner(scope, receive, send)
            return
        if (why := self.table.ended.get(session_key(sid))) is not None:
            rid = _request_id(body) if scope.get("method") == "POST" else None
            await _reply(send, 404, error_reply(rid, -32600, why))
            return
        session = self.table.touch(session_key(sid))
        if session is None or scope.get("method") == "GET":
            # Unknown to us: the SDK answers 404 (or serves it). A GET is the notification stream a client
            # may hold open for good; worlds send no notifications, so it does not keep a session alive.
            await self.inner(scope, receive, send)
            return
        session.in_flight += 1
        finished = False

        def finish() -> None:
            nonlocal finished
            if not finished:
                finished = True
                session.in_flight -= 1
                session.last_used = self.table.clock()
                if scope.get("method") == "DELETE":
                    self.table.remove(session_key(sid))

        async def send_then_finish(message: dict[str, Any]) -> None:
            # Settled before the last byte goes out, so a client that has its answer sees the session idle.
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                finish()
            await send(message)

        try:
            await self.inner(scope, receive, send_then_finish)
        finally:
            finish()

    async def _open(self, scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
        """A POST without a session: admit it under the cap, and register the session the SDK opens."""
        if self.table.full():
            await _reply(send, 503, error_reply(_request_id(body), SERVER_BUSY, self.table.limit_message()))
            return
        self.table.opening += 1
        admitted = True

        def settle(status: int, sid: str | None) -> None:
            nonlocal admitted
            if admitted:
                admitted = False
                self.table.opening -= 1
                if sid and status < 400:
                    self.table.add(session_key(sid), end=self._ender(scope, sid))

        async def watch(message: dict[str, Any]) -> None:
            # Registered as the answer starts, so the client's next request already finds its session.
            if message["type"] == "http.response.start":
                settle(message["status"], _header(dict(message.get("headers") or []), b"mcp-session-id"))
            await send(message)

        try:
            await self.inner(scope, receive, watch)
        finally:
            settle(500, None)

    def _ender(self, scope: Scope, sid: str) -> Callable[[], Awaitable[None]]:
        """A DELETE for session `sid`, addressed like the request that opened it (so the SDK's host check passes)."""
        keep = {b"host", b"origin"}
        headers = [(k, v) for k, v in scope.get("headers") or [] if k in keep]
        headers.append((b"mcp-session-id", sid.encode("latin-1")))
        delete = {**{k: v for k, v in scope.items() if k != "state"}, "method": "DELETE", "headers": headers}
        delete["query_string"] = b""

        async def end() -> None:
            async def no_body() -> dict[str, Any]:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def discard(message: dict[str, Any]) -> None:
                return None

            await self.inner(dict(delete), no_body, discard)

        return end


def _header(headers: dict[bytes, bytes], name: bytes) -> str | None:
    value = headers.get(name)
    return None if value is None else value.decode("latin-1")


def _request_id(body: bytes) -> Any:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return top_level_id(body.decode("utf-8", "replace"))
    return message.get("id") if isinstance(message, dict) else None
