"""Serve worlds over MCP with the official `mcp` SDK's low-level `Server`: stdio, streamable HTTP, in-memory.

Each MCP connection (a stdio process, an HTTP `Mcp-Session-Id`, an in-memory session) gets its
own fork of the base world, made on its first request, so parallel agents never see each
other's writes; `shared_state=True` serves one world to everyone. Over HTTP, `server/discover` is
answered with "method not found", so `mode="auto"` clients fall back to the `initialize` handshake
and its sessions. A client pinned to the session-less 2026-07-28 era has no session to keep a world
in: it asks for a world key (`toolshift/openWorld`) and sends it as `_meta["toolshift/world"]` with
each call; a call without one is refused, never served from a shared world. Over stdio the process
is the session: it serves one fork of the base world in either era.

Over HTTP, a request whose Host is not loopback to a server bound to loopback gets 421 on every path, and
bound beyond loopback the server needs a bearer token (`TOOLSHIFT_WORLD_TOKEN`; 401 without it).
Sessions and world keys unused for `idle_timeout` seconds are closed, and no more than
`max_sessions` are held (`toolshift.world.mcp.sessions`). Malformed JSON-RPC gets an error reply for
every request id, over both transports (`toolshift.world.mcp.jsonrpc_guard`).

Tool results are JSON text content plus `structuredContent`; domain errors come back as
`isError: true` with the JSON body `{code, message}`. Every result carries the row changes the
call made in `_meta["toolshift/changes"]`.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import Client, ClientSession
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolshift.world.limits import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS
from toolshift.world.mcp.jsonrpc_guard import ScreenedLines
from toolshift.world.mcp.sessions import (
    SERVER_BUSY,
    Clock,
    SessionGate,
    SessionTable,
    release_freed_memory,
    world_key,
)
from toolshift.world.state.compiler import CompiledDomain
from toolshift.world.state.direct import call_world, result_body, result_text
from toolshift.world.state.tools import CallResult, Tool
from toolshift.world.state.world import World
from toolshift.world.toolerror import shorten

CHANGES_META_KEY = "toolshift/changes"
WORLD_KEY_META = "toolshift/world"
"""Request `_meta` key carrying a world key (2026-07-28 era over HTTP)."""
OPEN_WORLD = "toolshift/openWorld"
CLOSE_WORLD = "toolshift/closeWorld"
_STATE_KEY = "toolshift.world"


TOKEN_ENV = "TOOLSHIFT_WORLD_TOKEN"
"""The environment variable holding the bearer token of `world serve --transport http` (required beyond loopback)."""


class OpenWorldResult(types.Result):
    """The answer to `toolshift/openWorld`: a world key to send as `_meta["toolshift/world"]`."""

    world: str
    idle_timeout_seconds: float | None = None
    result_type: str = "complete"


class CloseWorldParams(types.RequestParams):
    world: str


class _OpenWorldRequest(types.Request[types.RequestParams | None, str]):
    method: str = OPEN_WORLD
    params: types.RequestParams | None = None


class _CloseWorldRequest(types.Request[CloseWorldParams, str]):
    method: str = CLOSE_WORLD


async def open_world(session: ClientSession) -> str:
    """Client side, 2026-07-28 era over HTTP: ask the server for a world of one's own; returns its key.

    Send it with every call: `client.call_tool(name, args, meta=world_meta(key))`.
    """
    result = await session.send_request(_OpenWorldRequest(), OpenWorldResult)
    return result.world


async def close_world(session: ClientSession, key: str) -> None:
    """Client side: give a world key's world back (it is also closed once idle for the server's timeout)."""
    await session.send_request(_CloseWorldRequest(params=CloseWorldParams(world=key)), types.EmptyResult)


def world_meta(key: str) -> dict[str, str]:
    """The request `_meta` that names a world key."""
    return {WORLD_KEY_META: key}


def mcp_tool(tool: Tool) -> types.Tool:
    """A catalog tool as an MCP tool listing with its schema and annotations."""
    a = tool.annotations
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            title=a["title"],
            read_only_hint=a["readOnlyHint"],
            destructive_hint=a["destructiveHint"],
            idempotent_hint=a["idempotentHint"],
            open_world_hint=a["openWorldHint"],
        ),
        meta={"toolshift/effect": tool.effect},
    )


def mcp_result(result: CallResult) -> types.CallToolResult:
    """A world call result as an MCP `CallToolResult` (errors: `isError` with `{code, message}`)."""
    body = result_body(result)
    structured = body if isinstance(body, dict) else {"result": body}
    return types.CallToolResult(
        content=[types.TextContent(text=result_text(result))],
        structured_content=structured,
        is_error=not result.ok,
        meta={CHANGES_META_KEY: [c.model_dump(mode="json") for c in result.changes]},
    )


def parse_tool_result(result: types.CallToolResult) -> tuple[bool, Any]:
    """Client side: `(ok, payload)` from a world's `CallToolResult` (payload is the result or `{code, message}`)."""
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    try:
        payload: Any = json.loads(text) if text else result.structured_content
    except json.JSONDecodeError:
        payload = text
    return (not result.is_error), payload


