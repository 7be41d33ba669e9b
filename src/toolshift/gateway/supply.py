"""The steward middleware: Steward's supply in front of a build backend, mounted as one step of the chain.

The client sees Steward's three tools (`steward_plan`, `retrieve_tools`, `explore_capabilities`) and the
backend tools supplied to its session so far; a backend tool not yet supplied is refused with how to get it.
Each client session has its own `EpisodeSupply` (Steward's per-conversation state and caps), held by a key
object in the session's middleware state, so it ends with the session. When a Steward call supplies new
tools the client is told its tool list changed. The supply is built once from the library and the served
version's catalog (`toolshift.steward.serve.domain_supply`), so what is supplied is always that version's.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from toolshift.errors import BadInputError
from toolshift.gateway.chain import CallOutcome, GatewaySession, Middleware, Next
from toolshift.gateway.config import GatewayConfig

TOOLS_CHANGED_META_KEY = "toolshift/tools_changed"
"""The result's `_meta` key saying the session's tool listing changed (as `toolshift.bench.ecosystem.server`)."""


class _SessionKey:
    """Identity of one client session inside Steward's gate (weakly held: dropped with the session)."""

    unplanned: bool = False
    """The harness's handoff (`list_tools: false`) found no plan: the session is served the backend's tools."""


class StewardMiddleware(Middleware):
    name = "steward"

    def __init__(self, config: GatewayConfig) -> None:
        from toolshift.steward.serve import SupplyGate, domain_supply

        assert config.steward is not None
        backend = config.backends[0]
        if len(config.backends) != 1 or backend.build is None:
            raise BadInputError(
                "middleware steward fronts exactly one build backend (its library is kept for one catalog)",
                field="steward",
            )
        assert backend.domain is not None and backend.version is not None
        _, supply = domain_supply(backend.build, backend.domain, backend.version, config.steward.library)
        self.gate = SupplyGate(supply)
        self.library = config.steward.library
        self.list_steward_tools = config.steward.list_tools
        self.counts = {"steward_calls": 0, "refused_unsupplied": 0, "supplied_calls": 0}

    def _key(self, session: GatewaySession) -> _SessionKey:
        key = session.state.get(self.name)
        if key is None:
            key = session.state[self.name] = _SessionKey()
        return key

    async def list_tools(self, session: GatewaySession, tools: list[types.Tool]) -> list[types.Tool]:
        from toolshift.steward.serve import steward_tool_defs

        key = self._key(session)
        if key.unplanned:  # the handoff found no plan: the backend's own tools, as without Steward (D214)
            return tools
        shown = self.gate.visible(key)
        meta = steward_tool_defs() if self.list_steward_tools else []
        return [*meta, *(t for t in tools if t.name in shown)]

    async def call(
        self, session: GatewaySession, name: str, arguments: dict[str, Any], call_next: Next
    ) -> CallOutcome:
        from toolshift.steward.serve import STEWARD_TOOLS, call_steward_tool

        key = self._key(session)
        if name in STEWARD_TOOLS:
            self.counts["steward_calls"] += 1
            before = self.gate.visible(key)
            body = call_steward_tool(self.gate, key, name, dict(arguments or {}))
            if not self.list_steward_tools and name == "steward_plan" and "error" not in body:
                # the harness's handoff: with no plan for the request, Steward steps aside for this session
                # rather than leave the agent a few retrieved tools and no way to ask for more (D214)
                key.unplanned = body.get("plan") is None
            result = _result(body, "error" in body)
            if self.gate.visible(key) != before:
                # said twice, as `toolshift bench serve` says it: in the result (a client that reads results,
                # such as toolshift's agent loop, lists again) and as MCP's list_changed notification
                result.meta = {**(result.meta or {}), TOOLS_CHANGED_META_KEY: True}
                if session.notify is not None:
                    await session.notify()
            return CallOutcome(result=result, answered_by="steward")
        if name not in self.gate.visible(key) and not key.unplanned:
            self.counts["refused_unsupplied"] += 1
            body = {
                "code": "not_supplied",
                "message": f"{name[:100]} has not been supplied to this conversation: call steward_plan, "
                "retrieve_tools or explore_capabilities first",
            }
            return CallOutcome(result=_result(body, True), answered_by="steward")
        self.counts["supplied_calls"] += 1
        return await call_next(session, name, arguments)

    def metrics(self) -> dict[str, Any]:
        return {"library": str(self.library), **self.counts}


def _result(body: dict[str, Any], is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False, default=str))],
        structured_content=body,
        is_error=is_error,
    )
