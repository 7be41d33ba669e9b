"""The MCP servers behind the gateway: how to reach each, and one long-lived client session per client session.

A `Backend` knows how to open an MCP client to its server: a subprocess over stdio or a streamable-HTTP
URL. A toolshift world (or one ecosystem version of a bench build) lives in the gateway's process: each
session gets its own fork of it and calls it directly (`direct`, the default: the world server's own
listing, call path and results, without a second MCP session and thread hop, D149), or, with
`direct = False`, over the SDK's memory transport as any MCP client would. A `BackendSession` is one such client held open for
the whole of one gateway client session, so a call costs one request, never a handshake (the cause of
FastMCP's proxy turning 9 ms into 1 s, issues #930 and #3466). The client is owned by a task in the
gateway's task group, because an MCP client must be entered and left in the same task while requests
arrive in others.

A session's tool list is fetched once and kept until the backend sends `notifications/tools/list_changed`;
listeners (the flows middleware, the client's own notification) hear of the change. A backend that cannot
be reached, or stops answering within the call timeout, is a `BackendUnreachable` naming it: at start
(`probe`) and per call, never a hang.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from toolshift.errors import ToolshiftError
from toolshift.gateway.config import BackendConfig

MAX_TOOL_PAGES = 100


class BackendUnreachable(ToolshiftError):
    """A backend could not be reached, or stopped answering: the message names it and says why."""


def root_cause(exc: BaseException) -> str:
    """The first leaf of an exception group (anyio wraps a refused connection), as `Type: message`."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Backend:
    """One configured MCP server: opens clients to it (one per gateway client session)."""

    def __init__(self, config: BackendConfig, *, call_timeout: float = 30.0) -> None:
        self.config = config
        self.name = config.name
        self.call_timeout = call_timeout
        self._served: Any = None
        """For world and build backends: the `WorldServer` every connection forks its world from."""
        self.direct = True
        """World and build backends: each session calls its fork of the world directly (False: over in-memory MCP)."""
        self.world_domain: str | None = None
        self.ecosystem_version: str | None = None
        """For build backends: `<ecosystem id>/v<n>`, as bench's evaluation reads it from an episode."""
        if config.world is not None:
            from toolshift.world import load_domain
            from toolshift.world.mcp.serve import WorldServer

            compiled = load_domain(config.world)
            self._served = WorldServer(compiled, idle_timeout=None, max_sessions=None)
            self.world_domain = compiled.spec.name
        elif config.build is not None:
            self._served, self.ecosystem_version = _version_server(config)
            self.world_domain = config.domain

    @property
    def world_server(self) -> Any:
        """The in-process `WorldServer` (world and build backends), else None."""
        return self._served

    def describe(self) -> str:
        return f"backend {self.name!r} ({self.config.describe()})"

    def client(self, message_handler: Callable[[Any], Awaitable[None]] | None = None) -> Client:
        cfg = self.config
        options: dict[str, Any] = {
            "mode": "legacy",
            "read_timeout_seconds": self.call_timeout,
            "message_handler": message_handler,
            "cache": None,
        }
        if cfg.command is not None:
            from toolshift.shared import server_environment

            params = StdioServerParameters(
                command=cfg.command[0], args=cfg.command[1:], env=server_environment(cfg.env)
            )
            return Client(params, **options)
        if cfg.url is not None:
            return Client(cfg.url, **options)
        return Client(self._served.server, **options)

    async def probe(self) -> list[types.Tool]:
        """Connect once, list the tools, disconnect: the start-up check. Raises `BackendUnreachable`."""
        try:
            with anyio.fail_after(self.call_timeout + 5):
                async with self.client() as client:
                    return await _all_tools(client)
        except TimeoutError:
            raise BackendUnreachable(
                f"{self.describe()} did not answer within {self.call_timeout:g} s (call_timeout)"
            ) from None
        except Exception as exc:
            raise BackendUnreachable(f"{self.describe()} is unreachable: {root_cause(exc)}") from None


