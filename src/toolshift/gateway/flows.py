"""The flows middleware: after each call, the decider's read-only lookups, made live and delivered with the response.

After the agent's call returns, the session's `DecisionSession` (toolshift.flows) is fed the call and its
result and names the lookups to make; they are made against the same backend session, chains included, up
to `max_lookups` per call, and their results travel with the call's response:

- `_meta["toolshift/lookups"]`: a list of `{tool, arguments, score, result}` (`result` is the lookup's
  structured content, else its text parsed as JSON where it parses), for programs;
- one more text content block, `LOOKUPS_HEADER` then the same list as JSON, for a model reading the text.

Safety of speculation:
- a lookup is made only of a tool that both the flow's catalog labels `read` and the backend annotates
  `readOnlyHint: true`; never a write, never an unannotated tool;
- a lookup's result is kept under (tool + arguments, catalog version, state version): the state version
  moves on every call that is not such a read (a write, an unknown tool), and the catalog version on every
  `tools/list_changed`, which also drops everything prefetched; a result is stored only if no write began
  while it was being made;
- an error is never served as a lookup: it is dropped (and counted);
- an agent's read whose key a kept lookup already answered, at the same versions, is answered from it
  (`_meta["toolshift/answered_by"] = "lookup"`), since with no write between the backend would say the same.

Other clients writing to the same backend state are not seen: a backend shared between sessions (a world
served with `--shared-state`, a third-party database) can change under a kept lookup.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as types

from toolshift.errors import BadInputError
from toolshift.gateway.chain import CallOutcome, GatewaySession, Middleware, Next, ServedLookup
from toolshift.gateway.config import FlowsConfig

if TYPE_CHECKING:
    pass

LOOKUPS_META_KEY = "toolshift/lookups"
ANSWERED_BY_META_KEY = "toolshift/answered_by"
LOOKUPS_HEADER = (
    "[toolshift gateway] Read-only lookups made for you after this call, with their results "
    "(current as of now; no need to repeat them):"
)


def result_text(result: types.CallToolResult) -> str:
    """The text of a result as a client model reads it (structured content where there is no text)."""
    texts = [c.text for c in result.content if isinstance(c, types.TextContent) and c.text]
    if texts:
        return "\n".join(texts)
    return json.dumps(result.structured_content, default=str) if result.structured_content is not None else ""


def _payload(result: types.CallToolResult) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    text = result_text(result)
    try:
        return json.loads(text)
    except ValueError:
        return text


def render_outcome(outcome: CallOutcome) -> types.CallToolResult:
    """The response the client gets: the backend's result plus the lookups made after it (see module doc)."""
    if not outcome.lookups and outcome.answered_by == "backend":
        return outcome.result
    result = outcome.result
    meta = dict(result.meta or {})
    content = list(result.content)
    if outcome.answered_by != "backend":
        meta[ANSWERED_BY_META_KEY] = outcome.answered_by
    if outcome.lookups:
        items = [
            {
                "tool": lk.tool,
                "arguments": lk.arguments,
                "score": round(lk.score, 4),
                "result": _payload(lk.result),
            }
            for lk in outcome.lookups
        ]
        meta[LOOKUPS_META_KEY] = items
        content.append(
            types.TextContent(text=LOOKUPS_HEADER + "\n" + json.dumps(items, ensure_ascii=False, default=str))
        )
    return result.model_copy(update={"content": content, "meta": meta})


@dataclass
class _FlowState:
    decisions: Any
    state_version: int = 0
    catalog_version: int = 0
    kept: dict[tuple[str, int, int], ServedLookup] = field(default_factory=dict)
    read_only: frozenset[str] | None = None
    """Exposed tool names the backend annotates read-only (refreshed when its tools change)."""


