"""Build a tool catalog by asking a live MCP server for its tools (`tools/list`) and reading their annotations."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolshift.errors import ToolshiftError
from toolshift.traces.catalog import ToolCatalog, catalog_from_mcp_tools


async def list_mcp_tools(server: Any) -> list[Any]:
    """Every tool a server offers, following `nextCursor` pages. `server`: a URL (streamable HTTP) or anything `mcp.Client` takes."""
    from mcp import Client

    tools: list[Any] = []
    async with Client(server) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
            if not cursor:
                return tools


async def catalog_from_mcp_server(server: Any, domain: str, *, neither: Iterable[str] = ()) -> ToolCatalog:
    """The catalog of a live MCP server's tools (see `catalog_from_mcp_tools` for the labelling rules)."""
    try:
        tools = await list_mcp_tools(server)
    except Exception as exc:  # connection refused, protocol errors: report, do not trace back
        raise ToolshiftError(f"cannot list tools of MCP server {server}: {_root_cause(exc)}") from exc
    return catalog_from_mcp_tools(domain, tools, neither=neither, source=f"MCP tools/list of {server}")


def _root_cause(exc: BaseException) -> str:
    """The first leaf of an exception group (anyio task groups wrap a refused connection), as `Type: message`."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
