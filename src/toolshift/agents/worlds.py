"""Where an episode's world comes from: a fresh in-process world (called directly, or over in-memory MCP), or an MCP URL.

In-process (a built-in domain name or a spec path, or another benchmark's world): every episode gets a
fresh `World` of the domain, and the diff is exact (snapshot before, state after). By default the agent
loop calls it directly (`via="direct"`: a `DirectToolbox`, the same listing, checks, texts and change
reports as MCP without the protocol, D149); `via="mcp"` serves it by the world's own MCP server through
the SDK's in-memory transport instead, the path every outside client takes. Remote (an http(s) URL of a streamable-HTTP MCP server):
the server gives each session its own state, and the diff is composed from the row changes the
world reports with each call (`_meta["toolshift/changes"]`), or is unknown for other servers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from toolshift.agents.toolbox import DirectToolbox, McpToolbox
from toolshift.errors import BadInputError
from toolshift.models import RowChange

Via = Literal["direct", "mcp"]
"""How the agent loop reaches an in-process world: called directly (the default) or over in-memory MCP."""


def toolbox_for(session: Any, *, tool_timeout: float, check_schemas: bool) -> McpToolbox:
    """The toolbox of an opened session: direct for an in-process world without an MCP client, else MCP."""
    if getattr(session, "client", None) is None and getattr(session, "world", None) is not None:
        return DirectToolbox(session.world, tool_timeout=tool_timeout, check_schemas=check_schemas)
    return McpToolbox(session.client, tool_timeout=tool_timeout, check_schemas=check_schemas)


async def listed_tools(session: Any) -> list[Any]:
    """The MCP tool listing of an opened session (for an in-process world without a client: as its server lists it)."""
    if getattr(session, "client", None) is None:
        from toolshift.world.mcp.serve import mcp_tool

        return [mcp_tool(t) for t in session.world.tools]
    return list((await session.client.list_tools()).tools)


@dataclass
class InProcessSession:
    """A fresh world of a domain, called directly (`client` None) or behind an in-memory MCP client; diff =
    snapshot before vs state after."""

    client: Any
    policy: str
    title: str
    world: Any
    before: Any

    async def diff(self, reported: list[RowChange] | None) -> list[RowChange] | None:
        return self.world.changes_since(self.before)


SERVED_CAPABILITY = "toolshift/ecosystem"
"""An experimental server capability declaring what is served (an ecosystem version and setting)."""


@dataclass
class RemoteSession:
    """An MCP session with a world at a URL; the diff is folded from the changes its calls reported."""

    client: Any
    policy: str
    title: str
    served: dict[str, Any] | None = None
    """The server's `toolshift/ecosystem` declaration, recorded in each episode."""

    async def diff(self, reported: list[RowChange] | None) -> list[RowChange] | None:
        if reported is None:
            return None
        from toolshift.world import compose_changes

        return compose_changes(reported)


@asynccontextmanager
async def in_process_client(world: Any, via: Via = "direct") -> AsyncIterator[Any]:
    """The `client` of a session over an in-process world: None for the direct path (the loop then calls the
    world through a `DirectToolbox`); over MCP, an in-memory client of the world's own server (same state)."""
    if via == "direct":
        yield None
        return
    from mcp import Client

    from toolshift.world.mcp.serve import WorldServer

    async with Client(WorldServer(world, shared_state=True).server, mode="legacy") as client:
        yield client


def in_process(domain: str, *, via: Via = "direct") -> Callable[[], AbstractAsyncContextManager[Any]]:
    """An opener of fresh worlds of `domain` (a built-in name or a spec path), compiled once per process."""
    from toolshift.world import World, load_domain

    compiled = load_domain(domain)

    @asynccontextmanager
    async def open_world() -> AsyncIterator[InProcessSession]:
        world = World(compiled)
        spec = compiled.spec
        try:
            before = world.snapshot()
            async with in_process_client(world, via) as client:
                yield InProcessSession(client, spec.policy or spec.description, spec.title, world, before)
        finally:
            world.close()

    return open_world


