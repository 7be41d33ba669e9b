"""The agent's side of a world: list its tools, check a proposed call, call it with a hard timeout — over MCP
(`McpToolbox`, any server) or directly in-process (`DirectToolbox`, a world in this process: D149)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from toolshift.agents.chat import ProposedCall, ToolDef
from toolshift.models import RowChange
from toolshift.world.state.validation import ArgumentSchema

CHANGES_META_KEY = "toolshift/changes"
TOOLS_CHANGED_META_KEY = "toolshift/tools_changed"
"""A result that exposed new tools (a tool search) says so here: the harness lists the tools again."""


@dataclass
class ToolOutcome:
    """What a call returned as the model will see it; `error` marks failed calls of every kind."""

    text: str
    error: bool
    kind: str = "ok"
    """ok, domain_error, unknown_tool, bad_arguments, timeout, transport_error."""


def result_text(result: Any) -> str:
    """The text an MCP `CallToolResult` carries (structured content when there is no text block)."""
    parts = [getattr(block, "text", None) for block in getattr(result, "content", None) or []]
    texts = [p for p in parts if p]
    if texts:
        return "\n".join(texts)
    structured = getattr(result, "structured_content", None)
    return json.dumps(structured, default=str) if structured is not None else ""


class McpToolbox:
    """One MCP client session's tools, with client-side checks every careful agent harness makes.

    Unknown tools and arguments that do not parse or fail the tool's input schema never reach the
    server: they come back as error outcomes so the episode can go on. `check_schemas=False` leaves the
    schema to the world, for tasks judged by another benchmark whose harness sends the call as the model
    wrote it (BFCL, AgentDojo: D103) — there a refusal here would be a call their checker still counts.
    """

    def __init__(self, client: Any, *, tool_timeout: float = 30.0, check_schemas: bool = True) -> None:
        self.client = client
        self.tool_timeout = tool_timeout
        self.check_schemas = check_schemas
        self.tools: dict[str, ToolDef] = {}
        self._validators: dict[str, Any] = {}
        self.reported: list[RowChange] = []
        """Row changes the world reported with its results (`_meta["toolshift/changes"]`)."""
        self.unreported = 0
        """Calls that reached the world and came back without a change report."""
        self.stale = False
        """The server said its tool listing changed: list again before the model's next turn."""
        self.listed: dict[str, None] = {}
        """Every tool name any listing offered during the session, in order first offered."""
        self.meta: dict[str, Any] | None = None
        """Request `_meta` sent with every call (the task's id, `toolshift/task`, which a gateway records)."""

    async def list_tools(self) -> list[ToolDef]:
        cursor: str | None = None
        found: list[ToolDef] = []
        for _ in range(100):
            page = await self.client.list_tools(cursor=cursor)
            for tool in page.tools:
                found.append(
                    ToolDef(
                        name=tool.name,
                        description=tool.description or "",
                        input_schema=dict(tool.input_schema or {"type": "object"}),
                        read_only=getattr(tool.annotations, "read_only_hint", None),
                    )
                )
            cursor = page.next_cursor
            if cursor is None:
                break
        self.tools = {t.name: t for t in found}
        self.listed.update(dict.fromkeys(self.tools))
        self.stale = False
        return found

    def check(self, call: ProposedCall) -> ToolOutcome | None:
        """Why this call cannot be sent, or None when it can."""
        if call.parse_error is not None or call.arguments is None:
            raw = f": {call.raw_arguments}" if call.raw_arguments else ""
            return ToolOutcome(f"error: {call.parse_error or 'no arguments'}{raw}", True, "bad_arguments")
        tool = self.tools.get(call.name)
        if tool is None:
            names = ", ".join(sorted(self.tools))
            return ToolOutcome(
                f"error: unknown tool {call.name!r}; available tools: {names}", True, "unknown_tool"
            )
        if not self.check_schemas:
            return None
        validator = self._validators.get(call.name)
        if validator is None:
            validator = self._validators[call.name] = ArgumentSchema(
                tool.input_schema, formats=False, check=False
            )
        problem = validator.problem(call.arguments)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path)
            at = f" at {where!r}" if where else ""
            return ToolOutcome(
                f"error: invalid arguments for {call.name}{at}: {problem.message}", True, "bad_arguments"
            )
        return None

    async def call(self, call: ProposedCall) -> ToolOutcome:
        refused = self.check(call)
        if refused is not None:
            return refused
        try:
            extra = {"meta": self.meta} if self.meta else {}
            result = await asyncio.wait_for(
                self.client.call_tool(
                    call.name, call.arguments, read_timeout_seconds=self.tool_timeout, **extra
                ),
                self.tool_timeout,
            )
        except TimeoutError:
            self.unreported += 1
            return ToolOutcome(f"error: tool call timed out after {self.tool_timeout:g} s", True, "timeout")
        except Exception as exc:  # an MCP protocol error or a broken transport: the model sees it as an error
            self.unreported += 1
            return ToolOutcome(f"error: {type(exc).__name__}: {exc}", True, "transport_error")
        error = bool(getattr(result, "is_error", False))
        meta = getattr(result, "meta", None) or {}
        if CHANGES_META_KEY in meta:
            self.reported += [RowChange.model_validate(c) for c in meta[CHANGES_META_KEY]]
        else:
            self.unreported += 1
        if meta.get(TOOLS_CHANGED_META_KEY):
            self.stale = True
        return ToolOutcome(result_text(result), error, "domain_error" if error else "ok")


class DirectToolbox(McpToolbox):
    """`McpToolbox` for a world in this process, called directly: the same listing, checks, texts, errors and
    change reports as over MCP, without the protocol (D149).

    The listing is the world's catalog as the MCP server lists it (`mcp_tool`), the call is the server's own
    path (`toolshift.world.state.direct.call_world`: inline for this package's code, a worker thread otherwise, so
    `tool_timeout` still bounds a handler that blocks), and the text is the server's text content.
    tests/agents/test_direct_toolbox.py checks that whole episodes are identical on both paths.
    """

    def __init__(self, world: Any, *, tool_timeout: float = 30.0, check_schemas: bool = True) -> None:
        super().__init__(None, tool_timeout=tool_timeout, check_schemas=check_schemas)
        self.world = world

    async def list_tools(self) -> list[ToolDef]:
        from toolshift.world.mcp.serve import mcp_tool

        found = []
        for t in self.world.tools:
            listed = mcp_tool(t)
            found.append(
                ToolDef(
                    name=listed.name,
                    description=listed.description or "",
                    input_schema=dict(listed.input_schema or {"type": "object"}),
                    read_only=getattr(listed.annotations, "read_only_hint", None),
                )
            )
        self.tools = {t.name: t for t in found}
        self.listed.update(dict.fromkeys(self.tools))
        self.stale = False
        return found

    async def call(self, call: ProposedCall) -> ToolOutcome:
        from toolshift.world.state.direct import call_world, result_text

        refused = self.check(call)
        if refused is not None:
            return refused
        try:
            result = await asyncio.wait_for(
                call_world(self.world, call.name, call.arguments), self.tool_timeout
            )
        except TimeoutError:
            self.unreported += 1
            return ToolOutcome(f"error: tool call timed out after {self.tool_timeout:g} s", True, "timeout")
        self.reported += result.changes
        return ToolOutcome(result_text(result), not result.ok, "ok" if result.ok else "domain_error")
