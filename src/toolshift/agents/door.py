"""An episode's MCP door: the one MCP server an outside agent reaches the episode's world through.

The door is an MCP server (streamable HTTP on a loopback port of its own) bound to one episode, not to a
connection: a harness that reconnects for every user message (one non-interactive run per message, then a
resume) finds the same world, with its earlier writes, each time; when the episode ends the port closes, so
nothing leaks into the next one. Its tools are the episode's toolbox (the same listing, checks, results and
change reports toolshift's own agent gets), plus `end_conversation` when the agent may end the conversation;
every call is recorded by the episode as it is answered, which is how an outside agent's episode holds every
call seen from the server side. Calls are answered one at a time, in the order they arrive.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server

from toolshift.agents.chat import ToolDef
from toolshift.agents.toolbox import ToolOutcome

Lister = Callable[[], Awaitable[list[ToolDef]]]
Caller = Callable[[str, dict[str, Any]], Awaitable[tuple[ToolOutcome, bool]]]
"""Answers a call: (the outcome as the agent sees it, whether the tool listing changed with it)."""


def mcp_tool_of(tool: ToolDef) -> types.Tool:
    annotations = None
    if tool.read_only is not None:
        annotations = types.ToolAnnotations(read_only_hint=tool.read_only)
    return types.Tool(
        name=tool.name, description=tool.description, input_schema=tool.input_schema, annotations=annotations
    )


class EpisodeDoor:
    """The MCP server of one episode (`url` once it is serving)."""

    def __init__(self, title: str, instructions: str, tools: Lister, call: Caller) -> None:
        self._tools = tools
        self._call = call
        self.url: str | None = None
        self.server: Server[Any] = Server(
            "toolshift-episode",
            version="1",
            title=title,
            instructions=instructions,
            on_list_tools=self._list,
            on_call_tool=self._call_tool,
        )

    async def _list(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool_of(t) for t in await self._tools()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        outcome, changed = await self._call(params.name, dict(params.arguments or {}))
        if changed:
            with contextlib.suppress(Exception):  # a client that cannot take notifications lists again itself
                await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[types.TextContent(text=outcome.text)], is_error=outcome.error)

    def http_app(self) -> Any:
        app = self.server.streamable_http_app(
            streamable_http_path="/mcp", host="127.0.0.1", json_response=False,
            session_idle_timeout=None, max_sessions=None,
        )  # fmt: skip
        from toolshift.world.mcp.http_guard import HostGate

        return HostGate(app, "127.0.0.1")

    def init_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))


@contextlib.asynccontextmanager
async def opened(door: EpisodeDoor) -> AsyncIterator[str]:
    """Serve the door on this event loop for the length of the block; yields its MCP URL."""
    from toolshift.agents.serving import serving_app

    async with serving_app(door.http_app(), name="episode-mcp", lifespan="on") as base:
        door.url = f"{base}/mcp"
        yield door.url
