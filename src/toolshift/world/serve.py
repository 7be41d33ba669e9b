"""Serve worlds over MCP with the official `mcp` SDK's low-level `Server`: stdio, streamable HTTP, in-memory.

Each MCP connection (a stdio process, an HTTP `Mcp-Session-Id`, an in-memory session) gets its
own fork of the base world, made on its first request, so parallel agents never see each
other's writes; `shared_state=True` serves one world to everyone. Worlds are served in the
handshake era of the protocol over HTTP (the one with sessions): there `server/discover` is
answered with "method not found", so `mode="auto"` clients fall back to `initialize`. A request of the
session-less 2026-07-28 era, which has nowhere to keep per-session state, sees the shared world.
Over stdio the process is the session: it serves one fork of the base world in either era.

Tool results are JSON text content plus `structuredContent`; domain errors come back as
`isError: true` with the JSON body `{code, message}`. Every result carries the row changes the
call made in `_meta["toolshift/changes"]`.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, ClientSession
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolshift.world.compiler import CompiledDomain
from toolshift.world.tools import CallResult, Tool
from toolshift.world.world import World

CHANGES_META_KEY = "toolshift/changes"
_STATE_KEY = "toolshift.world"


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
    body = result.result if result.ok else result.error
    structured = body if isinstance(body, dict) else {"result": body}
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False, default=str))],
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
    """An MCP server over a world: every connection gets a fork of `base` unless `shared_state`."""

    def __init__(
        self, base: World | CompiledDomain, *, shared_state: bool = False, name: str | None = None
    ) -> None:
        self.base = base if isinstance(base, World) else World(base)
        self.shared_state = shared_state
        self.shared = self.base if shared_state else self.base.fork()
        self.single_session = False
        """Set by transports whose whole lifetime is one session (stdio: one client per process)."""
        self.sessions: list[World] = []
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

    def world_for(self, ctx: ServerRequestContext[Any]) -> World:
        """The world of the connection this request arrived on (created on its first request)."""
        if self.shared_state or self.single_session:
            return self.shared
        connection = getattr(ctx.session, "_connection", None)
        if connection is None or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self.shared
        world = connection.state.get(_STATE_KEY)
        if world is None:
            world = self.base.fork()
            connection.state[_STATE_KEY] = world
            self.sessions.append(world)
            connection.exit_stack.callback(self._close_session, world)
        return world

    def _close_session(self, world: World) -> None:
        if world in self.sessions:
            self.sessions.remove(world)
        world.close()

    async def _discover(
        self, ctx: ServerRequestContext[Any], params: types.RequestParams
    ) -> types.DiscoverResult:
        """Over HTTP, refuse the session-less era so clients fall back to sessions; elsewhere answer normally."""
        if ctx.request is not None:
            raise MCPError(
                types.METHOD_NOT_FOUND, "server/discover is not served over HTTP: worlds need sessions"
            )
        return types.DiscoverResult(
            supported_versions=list(MODERN_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=self.server.instructions,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(t) for t in self.world_for(ctx).tools])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        world = self.world_for(ctx)
        # Off the event loop: a custom action that blocks cannot stall the client's timeouts in-process.
        result = await anyio.to_thread.run_sync(world.call, params.name, params.arguments or {})
        return mcp_result(result)

    # --- transports -----------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        self.single_session = True
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, *, host: str = "127.0.0.1", path: str = "/mcp", json_response: bool = True) -> Any:
        """The Starlette app serving streamable HTTP at `path` (plain JSON responses unless `json_response=False`:
        a world call never streams, and JSON skips the SSE framing)."""
        return self.server.streamable_http_app(
            streamable_http_path=path, host=host, json_response=json_response
        )

    def run_http(self, *, host: str = "127.0.0.1", port: int = 8765) -> None:
        import uvicorn

        uvicorn.run(self.http_app(host=host), host=host, port=port, log_level="warning")


@asynccontextmanager
async def in_memory_session(world: World) -> AsyncIterator[ClientSession]:
    """A `ClientSession` connected in-process (memory streams, real MCP protocol) to a server over exactly
    this world: its state and catalog, so the caller can snapshot and diff it around the session."""
    ws = WorldServer(world, shared_state=True)
    async with Client(ws.server, mode="legacy") as client:
        yield client.session


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server_thread(
    server: WorldServer, *, host: str = "127.0.0.1", port: int | None = None, timeout: float = 20.0
) -> Iterator[str]:
    """Run the streamable HTTP transport on a loopback port in a background thread; yields the MCP URL."""
    import uvicorn

    port = port or free_port(host)
    config = uvicorn.Config(
        server.http_app(host=host), host=host, port=port, log_level="warning", lifespan="on"
    )
    userver = uvicorn.Server(config)
    thread = threading.Thread(target=userver.run, name=f"mcp-http-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not userver.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"MCP HTTP server did not start on {host}:{port}")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}/mcp"
    finally:
        userver.should_exit = True
        thread.join(timeout=10)