class WorldServer:
    """An MCP server over a world: every connection gets a fork of `base` unless `shared_state`.

    Over HTTP a session (or world key) unused for `idle_timeout` seconds is closed (None: never) and
    at most `max_sessions` are live (None: no cap); `clock` is what idleness is measured by.
    """

    def __init__(
        self,
        base: World | CompiledDomain,
        *,
        shared_state: bool = False,
        name: str | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int | None = DEFAULT_MAX_SESSIONS,
        clock: Clock = time.monotonic,
    ) -> None:
        # A compiled domain gets a World; anything else with a World's surface (an external ObjectWorld) serves as is.
        self.base = World(base) if isinstance(base, CompiledDomain) else base
        self.shared_state = shared_state
        self.shared = self.base if shared_state else self.base.fork()
        self.single_session = False
        """Set by transports whose whole lifetime is one session (stdio: one client per process)."""
        self._connection_worlds: list[World] = []
        self.table = SessionTable(idle_timeout=idle_timeout, max_sessions=max_sessions, clock=clock)
        spec = self.base.domain.spec
        self.server: Server[Any] = Server(
            name or f"toolshift-{spec.name}",
            version="1",
            title=spec.title,
            instructions=spec.policy or spec.description,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.server.add_request_handler("server/discover", types.RequestParams, self._discover)
        self.server.add_request_handler(OPEN_WORLD, types.RequestParams, self._open_world)
        self.server.add_request_handler(CLOSE_WORLD, CloseWorldParams, self._close_world)

    @property
    def sessions(self) -> list[World]:
        """The worlds of live sessions (one per connection) and of world keys."""
        return self._connection_worlds + [s.world for s in self.table.live.values() if s.world is not None]

    def world_for(self, ctx: ServerRequestContext[Any], *, listing: bool = False) -> World:
        """The world of the connection (or world key) this request arrived with (created on its first request).

        A 2026-07-28 request outside stdio must carry a world key, except a tool listing (the catalog is
        the same in every world); without one it is refused rather than served a world others share.
        """
        if self.shared_state or self.single_session:
            return self.shared
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self._keyed_world(ctx, listing=listing)
        connection = getattr(ctx.session, "_connection", None)
        if connection is None:
            raise MCPError(types.INTERNAL_ERROR, "no connection to keep this session's world in")
        world = connection.state.get(_STATE_KEY)
        if world is None:
            world = self.base.fork()
            connection.state[_STATE_KEY] = world
            self._connection_worlds.append(world)
            connection.exit_stack.callback(self._close_session, world)
        return world

    def _keyed_world(self, ctx: ServerRequestContext[Any], *, listing: bool) -> World:
        key = (ctx.meta or {}).get(WORLD_KEY_META)
        if key is None:
            if listing:
                return self.base
            raise MCPError(
                types.INVALID_PARAMS,
                "this server keeps a world per client, and a 2026-07-28 request has no session to keep it in: "
                f"send {OPEN_WORLD} once and put the key it returns in _meta[{WORLD_KEY_META!r}] of every "
                "call, or connect with the initialize handshake (an Mcp-Session-Id session)",
            )
        live = self.table.touch(world_key(str(key)))
        if live is None or live.world is None:
            why = self.table.ended.get(world_key(str(key)), "it was never issued or has been closed")
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown world key {shorten(str(key), 60)!r}: {why}; send {OPEN_WORLD} for a new one",
            )
        return live.world

    def open_session_world(self) -> World:
        """The world of one in-process caller's session (a gateway's direct backend, D149), as an MCP connection
        gets one: a fork of the base (listed in `sessions` until `close_session_world`), or the shared world."""
        if self.shared_state:
            return self.shared
        world = self.base.fork()
        self._connection_worlds.append(world)
        return world

    def close_session_world(self, world: World) -> None:
        if not self.shared_state:
            self._close_session(world)

    def _close_session(self, world: World) -> None:
        if world in self._connection_worlds:
            self._connection_worlds.remove(world)
        world.close()

    async def _open_world(
        self, ctx: ServerRequestContext[Any], params: types.RequestParams
    ) -> OpenWorldResult:
        """A fresh world under a new key, for clients of the session-less era."""
        if self.shared_state:
            raise MCPError(
                types.INVALID_REQUEST,
                "this server serves one shared world (--shared-state): no key is needed",
            )
        if self.single_session or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(
                types.INVALID_REQUEST,
                f"this connection already has its own world; {OPEN_WORLD} is for 2026-07-28 requests over HTTP",
            )
        await self.table.reap()
        if self.table.full():
            raise MCPError(SERVER_BUSY, self.table.limit_message())
        key = secrets.token_urlsafe(24)
        world = self.base.fork()
        self.table.add(world_key(key), world=world)
        return OpenWorldResult(world=key, idle_timeout_seconds=self.table.idle_timeout)

    async def _close_world(
        self, ctx: ServerRequestContext[Any], params: CloseWorldParams
    ) -> types.EmptyResult:
        live = self.table.remove(world_key(params.world))
        if live is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown world key {shorten(params.world, 60)!r}")
        return types.EmptyResult()

    async def _discover(
        self, ctx: ServerRequestContext[Any], params: types.RequestParams
    ) -> types.DiscoverResult:
        """Over HTTP, refuse the session-less era so clients fall back to sessions; elsewhere answer normally."""
        return discover_sessions_only(
            self.server, ctx, f"worlds need sessions (or a world key: {OPEN_WORLD})"
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(t) for t in self.world_for(ctx, listing=True).tools])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        world = self.world_for(ctx)
        # Inline when the tool's code is ours, else off the event loop (D36, D148: toolshift.world.state.direct).
        return mcp_result(await call_world(world, params.name, params.arguments or {}))

    # --- transports -----------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve this process's stdin and stdout: one client, one world; malformed lines are answered."""
        from mcp.server.stdio import stdio_server

        self.single_session = True
        lines = ScreenedLines.stdin()
        async with stdio_server(stdin=lines) as (read, write):
            lines.replies = write
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(
        self,
        *,
        host: str = "127.0.0.1",
        path: str = "/mcp",
        json_response: bool = True,
        token: str | None = None,
    ) -> Any:
        """The ASGI app serving streamable HTTP at `path` (plain JSON responses unless `json_response=False`:
        a world call never streams, and JSON skips the SSE framing), behind the `SessionGate`, the token
        check (with a `token`) and the Host rule (`toolshift.world.mcp.http_guard`).

        Idle expiry and the session cap are the gate's (the SDK's own are off), and a task started with
        the app reaps idle sessions even while no request arrives.
        """
        app = self.server.streamable_http_app(
            streamable_http_path=path,
            host=host,
            json_response=json_response,
            session_idle_timeout=None,
            max_sessions=None,
        )
        inner_lifespan = app.router.lifespan_context
        table = self.table

        @asynccontextmanager
        async def lifespan(a: Any) -> AsyncIterator[Any]:
            async with inner_lifespan(a) as state, anyio.create_task_group() as tg:
                if table.idle_timeout is not None:
                    tg.start_soon(_reap_every, table, min(table.idle_timeout / 4, 30.0))
                yield state
                tg.cancel_scope.cancel()

        app.router.lifespan_context = lifespan
        from toolshift.world.mcp.http_guard import HostGate, TokenGate

        gated = SessionGate(app, table)
        return HostGate(TokenGate(gated, token) if token else gated, host)

    def run_http(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8765,
        token: str | None = None,
        token_env: str = TOKEN_ENV,
    ) -> None:
        """Serve streamable HTTP; bound beyond loopback it needs a bearer token (refused to start without one)."""
        import uvicorn

        from toolshift.world.mcp.http_guard import require_token

        require_token(host, token, token_env)
        uvicorn.run(self.http_app(host=host, token=token), host=host, port=port, log_level="warning")