def _version_server(config: BackendConfig) -> tuple[Any, str]:
    """One ecosystem version of a bench build, served as `toolshift bench serve` serves it."""
    from toolshift.bench.ecosystem.store import load_ecosystem, version_world
    from toolshift.errors import BadInputError
    from toolshift.world.mcp.serve import WorldServer

    assert config.build is not None and config.domain is not None and config.version is not None
    eco = load_ecosystem(config.build)
    if config.domain not in eco.domains:
        raise BadInputError(
            f"domain {config.domain!r} is not in ecosystem {eco.id}", source=str(config.build), field="domain"
        )
    if config.version > eco.config.versions:
        raise BadInputError(
            f"ecosystem {eco.id} has versions 1..{eco.config.versions}, not {config.version}",
            source=str(config.build),
            field="version",
        )
    world, _ = version_world(config.build, config.domain, config.version)
    server = WorldServer(
        world, name=f"toolshift-{config.domain}-v{config.version}", idle_timeout=None, max_sessions=None
    )
    return server, f"{eco.id}/v{config.version}"


async def _all_tools(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


ChangeListener = Callable[[], Awaitable[None]]


@dataclass
class BackendSession:
    """One open MCP client to a backend, for one gateway client session; tools cached until changed."""

    backend: Backend
    client: Client | None = None
    world: Any = None
    """A direct backend's session world (then `client` stays None)."""
    tools: list[types.Tool] | None = None
    listeners: list[ChangeListener] = field(default_factory=list)
    dead: str | None = None
    """Why the client ended early (the backend exited, the connection dropped)."""
    list_calls: int = 0
    """`tools/list` requests actually sent to the backend (the rest were served from the cache)."""
    _close: anyio.Event = field(default_factory=anyio.Event)
    _closed: anyio.Event = field(default_factory=anyio.Event)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.tools = None
            for listener in list(self.listeners):
                await listener()
        else:
            await anyio.lowlevel.checkpoint()

    async def own(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Run in the gateway's task group: open the client, hold it until `close()`, then leave it."""
        started = False
        served = self.backend.world_server
        if served is not None and self.backend.direct:
            self.world = served.open_session_world()
            try:
                task_status.started(self)
                await self._close.wait()
            finally:
                served.close_session_world(self.world)
                self.world = None
                self._closed.set()
            return
        try:
            async with self.backend.client(self._on_message) as client:
                self.client = client
                started = True
                task_status.started(self)
                await self._close.wait()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            if not started:
                raise BackendUnreachable(
                    f"{self.backend.describe()} is unreachable: {root_cause(exc)}"
                ) from None
            self.dead = root_cause(exc)
        finally:
            self.client = None
            self._closed.set()

    def close(self) -> None:
        self._close.set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def _live(self) -> Client:
        if self.client is None:
            why = self.dead or "its session is closed"
            raise BackendUnreachable(f"{self.backend.describe()} is unreachable: {why}")
        return self.client

    async def list_tools(self) -> list[types.Tool]:
        if self.tools is not None:
            return self.tools
        if self.world is not None:
            from toolshift.world.mcp.serve import mcp_tool

            self.list_calls += 1
            self.tools = [mcp_tool(t) for t in self.world.tools]
            return self.tools
        client = self._live()
        try:
            tools = await _all_tools(client)
        except MCPError as exc:
            raise self._unreachable(exc) from None
        except Exception as exc:
            raise self._unreachable(exc) from None
        self.list_calls += 1
        self.tools = tools
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """One call through the open session; an unreachable or silent backend is `BackendUnreachable`."""
        if self.world is not None:
            return await self._call_direct(name, arguments)
        client = self._live()
        try:
            with anyio.fail_after(self.backend.call_timeout + 1):
                return await client.call_tool(name, arguments)
        except TimeoutError:
            raise BackendUnreachable(
                f"{self.backend.describe()} did not answer {name} within {self.backend.call_timeout:g} s"
            ) from None
        except MCPError as exc:
            if exc.error.code in (types.INVALID_PARAMS, types.METHOD_NOT_FOUND):
                raise  # the backend's own answer to a bad request: the client sees it as sent
            raise self._unreachable(exc) from None
        except Exception as exc:
            raise self._unreachable(exc) from None

    async def _call_direct(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """The world server's own call path and result, on this session's world (D149)."""
        from toolshift.world.mcp.serve import mcp_result
        from toolshift.world.state.direct import call_world

        try:
            with anyio.fail_after(self.backend.call_timeout + 1):
                return mcp_result(await call_world(self.world, name, arguments or {}))
        except TimeoutError:
            raise BackendUnreachable(
                f"{self.backend.describe()} did not answer {name} within {self.backend.call_timeout:g} s"
            ) from None

    def _unreachable(self, exc: BaseException) -> BackendUnreachable:
        return BackendUnreachable(f"{self.backend.describe()} is unreachable: {root_cause(exc)}")
