"""Start an installed server version on a sandbox and talk to it over MCP with the official SDK client.

`connect` is the one way every part of this room reaches a real server: a subprocess over stdio with the
`mcp` SDK's `Client` (the legacy initialize handshake, as the gateway's command backends use it), in the
environment the gateway gives its backends (`toolshift.shared.server_environment`). `list_catalog` reads one
version's `tools/list` (every page), server info and protocol version as the wire gives them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.drift.install import Installed
from toolshift.gateway.watch import catalog_fingerprint

CALL_TIMEOUT = 60.0
MAX_PAGES = 50


@asynccontextmanager
async def connect(
    inst: Installed, sandbox: Path, *, message_handler: Any = None, timeout: float = CALL_TIMEOUT
) -> AsyncIterator[Any]:
    """An entered `mcp.Client` to `inst` started on `sandbox` (its own process, ended on leaving). The server's
    stderr goes to `<sandbox>.server.log` beside the sandbox, never into it or onto the terminal."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from toolshift.shared import server_environment

    argv, env = inst.command(sandbox)
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=server_environment(env), cwd=str(sandbox)
    )
    log = sandbox.with_name(sandbox.name + ".server.log")
    with log.open("a", encoding="utf-8") as errlog:
        transport = stdio_client(params, errlog=errlog)
        async with Client(
            transport,
            mode="legacy",
            read_timeout_seconds=timeout,
            message_handler=message_handler,
            cache=None,
        ) as client:
            yield client


def wire_tool(tool: Any) -> dict[str, Any]:
    """A listed tool as the wire carries it (camelCase keys, nulls left out)."""
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


async def all_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


@dataclass(frozen=True)
class Listing:
    """What one version says about itself on connecting and listing."""

    server_name: str
    server_version: str
    protocol: str
    tools: list[dict[str, Any]]

    @property
    def fingerprint(self) -> str:
        return catalog_fingerprint(self.tools)


async def list_catalog(inst: Installed, sandbox: Path) -> Listing:
    async with connect(inst, sandbox) as client:
        tools = [wire_tool(t) for t in await all_tools(client)]
        info = client.server_info
        return Listing(
            server_name=str(getattr(info, "name", "") or ""),
            server_version=str(getattr(info, "version", "") or ""),
            protocol=str(client.protocol_version or ""),
            tools=tools,
        )