async def _reap_every(table: SessionTable, seconds: float) -> None:
    while True:
        await anyio.sleep(seconds)
        if not await table.reap():
            release_freed_memory()  # worlds of sessions their clients ended (DELETE) since the last tick


@asynccontextmanager
async def in_memory_session(world: World) -> AsyncIterator[ClientSession]:
    """A `ClientSession` connected in-process (memory streams, real MCP protocol) to a server over exactly
    this world: its state and catalog, so the caller can snapshot and diff it around the session."""
    ws = WorldServer(world, shared_state=True)
    async with Client(ws.server, mode="legacy") as client:
        yield client.session


def world_token() -> str | None:
    """The bearer token HTTP clients must send, from `TOOLSHIFT_WORLD_TOKEN` (None when unset or empty)."""
    import os

    return os.environ.get(TOKEN_ENV, "").strip() or None


def discover_sessions_only(
    server: Server[Any], ctx: ServerRequestContext[Any], why: str
) -> types.DiscoverResult:
    """`server/discover`: refused over HTTP (`why` says what the server needs instead), so a client of the
    session-less era falls back to an initialize handshake; answered elsewhere (stdio, in-memory). The world
    server and the gateway answer it alike."""
    if ctx.request is not None:
        raise MCPError(types.METHOD_NOT_FOUND, f"server/discover is not served over HTTP: {why}")
    return types.DiscoverResult(
        supported_versions=list(MODERN_PROTOCOL_VERSIONS),
        capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
        instructions=server.instructions,
    )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class HttpApp(Protocol):
    """What serves streamable HTTP: a world server or the gateway (`http_app` builds the ASGI app)."""

    def http_app(self, *, host: str, token: str | None) -> Any: ...


@contextmanager
def loopback_http_thread(
    server: HttpApp, *, name: str, host: str, port: int | None, token: str | None, timeout: float
) -> Iterator[str]:
    """Run `server`'s streamable HTTP app on a loopback port in a background thread; yields the MCP URL.
    The world server's and the gateway's HTTP threads (tests, benchmarks, the demo) are this one."""
    import uvicorn

    port = port or free_port(host)
    config = uvicorn.Config(
        server.http_app(host=host, token=token), host=host, port=port, log_level="warning", lifespan="on"
    )
    userver = uvicorn.Server(config)
    thread = threading.Thread(
        target=userver.run, name=f"{name.lower().replace(' ', '-')}-{port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + timeout
    while not userver.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"{name} server did not start on {host}:{port}")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}/mcp"
    finally:
        userver.should_exit = True
        thread.join(timeout=timeout / 2)


@contextmanager
def http_server_thread(
    server: WorldServer,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    timeout: float = 20.0,
    token: str | None = None,
) -> Iterator[str]:
    """Run the streamable HTTP transport on a loopback port in a background thread; yields the MCP URL."""
    with loopback_http_thread(
        server, name="MCP HTTP", host=host, port=port, token=token, timeout=timeout
    ) as url:
        yield url