def remote(url: str) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """An opener of MCP sessions with the world served at `url` (one session, one state, per episode)."""

    @asynccontextmanager
    async def open_world() -> AsyncIterator[RemoteSession]:
        from mcp import Client

        from toolshift.agents.loop import leaf_error

        async with AsyncExitStack() as stack:
            try:
                client = await stack.enter_async_context(Client(url, mode="legacy"))
            except Exception as exc:  # refused, unreachable, not MCP: anyio wraps these in exception groups
                leaf = leaf_error(exc)
                raise BadInputError(
                    f"cannot open an MCP session: {type(leaf).__name__}: {leaf}", source=url, field="world"
                ) from None
            info = client.server_info
            title = (info.title or info.name) if info is not None else url
            caps = client.server_capabilities
            declared = (caps.experimental or {}).get(SERVED_CAPABILITY) if caps is not None else None
            served = dict(declared) if isinstance(declared, dict) else None
            yield RemoteSession(client, client.instructions or "", title or url, served)

    return open_world


@dataclass
class ExternalSession:
    """A fresh world of another benchmark (BFCL, AgentDojo), called directly (`client` None) or behind an
    in-memory MCP client; judged by its own check."""

    client: Any
    policy: str
    title: str
    world: Any
    before: Any

    async def diff(self, reported: list[RowChange] | None) -> list[RowChange] | None:
        return self.world.changes_since(self.before)


class TaskWorlds:
    """An opener of each task's own world (`--world bfcl`, `--world agentdojo`): `opener(task)`."""

    per_task = True

    def __init__(self, family: str, *, via: Via = "direct") -> None:
        self.family = family
        self.via: Via = via

    def world_for(self, task: Any) -> str:
        from toolshift.world.external import world_of_task

        return world_of_task(self.family, task)

    def __call__(self, task: Any = None) -> AbstractAsyncContextManager[Any]:
        if task is None:
            raise BadInputError(
                f"--world {self.family} opens one world per task; none was given", field="world"
            )
        return _open_external(self.world_for(task), self.via)


@asynccontextmanager
async def _open_external(name: str, via: Via = "direct") -> AsyncIterator[ExternalSession]:
    from toolshift.world.external import open_world

    world = open_world(name)
    before = world.snapshot()
    async with in_process_client(world, via) as client:
        spec = world.domain.spec
        yield ExternalSession(client, spec.policy or spec.description, spec.title, world, before)


def external(name: str, *, via: Via = "direct") -> Callable[..., AbstractAsyncContextManager[Any]]:
    """`bfcl` / `agentdojo` (each task's own world) or one world, `bfcl:<id>`, `agentdojo:<suite>.<task>`."""
    from toolshift.world.external import FAMILIES, load_external

    if name in FAMILIES:
        from toolshift.world.external import require_family

        require_family(name)
        return TaskWorlds(name, via=via)
    load_external(name)  # an unknown world or a missing extra fails here

    def open_world(task: Any = None) -> AbstractAsyncContextManager[Any]:
        return _open_external(name, via)

    return open_world


def world_opener(world: str, *, via: Via = "direct") -> Callable[..., AbstractAsyncContextManager[Any]]:
    """`clinic`, `path/to/spec.yaml`, `http://host:port/mcp`, or another benchmark's world (`bfcl`,
    `bfcl:<id>`, `agentdojo`, `agentdojo:<suite>.<task>`). An unknown domain is a BadInputError.

    `via` is how an in-process world is reached (a URL is always MCP): directly (default) or over in-memory MCP.
    """
    from toolshift.world.external import is_external

    if world.startswith(("http://", "https://")):
        return remote(world)
    if is_external(world):
        return external(world, via=via)
    return in_process(world, via=via)
