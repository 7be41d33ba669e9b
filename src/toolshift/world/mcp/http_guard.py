"""The doors every toolshift HTTP server shares: the Host check (421) and the JSON-RPC screen of POST bodies.

`host_allowed` is the one DNS-rebinding rule (a server bound to loopback answers only requests whose
`Host` names loopback; beyond loopback a bearer token guards instead), used by the world server, the
gateway (`HostGate`, every path) and the viewer (`toolshift view`). `screened_post` reads a POST body
bounded by `MAX_MESSAGE_BYTES` and answers what `jsonrpc_guard.screen` finds malformed, one error per
request id (a body too large is answered under the id found in its first 64 KiB); `ScreenGate` puts it
in front of any MCP app, so the gateway's HTTP path answers malformed requests as `world serve` does.
`require_token` and `TokenGate` are the other shared door: bound beyond loopback, a server starts only
with a bearer token, and then every path but `/health` needs `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from toolshift.errors import BadInputError
from toolshift.world.limits import MAX_MESSAGE_BYTES
from toolshift.world.mcp.jsonrpc_guard import INVALID_REQUEST, SERVER_BUSY, error_reply, screen, top_level_id

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_ID_SCAN = 65_536


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1), bracketed or not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(header: str | None, bound: str) -> bool:
    """The Host rule: bound to loopback, only a `Host` naming loopback (any port) is answered."""
    if not is_loopback(bound):
        return True
    if not header:
        return False
    header = header.strip()
    if header.startswith("["):
        name = header[1 : header.find("]")] if "]" in header else header
    else:
        name = header.rsplit(":", 1)[0] if header.count(":") == 1 else header
    return is_loopback(name)


def require_token(host: str, token: str | None, token_env: str) -> None:
    """HTTP bound beyond loopback needs a bearer token: refuse to start without one."""
    if not is_loopback(host) and not token:
        raise BadInputError(
            f"serving HTTP on {host} (beyond loopback) needs a bearer token: set {token_env}", field="host"
        )


class TokenGate:
    """ASGI: every HTTP request but `/health` must carry `Authorization: Bearer <token>` (401 otherwise)."""

    def __init__(self, app: App, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") == "/health":
            await self.app(scope, receive, send)
            return
        sent = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not secrets.compare_digest(sent, self.expected):
            body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token>"}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def misdirected(header: str | None) -> str:
    return f"invalid Host header {header!r}: this server answers only requests addressed to loopback"


class HostGate:
    """ASGI: a request whose Host is not loopback, to a server bound to loopback, gets 421 on every path."""

    def __init__(self, app: App, bound: str) -> None:
        self.app, self.bound = app, bound

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = dict(scope.get("headers") or []).get(b"host")
            text = None if host is None else host.decode("latin-1")
            if not host_allowed(text, self.bound):
                await reply(send, 421, {"error": misdirected(text)})
                return
        await self.app(scope, receive, send)


async def read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """(the body, True) or, once it grows past `limit` bytes, (its first 64 KiB, False) with the rest drained."""
    chunks: list[bytes] = []
    size = 0
    within = True
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if within:
            chunks.append(chunk)
            if size > limit:
                within = False
                head = b"".join(chunks)[:_ID_SCAN]
                chunks = [head]
        if not message.get("more_body", False):
            break
    return b"".join(chunks), within


def replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that yields the already-read body once, then defers to the real one (disconnects)."""
    pending = True

    async def replay() -> dict[str, Any]:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def reply(send: Send, status: int, body: Any) -> None:
    data = json.dumps(body, ensure_ascii=True).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def screened_post(receive: Receive, send: Send) -> tuple[bytes, Receive] | None:
    """Read and screen one POST body: None when it was answered here (malformed), else (body, a replaying receive)."""
    body, within = await read_body(receive, MAX_MESSAGE_BYTES)
    if not within:
        rid = top_level_id(body.decode("utf-8", "replace"))
        await reply(
            send, 413, error_reply(rid, INVALID_REQUEST, f"request body over {MAX_MESSAGE_BYTES:,} bytes")
        )
        return None
    replies = screen(body)
    if replies is not None:
        await reply(send, 400, replies if body.lstrip().startswith(b"[") else replies[0])
        return None
    return body, replaying(body, receive)


class ScreenGate:
    """ASGI: every POST to `path` is screened before the MCP app sees it (`screened_post`). With `busy`, a 503
    the app answers a POST with (the MCP SDK's refusal past its session limit: `"id": null`, no limit named)
    is answered again under the request's id with `busy()`'s message, as `world serve` answers it."""

    def __init__(self, app: App, path: str = "/mcp", *, busy: Callable[[], str] | None = None) -> None:
        self.app, self.path, self.busy = app, path, busy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path") == self.path:
            screened = await screened_post(receive, send)
            if screened is None:
                return
            body, receive = screened
            if self.busy is not None:
                send = _busy_under_id(send, body, self.busy)
        await self.app(scope, receive, send)


def _busy_under_id(send: Send, body: bytes, busy: Callable[[], str]) -> Send:
    """A `send` that replaces a 503 response with a JSON-RPC error under the request's id naming the limit."""
    refusing = False

    async def sending(message: dict[str, Any]) -> None:
        nonlocal refusing
        if message["type"] == "http.response.start" and message.get("status") == 503:
            refusing = True
            return
        if refusing and message["type"] == "http.response.body":
            if message.get("more_body", False):
                return
            try:
                rid = json.loads(body).get("id")
            except (ValueError, RecursionError, AttributeError):
                rid = top_level_id(body.decode("utf-8", "replace"))
            await reply(send, 503, error_reply(rid, SERVER_BUSY, busy()))
            return
        await send(message)

    return sending
