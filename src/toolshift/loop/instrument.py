"""The loop's measuring instrument (no model): a v1 procedure that follows Steward's plans when served one.

`PlanFollower` stands for an agent deployed knowing each task's v1 procedure (the task's gold path, as the
`oracle` instrument) behind a gateway that may mount Steward. When the gateway lists `steward_plan` it asks
the user what they want, calls `steward_plan` with their words over MCP, and, given a plan with steps,
follows it exactly as Steward's own skill-following instrument does (`toolshift.steward.instruments.
SkillFollower`: facts asked by the plan's phrases, arguments bound from facts and earlier results). With no
plan, or no Steward, it asks the user for the task's facts by name (as Steward's `FactReplay` does) and makes
the procedure's calls in order, ignoring their results; behind Steward, a tool the gateway has not supplied
is asked of `retrieve_tools` by its name's words, and the first tool returned whose schema takes every
argument of the call is used instead (so a renamed tool is found through Steward's retrieval, never
without it). Whatever the loop changes reaches it only through the
gateway: the plans Steward serves and the lookups flows add to results (which it reads past: the lookup block
the flows middleware appends to a result is cut before the result is read as JSON).
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolshift.agents.chat import ModelReply, ToolDef
from toolshift.agents.policies import DONE_TEXT
from toolshift.agents.users import END_CONVERSATION
from toolshift.models import Task
from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import parse_facts
from toolshift.steward.instruments import DESCRIBE, SkillFollower, _reply, ask_text
from toolshift.steward.supply import plan_facts

INSTRUMENT = "plan-follower"
"""The name `toolshift loop --model` takes for this instrument."""


class _Cards:
    """What `SkillFollower` reads of a supply (`catalog.tools[name]`: schema and effect), from the tool cards
    `steward_plan` returned and the gateway's listing (its read-only hints)."""

    def __init__(self) -> None:
        self.catalog = Catalog(0, {})

    def take(self, cards: list[Any], listed: list[ToolDef]) -> None:
        hints = {t.name: t.read_only for t in listed}
        tools = {}
        for c in cards:
            if isinstance(c, dict) and isinstance(c.get("name"), str):
                effect = "read" if hints.get(c["name"]) else "write"
                schema = c.get("input_schema") if isinstance(c.get("input_schema"), dict) else {}
                tools[c["name"]] = CatalogTool(c["name"], "", str(c.get("description", "")), schema, effect)
        self.catalog = Catalog(0, tools)


class PlanFollower(SkillFollower):
    """Steward's plan when the gateway serves one, else the task's v1 procedure (an instrument: no model)."""

    name = "loop-plan-follower"

    def __init__(self, task: Task) -> None:
        super().__init__(_Cards())  # type: ignore[arg-type]
        self.procedure = [(c.tool, dict(c.arguments)) for c in task.gold_path]
        self.plan_steps: list[dict[str, Any]] = []
        self.plan_id: str | None = None
        self.followed = "procedure"
        self._k = 0
        self._retrieved: set[str] = set()
        self._told = False
        self.fact_names = list(task.instruction.facts)
        self._asked_facts = False
        self._searching: str | None = None
        self._renamed: dict[str, str] = {}

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        names = {t.name for t in tools}
        users = [m for m in messages if m.get("role") == "user"]
        for m in users:
            self.facts.update(parse_facts(m.get("content") or ""))
        if self.phase == "start":
            if "steward_plan" in names:
                self.phase = "asked"
                return _reply(DESCRIBE)
            self.phase = "procedure"
        if self.phase == "asked":
            conversation = " ".join(m.get("content") or "" for m in users)[:2000]
            self.phase = "planned"
            return _reply(call=("call_plan", "steward_plan", {"request": conversation}))
        if self.phase == "planned":
            body = _json(messages[-1].get("content") if messages else None)
            steps = body.get("steps") if isinstance(body, dict) else None
            if isinstance(steps, list) and steps:
                self.supply.take(body.get("tools") or [], tools)  # type: ignore[attr-defined]
                self.plan_steps, self.plan_id, self.followed = steps, str(body.get("plan") or ""), "steward"
                self.phase = "run"
                phrases = [f for f in plan_facts(steps) if f not in self.facts]
                if phrases:
                    self.asked.update(phrases)
                    self.pending = "facts"
                    return _reply(ask_text(phrases))
                return self._next_call()
            self.phase = "procedure"
        if self.phase == "procedure":
            return self._procedure(tools, messages)
        return await super().complete(_without_lookups(messages), tools)

    def _procedure(self, tools: list[ToolDef], messages: list[dict[str, Any]]) -> ModelReply:
        names = {t.name for t in tools}
        if not self._asked_facts:
            self._asked_facts = True
            if self.fact_names:
                return _reply(ask_text(self.fact_names))
        if self._k < len(self.procedure):
            tool, args = self.procedure[self._k]
            tool = self._renamed.get(tool, tool)
            if self._searching is not None:
                # the retrieved tools, in the order returned (the result text may be cut short: the names are
                # read from it, the schemas from the gateway's listing): the first taking every argument
                text = str(messages[-1].get("content") or "") if messages else ""
                listed = {t.name: t for t in tools}
                for name in dict.fromkeys(re.findall(r'"name": "([A-Za-z0-9_.-]+)"', text)):
                    props = (listed[name].input_schema or {}).get("properties", {}) if name in listed else {}
                    if isinstance(props, dict) and set(args) <= set(props):
                        self._renamed[self._searching] = tool = name
                        break
                self._searching = None
            elif "retrieve_tools" in names and tool not in names and tool not in self._retrieved:
                self._retrieved.add(tool)
                self._searching = tool
                return _reply(call=(f"call_r{self._k}", "retrieve_tools", {"query": tool.replace("_", " ")}))
            self._k += 1
            return _reply(call=(f"call_{self._k}", tool, args))
        if not self._told:
            self._told = True
            return _reply(DONE_TEXT)
        return _reply(call=("call_end", END_CONVERSATION, {}))


def _without_lookups(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the flows middleware's lookup block cut from tool results: the instrument reads the
    world's result as JSON and makes no use of lookups (a model reads the block as the gateway sends it)."""
    from toolshift.gateway.flows import LOOKUPS_HEADER

    out = []
    for m in messages:
        text = m.get("content")
        if m.get("role") == "tool" and isinstance(text, str) and LOOKUPS_HEADER in text:
            m = {**m, "content": text.split("\n" + LOOKUPS_HEADER, 1)[0].split(LOOKUPS_HEADER, 1)[0]}
        out.append(m)
    return out


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return None