class FlowsMiddleware(Middleware):
    """Serves a learned flow's lookups live (one backend; see the module doc for the rules)."""

    name = "flows"

    def __init__(self, config: FlowsConfig) -> None:
        from toolshift.flows.decide import Decider
        from toolshift.flows.model import load_flow
        from toolshift.flows.timeline import Catalog
        from toolshift.traces.catalog import load_catalog

        self.config = config
        catalog = load_catalog(config.catalog)
        self.catalog = Catalog.of(catalog)
        self.catalog_tools = {t.name for t in catalog.tools if t.exists}
        self.flow = load_flow(config.flow, self.catalog)  # a flow for another catalog is refused here
        rule = None
        if config.rule is not None:
            from toolshift.flows.rule import load_rule

            rule, chosen_for = load_rule(config.rule)
            if chosen_for != config.decider:
                raise BadInputError(f"the rule was chosen for the {chosen_for} decider, not {config.decider}",
                                    source=str(config.rule), field="decider")  # fmt: skip
        self.decider = Decider(self.flow, config.decider, config.threshold, self.catalog, rule=rule)
        self.counts = {
            "lookups_made": 0,
            "lookups_errors_dropped": 0,
            "lookups_not_read_only": 0,
            "answered_from_lookup": 0,
            "kept_dropped_by_write": 0,
            "kept_dropped_by_list_changed": 0,
        }

    def check_backend(self, tools: list[types.Tool]) -> None:
        """Refuse a backend whose tools are not the catalog's the flow was learned for."""
        offered = {t.name for t in tools}
        missing = sorted(self.catalog_tools - offered)
        extra = sorted(offered - self.catalog_tools)
        if missing or extra:
            raise BadInputError(
                f"the backend's tools are not the catalog's the flow was learned for (domain "
                f"{self.catalog.domain!r}): missing {missing[:5]}{'…' if len(missing) > 5 else ''}, "
                f"extra {extra[:5]}{'…' if len(extra) > 5 else ''}",
                source=str(self.config.flow),
                field="catalog",
            )

    def _state(self, session: GatewaySession) -> _FlowState:
        st = session.state.get(self.name)
        if st is None:
            st = session.state[self.name] = _FlowState(self.decider.session())
        return st

    async def open(self, session: GatewaySession) -> None:
        self._state(session)

    async def tools_changed(self, session: GatewaySession) -> None:
        st = self._state(session)
        st.catalog_version += 1
        self.counts["kept_dropped_by_list_changed"] += len(st.kept)
        st.kept.clear()
        st.read_only = None

    async def _read_only(self, session: GatewaySession, st: _FlowState) -> frozenset[str]:
        if st.read_only is None:
            assert self.gateway is not None
            routes = await self.gateway.routes(session)
            st.read_only = frozenset(
                name
                for name, r in routes.items()
                if r.tool.annotations is not None and r.tool.annotations.read_only_hint is True
            )
        return st.read_only

    def _is_read(self, name: str, read_only: frozenset[str]) -> bool:
        return self.catalog.is_read(name) and name in read_only

    async def call(
        self, session: GatewaySession, name: str, arguments: dict[str, Any], call_next: Next
    ) -> CallOutcome:
        from toolshift.flows.values import call_key

        st = self._state(session)
        read_only = await self._read_only(session, st)
        is_read = self._is_read(name, read_only)
        key = call_key(name, arguments)
        kept = st.kept.get((key, st.catalog_version, st.state_version)) if is_read else None
        if kept is not None:
            outcome = CallOutcome(result=kept.result, answered_by="lookup")
            self.counts["answered_from_lookup"] += 1
        else:
            outcome = await call_next(session, name, arguments)
        if not is_read:
            st.state_version += 1
            self.counts["kept_dropped_by_write"] += len(st.kept)
            st.kept.clear()
        text = None if outcome.result.is_error else result_text(outcome.result)
        lookups = st.decisions.after_call(name, arguments, text)
        outcome.lookups.extend(await self._make(session, st, lookups, read_only))
        return outcome

    async def _make(self, session: GatewaySession, st: _FlowState, proposed: list[Any],
                    read_only: frozenset[str]) -> list[ServedLookup]:  # fmt: skip
        assert self.gateway is not None
        served: list[ServedLookup] = []
        queue = list(proposed)
        made = 0
        while queue and made < self.config.max_lookups:
            lookup = queue.pop(0)
            if not self._is_read(lookup.tool, read_only):
                self.counts["lookups_not_read_only"] += 1
                continue
            route = (await self.gateway.routes(session)).get(lookup.tool)
            if route is None:
                continue
            versions = (st.catalog_version, st.state_version)
            made += 1
            self.counts["lookups_made"] += 1
            started = time.perf_counter()
            result = await session.backends[route.backend].call_tool(route.name, lookup.arguments)
            seconds = time.perf_counter() - started
            if result.is_error:
                self.counts["lookups_errors_dropped"] += 1
                continue
            one = ServedLookup(
                lookup.tool, lookup.arguments, lookup.key, lookup.score, result, st.state_version, seconds
            )
            if versions == (st.catalog_version, st.state_version):
                st.kept[(lookup.key, *versions)] = one
                served.append(one)
                queue.extend(st.decisions.after_lookup(lookup, result_text(result)))
        return served

    def metrics(self) -> dict[str, Any]:
        return dict(self.counts)
