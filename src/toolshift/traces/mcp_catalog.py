"""Build a tool catalog by asking a live MCP server for its tools (`tools/list`) and reading their annotations."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable
from typing import Any

from toolshift.errors import BadInputError, ToolshiftError
from toolshift.traces.catalog import ToolCatalog, catalog_from_mcp_tools


async def list_mcp_tools(server: Any) -> list[Any]:
    """Every tool a server offers, following `nextCursor` pages. `server`: a URL (streamable HTTP) or anything `mcp.Client` takes."""
    tools, _ = await _list_tools_and_name(server)
    return tools


async def _list_tools_and_name(server: Any) -> tuple[list[Any], str]:
    """The server's tools and the name it gives itself in `initialize` (`serverInfo.name`)."""
    from mcp import Client

    tools: list[Any] = []
    async with Client(server) as client:
        info = client.server_info
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
            if not cursor:
                return tools, getattr(info, "name", "") or ""


async def catalog_of_world(domain: str) -> ToolCatalog:
    """A toolshift world's catalog, asked as any MCP client asks it: `toolshift world serve DOMAIN` over stdio.

    Trajectories are data, so this room never imports the world (D178). The server's own one-line error (an
    unknown domain, a bad spec: bad input, exit 2) is the error reported here, not the closed pipe it causes.
    """
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    from toolshift.shared import server_environment

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolshift", "world", "serve", domain], env=server_environment()
    )
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            return await catalog_from_mcp_server(
                stdio_client(params, errlog=errlog), domain, label=f"toolshift world {domain}"
            )
        except ToolshiftError:
            errlog.seek(0)
            said = [
                line.removeprefix("error: ")
                for line in errlog.read().splitlines()
                if line.startswith("error: ")
            ]
            if said:
                raise BadInputError(said[-1]) from None
            raise


WORLD_SERVER_PREFIX = "toolshift-"
"""A toolshift world names itself `toolshift-<domain>` in `serverInfo` (toolshift.world.mcp.serve)."""


async def catalog_from_mcp_server(
    server: Any, domain: str, *, neither: Iterable[str] = (), label: str | None = None
) -> ToolCatalog:
    """The catalog of a live MCP server's tools (see `catalog_from_mcp_tools` for the labelling rules).

    A toolshift world's own name (`serverInfo.name`, `toolshift-<domain>`) wins over `domain` when `label` is
    given: a spec path names a file, the catalog names the domain it declares.
    """
    try:
        tools, server_name = await _list_tools_and_name(server)
    except Exception as exc:  # connection refused, protocol errors: report, do not trace back
        raise ToolshiftError(
            f"cannot list tools of {label or f'MCP server {server}'}: {_root_cause(exc)}"
        ) from exc
    if label is not None and server_name.startswith(WORLD_SERVER_PREFIX):
        domain = server_name.removeprefix(WORLD_SERVER_PREFIX)
    return catalog_from_mcp_tools(
        domain, tools, neither=neither, source=label or f"MCP tools/list of {server}"
    )


def _root_cause(exc: BaseException) -> str:
    """The first leaf of an exception group (anyio task groups wrap a refused connection), as `Type: message`."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
