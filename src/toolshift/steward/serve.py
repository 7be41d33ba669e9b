"""`toolshift steward serve`: a version's world over MCP behind Steward's supply.

Each MCP session (one world fork per session, as `toolshift.world.mcp.serve.WorldServer`) has its own
`EpisodeSupply`. `tools/list` shows the three Steward tools and the world tools supplied to the
session so far; a world tool outside the supplied view is refused with a message saying how to get
it. The Steward tools:

* `steward_plan(request, facts)` — the initial supply: the plan chosen from the words of the request
  and of the facts given so far (never by fact names, D174), its steps, the facts it still needs
  (`ask_user_for`) and the supplied tools with their schemas;
* `retrieve_tools(query)` — at most 5 tools of the current catalog;
* `explore_capabilities(query)` — at most 3 an episode; skills and tools of the whole catalog.

The same three tools mount anywhere (the gateway's middleware): `steward_tool_defs()` lists them
and `call_steward_tool(episode_supply, name, arguments)` answers one call as a JSON-ready dict;
`SupplyGate` holds one `EpisodeSupply` per session key and the rule that a world tool is callable
only once supplied.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from toolshift.steward.supply import EpisodeSupply, Supply, plan_facts
from toolshift.world.mcp.serve import WorldServer, mcp_tool
from toolshift.world.state.world import World

MAX_QUERY = 2000
MAX_FACTS = 64

STEWARD_TOOLS: dict[str, dict[str, Any]] = {
    "steward_plan": {
        "description": "Start here. Give the user's request in their words (and, once known, the facts they gave as "
        "name → value): returns the plan's steps, the facts it still needs and the tools supplied for it.",
        "input_schema": {
            "type": "object",
            "properties": {
                "request": {"type": "string", "maxLength": MAX_QUERY},
                "facts": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "maxProperties": MAX_FACTS,
                },
            },
            "required": ["request"],
            "additionalProperties": False,
        },
    },
    "retrieve_tools": {
        "description": "Find up to 5 more tools of the current catalog for what you need to do next.",
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string", "maxLength": MAX_QUERY}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    "explore_capabilities": {
        "description": "Investigate how a goal can be reached (at most 3 times a conversation): skills and "
        "up to 8 tools from the whole catalog.",
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string", "maxLength": MAX_QUERY}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}


def steward_tool_defs() -> list[types.Tool]:
    return [
        types.Tool(name=n, description=d["description"], input_schema=d["input_schema"])
        for n, d in STEWARD_TOOLS.items()
    ]


def _text(value: Any, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def call_steward_tool(gate: SupplyGate, key: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Answer one Steward tool call for the session `key` (a JSON-ready dict; errors as {"error": ...})."""
    args = arguments or {}
    if name == "steward_plan":
        request = _text(args.get("request"), MAX_QUERY)
        if not request:
            return {"error": "steward_plan needs the user's request as text"}
        ep = gate.start(key, request)
        facts = args.get("facts") or {}
        if not isinstance(facts, dict) or len(facts) > MAX_FACTS:
            return {"error": f"facts must be an object of at most {MAX_FACTS} name → value strings"}
        facts = {str(k)[:200]: str(v)[:2000] for k, v in facts.items()}
        # the plan is chosen from the words of the request and of what the user said (D174)
        view = ep.choose(" ".join([request, *(f"{k} {v}" for k, v in facts.items())]))
        if view.plan is None:
            return {"plan": None, "candidates": [c.description for c in ep.candidates],
                    "note": "no known plan for this request"}  # fmt: skip
        needed = plan_facts(view.plan.body.get("steps", []))
        return {
            "plan": view.plan.description,
            "steps": view.plan.body.get("steps", []),
            "ask_user_for": [f for f in needed if f not in facts],
            "tools": [gate.supply.tool_card(n) for n in sorted(view.exposed)],
        }
    ep = gate.session(key)
    if ep is None:
        return {"error": "call steward_plan with the user's request first"}
    query = _text(args.get("query"), MAX_QUERY)
    if not query:
        return {"error": f"{name} needs a query"}
    if name == "retrieve_tools":
        return {"tools": ep.retrieve_tools(query)}
    if name == "explore_capabilities":
        return ep.explore_capabilities(query)
    return {"error": f"unknown Steward tool {name!r}"}


class SupplyGate:
    """One `EpisodeSupply` per session key; decides which world tools a session may see and call."""

    def __init__(self, supply: Supply) -> None:
        self.supply = supply
        self._sessions: weakref.WeakKeyDictionary[Any, EpisodeSupply] = weakref.WeakKeyDictionary()

    def start(self, key: Any, request: str) -> EpisodeSupply:
        ep = self._sessions.get(key)
        if ep is None or ep.request != request:
            ep = self.supply.episode(request)
            self._sessions[key] = ep
        return ep

    def session(self, key: Any) -> EpisodeSupply | None:
        return self._sessions.get(key)

    def visible(self, key: Any) -> set[str]:
        ep = self._sessions.get(key)
        return set(ep.exposed) if ep else set()


class StewardServer(WorldServer):
    """A `WorldServer` whose sessions see Steward's supplied view and the three Steward tools."""

    def __init__(self, world: World, supply: Supply, *, steward_tools: bool = True, **kw: Any) -> None:
        """`steward_tools=False`: the session's supply was made by its harness (the handoff, D196) and is
        fixed; the three Steward tools are not listed, so a small model cannot spend its turns on them."""
        super().__init__(world, **kw)
        self.gate = SupplyGate(supply)
        self.steward_tools = steward_tools

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        world = self.world_for(ctx, listing=True)
        shown = self.gate.visible(world)
        meta = steward_tool_defs() if self.steward_tools else []
        return types.ListToolsResult(tools=[*meta, *(mcp_tool(t) for t in world.tools if t.name in shown)])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        world = self.world_for(ctx)
        if params.name in STEWARD_TOOLS and self.steward_tools:
            body = call_steward_tool(self.gate, world, params.name, dict(params.arguments or {}))
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(body, ensure_ascii=False, default=str))],
                structured_content=body,
                is_error="error" in body,
            )
        if params.name not in self.gate.visible(world):
            body = {
                "code": "not_supplied",
                "message": f"{params.name[:100]} has not been supplied to this conversation: call steward_plan, "
                "retrieve_tools or explore_capabilities first",
            }
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(body))], structured_content=body, is_error=True
            )
        return await super()._call_tool(ctx, params)


def domain_supply(build: Any, domain: str, version: int, library: Any) -> tuple[World, Supply]:
    """A fresh world of `domain` at `version` and a supply over that domain's catalog from `library`."""
    from toolshift.bench.ecosystem.store import load_ecosystem, version_world
    from toolshift.errors import BadInputError
    from toolshift.steward.catalog import Catalog, CatalogTool, paged_operations
    from toolshift.steward.library import Library

    eco = load_ecosystem(build)
    if domain not in eco.domains:
        raise BadInputError(
            f"domain {domain!r} is not in ecosystem {eco.id}", source=str(build), field="domain"
        )
    if not 1 <= version <= eco.config.versions:
        raise BadInputError(f"the ecosystem has versions 1..{eco.config.versions}", field="version")
    world, _ = version_world(build, domain, version)
    tools = {
        t.name: CatalogTool(t.name, domain, t.description, t.input_schema, str(t.effect)) for t in world.tools
    }
    with Library.open(library) as lib:
        supply = Supply(lib, Catalog(version, paged_operations(tools)))
    return world, supply
