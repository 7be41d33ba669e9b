"""In-process callers' way into a world from async code: one call inline, or in a worker thread when its code is not ours.

This is the path every in-process caller takes (the MCP server's tool handler, the agent loop's
`DirectToolbox`, the gateway's direct backends), so a call made directly and a call made over MCP run
the same code and get the same `CallResult` (D148, D149):

- `runs_inline(tool)`: the tool's handler is this package's code (the compiler's generated tools,
  interpreted actions under their step budget, registered implementations, ecosystem transforms, the
  external worlds' adapters), which returns promptly: it runs on the event loop, with no thread hop.
- Any other handler (a tool added at run time with a handler of its own, which may block) runs in a
  worker thread, so an in-process client's own timeout still fires while it blocks (D36, D148).
- `call_world(world, name, args)` applies the rule and also answers anything `World.call` raises (it
  answers a handler's failures itself; this guards the caller from the rest) as `internal_error`.
- `result_text(result)` is the text an MCP client reads from the same call's `CallToolResult`.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from toolshift.world.state.tools import CallResult, Tool
from toolshift.world.toolerror import ToolError, shorten

OUR_PACKAGE = "toolshift."


def runs_inline(tool: Tool) -> bool:
    """Whether `tool`'s handler is this package's code (a `functools.partial` is judged by its function)."""
    handler: Any = tool.handler
    while hasattr(handler, "func"):  # functools.partial
        handler = handler.func
    return str(getattr(handler, "__module__", "") or "").startswith(OUR_PACKAGE)


def _inline(world: Any, name: str) -> bool:
    try:
        return runs_inline(world.tool(name))
    except ToolError:  # an unknown tool: World.call answers it at once
        return True


async def call_world(world: Any, name: str, args: dict[str, Any] | None) -> CallResult:
    """`world.call(name, args)` from async code, inline or off the event loop by `runs_inline`; never raises
    but for cancellation."""
    try:
        if _inline(world, name):
            return world.call(name, args or {})
        return await anyio.to_thread.run_sync(world.call, name, args or {})  # type: ignore[no-any-return]
    except (anyio.get_cancelled_exc_class(), KeyboardInterrupt):
        raise
    except BaseException as exc:
        error = {"code": "internal_error", "message": shorten(f"{name} failed: {type(exc).__name__}: {exc}")}
        return CallResult(name, False, error=error)


def result_body(result: CallResult) -> Any:
    """What a call answers: its result, or `{code, message}` on error."""
    return result.result if result.ok else result.error


def result_text(result: CallResult) -> str:
    """The JSON text of a call's answer, exactly as the MCP server puts it in its text content."""
    return json.dumps(result_body(result), ensure_ascii=False, default=str)
