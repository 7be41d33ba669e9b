"""One MCP server per ecosystem version and setting: the whole catalog behind `search_tools`, or a fixed listing.

A session (an MCP connection, or one in-process episode) holds its own state: a fresh world of each
domain it calls into, made on first use and snapshotted then, so the session's diff is exact and
spans every department it touched. Only exposed tools can be called; in the standard setting a
tool is exposed once a search returned it, and the listing grows with it (the search result says so
in `_meta["toolshift/tools_changed"]` and a `notifications/tools/list_changed` is sent).

Sessions live in the handshake era of the protocol (an `initialize` handshake, an `Mcp-Session-Id`
over HTTP, the process over stdio); over HTTP `server/discover` is refused so `mode="auto"` clients
fall back to it, and a session-less (2026-07-28) request is refused rather than served a state
others share.

The server declares what it serves as the experimental capability `toolshift/ecosystem`:
`{ecosystem_version: "<id>/v<n>", setting, domain, task}`. `toolshift run` records it in every
episode, so `toolshift bench eval` can score runs made through `toolshift bench serve`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolshift.bench.ecosystem.settings import (
    SEARCH_K,
    SEARCH_MAX_K,
    SEARCH_TOOL,
    EcosystemVersion,
    Exposure,
    VersionWorlds,
)
from toolshift.models import RowChange
from toolshift.world.mcp.serve import CHANGES_META_KEY, mcp_result, mcp_tool
from toolshift.world.state.tools import CallResult
from toolshift.world.state.world import Snapshot, World

SERVED_KEY = "toolshift/ecosystem"
TOOLS_CHANGED_KEY = "toolshift/tools_changed"
_STATE_KEY = "toolshift.ecosystem-session"

SEARCH_DEF = types.Tool(
    name=SEARCH_TOOL,
    description=(
        "Find the company's tools for a need: give a short description of what you want to do (or a tool's "
        "exact name); returns the best-matching tools with their department. The tools it returns become "
        "available to call; each department's policy comes with its first tool."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "What you need to do, in a few words.",
            },
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_MAX_K,
                "default": SEARCH_K,
                "description": f"How many tools to return (1-{SEARCH_MAX_K}).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    annotations=types.ToolAnnotations(title="search tools", read_only_hint=True, open_world_hint=False),
    meta={"toolshift/effect": "neither"},
)

DESK_TITLE = "the company's service desk"


@dataclass(frozen=True)
class Served:
    """Where an episode ran: the declaration a server makes and the episode records."""

    ecosystem: str
    version: int
    setting: str
    domain: str | None = None
    task: str | None = None

    @property
    def ecosystem_version(self) -> str:
        return f"{self.ecosystem}/v{self.version}"

    def declaration(self) -> dict[str, Any]:
        return {
            "ecosystem_version": self.ecosystem_version,
            "setting": self.setting,
            "domain": self.domain,
            "task": self.task,
        }


@dataclass
class EcosystemSession:
    """One session's worlds (one per domain touched) and the tools exposed to it so far."""

    worlds: VersionWorlds
    version: int
    exposure: Exposure
    eco: EcosystemVersion | None = None
    exposed: dict[str, None] = field(default_factory=dict)
    _open: dict[str, World] = field(default_factory=dict)
    _before: dict[str, Snapshot] = field(default_factory=dict)
    _policies: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.exposure.searchable:
            assert self.eco is not None
            self.catalog, self.domain_of = self.eco.tools, self.eco.domain_of
        else:
            assert self.exposure.domain is not None
            self.catalog = self.worlds.catalog(self.exposure.domain, self.version).tools
            self.domain_of = dict.fromkeys(self.catalog, self.exposure.domain)
            if self.exposure.domain is not None:  # its policy is in the instructions already
                self._policies.add(self.exposure.domain)
        self.exposed = dict.fromkeys(t for t in self.exposure.listed if t in self.catalog)

    def listing(self) -> list[types.Tool]:
        tools = [mcp_tool(self.catalog[n]) for n in self.exposed]
        return [SEARCH_DEF, *tools] if self.exposure.searchable else tools

    def world(self, domain: str) -> World:
        world = self._open.get(domain)
        if world is None:
            world = self._open[domain] = self.worlds.world(domain, self.version)
            self._before[domain] = world.snapshot()
        return world

    def call(self, name: str, args: dict[str, Any]) -> tuple[CallResult, bool]:
        """Run one call; the flag says whether the listing grew (a search exposed new tools)."""
        if name == SEARCH_TOOL and self.exposure.searchable:
            return self.search(args)
        if name not in self.exposed:
            hint = "; find tools with search_tools first" if self.exposure.searchable else ""
            return CallResult(
                name,
                False,
                error={"code": "unknown_tool", "message": f"no tool named {name!r} is available{hint}"},
            ), False
        return self.world(self.domain_of[name]).call(name, args), False

    def search(self, args: dict[str, Any]) -> tuple[CallResult, bool]:
        query, k = args.get("query"), args.get("k", SEARCH_K)
        if not isinstance(query, str) or not query.strip():
            return CallResult(
                SEARCH_TOOL,
                False,
                error={
                    "code": "invalid_arguments",
                    "message": "search_tools: 'query' must be a non-empty string",
                },
            ), False
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= SEARCH_MAX_K:
            return CallResult(
                SEARCH_TOOL,
                False,
                error={
                    "code": "invalid_arguments",
                    "message": f"search_tools: 'k' must be an integer 1-{SEARCH_MAX_K}",
                },
            ), False
        assert self.eco is not None
        found = self.eco.search.search(query, k)
        grew = any(n not in self.exposed for n in found)
        self.exposed.update(dict.fromkeys(found))
        policies: dict[str, str] = {}
        for name in found:
            d = self.domain_of[name]
            if d not in self._policies:
                self._policies.add(d)
                policies[self.eco.title(d)] = self.eco.policy(d)
        tools = [
            {
                "name": n,
                "department": self.eco.title(self.domain_of[n]),
                "description": self.catalog[n].description,
            }
            for n in found
        ]
        return CallResult(SEARCH_TOOL, True, {"tools": tools, "policies": policies}), grew

    def diff(self) -> list[RowChange]:
        out: list[RowChange] = []
        for domain, world in self._open.items():
            out += world.changes_since(self._before[domain])
        return out

    def close(self) -> None:
        for world in self._open.values():
            world.close()
        for snap in self._before.values():
            snap.close()
        self._open.clear()
        self._before.clear()


def instructions(session: EcosystemSession) -> tuple[str, str]:
    """(title, policy) of a session as its server announces them."""
    exp = session.exposure
    if exp.searchable:
        assert session.eco is not None
        names = ", ".join(session.eco.title(d) for d in session.eco.domains)
        return DESK_TITLE, (
            f"You serve every department of the company ({names}). Find the tools a request needs with "
            f"{SEARCH_TOOL}; only tools a search returned can be called. Follow the policy of the department "
            "whose tools you use: it comes with that department's first search result."
        )
    assert exp.domain is not None
    worlds = session.worlds
    spec = worlds.compiled(exp.domain).spec
    policy = spec.policy or spec.description
    if exp.plan:
        policy += (
            "\n\n# Plan\nThe shortest way to do this request calls, in order: " + ", ".join(exp.plan) + "."
        )
    return spec.title, policy


class _Server(Server[Any]):
    """The SDK's low-level server, declaring what it serves and that its tool listing may change."""

    def __init__(self, *args: Any, served: Served, searchable: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.served = served
        self.searchable = searchable

    def get_capabilities(
        self,
        notification_options=None,
        experimental_capabilities=None,
        extensions=None,
        *,
        protocol_version=None,
    ):  # type: ignore[no-untyped-def]
        options = NotificationOptions(tools_changed=self.searchable)
        return super().get_capabilities(
            options,
            {**(experimental_capabilities or {}), SERVED_KEY: self.served.declaration()},
            extensions,
            protocol_version=protocol_version,
        )


class EcosystemServer:
    """An MCP server of one version and setting; each connection gets its own session (or one shared)."""

    def __init__(
        self,
        worlds: VersionWorlds,
        served: Served,
        exposure: Exposure,
        *,
        eco: EcosystemVersion | None = None,
        shared_state: bool = False,
    ) -> None:
        self.worlds, self.served, self.exposure, self.eco = worlds, served, exposure, eco
        self.shared_state = shared_state
        self.single_session = False
        self.shared = self.new_session()
        title, policy = instructions(self.shared)
        self.title, self.policy = title, policy
        self.server = _Server(
            f"toolshift-ecosystem-{served.setting}",
            version=served.ecosystem_version,
            title=title,
            instructions=policy,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            served=served,
            searchable=exposure.searchable,
        )
        self.server.add_request_handler("server/discover", types.RequestParams, self._discover)

    def new_session(self) -> EcosystemSession:
        return EcosystemSession(self.worlds, self.served.version, self.exposure, self.eco)

    def session_for(self, ctx: ServerRequestContext[Any]) -> EcosystemSession:
        if self.shared_state or self.single_session:
            return self.shared
        connection = getattr(ctx.session, "_connection", None)
        if connection is None or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(
                types.INVALID_REQUEST,
                "an ecosystem session keeps its own state and exposed tools: connect with the initialize "
                "handshake (an Mcp-Session-Id session)",
            )
        session = connection.state.get(_STATE_KEY)
        if session is None:
            session = connection.state[_STATE_KEY] = self.new_session()
            connection.exit_stack.callback(session.close)
        return session

    async def _discover(
        self, ctx: ServerRequestContext[Any], params: types.RequestParams
    ) -> types.DiscoverResult:
        """Over HTTP, refuse the session-less era so clients fall back to sessions; elsewhere answer normally."""
        if ctx.request is not None:
            raise MCPError(
                types.METHOD_NOT_FOUND, "server/discover is not served over HTTP: sessions are needed"
            )
        return types.DiscoverResult(
            supported_versions=list(MODERN_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=self.server.instructions,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.session_for(ctx).listing())

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session = self.session_for(ctx)
        result, grew = await anyio.to_thread.run_sync(session.call, params.name, dict(params.arguments or {}))
        out = mcp_result(result)
        if grew:
            out.meta = {**(out.meta or {CHANGES_META_KEY: []}), TOOLS_CHANGED_KEY: True}
            send = getattr(ctx.session, "send_tool_list_changed", None)
            if send is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await send()
        return out

    async def run_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        self.single_session = True
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, *, host: str = "127.0.0.1", path: str = "/mcp", token: str | None = None) -> Any:
        """The Starlette app serving streamable HTTP at `path` (plain JSON responses, as worlds are served),
        behind the same Host rule and optional bearer token as a world server (`toolshift.world.mcp.http_guard`)."""
        from toolshift.world.mcp.http_guard import HostGate, TokenGate

        app = self.server.streamable_http_app(streamable_http_path=path, host=host, json_response=True)
        return HostGate(TokenGate(app, token) if token else app, host)

    def run_http(self, *, host: str = "127.0.0.1", port: int = 8765) -> None:
        import uvicorn

        uvicorn.run(self.http_app(host=host), host=host, port=port, log_level="warning")


@dataclass
class InProcessEcosystem:
    """An in-process episode's view: the MCP client, the announced title and policy, and the exact diff."""

    client: Any
    policy: str
    title: str
    session: EcosystemSession
    served: dict[str, Any]

    async def diff(self, reported: list[RowChange] | None) -> list[RowChange]:
        return self.session.diff()


def opener(
    worlds: VersionWorlds, served: Served, exposure: Exposure, eco: EcosystemVersion | None = None
) -> Any:
    """An opener for `run_episode`: a fresh session of this version and setting behind an in-memory MCP client."""

    @asynccontextmanager
    async def open_world() -> AsyncIterator[InProcessEcosystem]:
        server = EcosystemServer(worlds, served, exposure, eco=eco, shared_state=True)
        try:
            async with Client(server.server, mode="legacy") as client:
                yield InProcessEcosystem(
                    client, server.policy, server.title, server.shared, served.declaration()
                )
        finally:
            server.shared.close()

    return open_world
