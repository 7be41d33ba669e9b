"""What the structural operators stand on: a domain's schema and tools, fresh worlds at any point of a
ground-truth path, and small text helpers (fact names, mentions of a value, values relative to a record's)."""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from toolshift.bench.graph import ToolSignature, signatures
from toolshift.evolve.edits import EditError
from toolshift.evolve.program import CallSpec, TaskSpec
from toolshift.world import World, load_domain


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


class Scene:
    """A domain's schema and tools as the operators need them, and fresh worlds at any point of a path."""

    def __init__(self, domain: str) -> None:
        self.compiled = load_domain(domain)
        self.spec = self.compiled.spec
        self.sigs: dict[str, ToolSignature] = signatures(self.compiled.tools, self.spec)
        self.writes = {n for n, s in self.sigs.items() if s.effect == "write"}
        self.ent = {e.name: e for e in self.spec.entities}
        self.relations_into: dict[str, list[tuple[str, str, str]]] = {}
        for r in self.spec.relations:
            tool = f"{self.spec.tool_prefix}list_{r.from_}_{r.name}"
            if tool in self.sigs:
                self.relations_into.setdefault(r.to, []).append((tool, r.from_, r.via))

    def world_after(self, calls: list[CallSpec]) -> World:
        world = World(self.compiled)
        for c in calls:
            res = world.call(c.tool, c.arguments)
            if not res.ok:
                world.close()
                raise EditError(f"{c.tool} failed: {res.error}")
        return world

    def nameable_others(
        self, calls: list[CallSpec], ent: str, touched: set[str], limit: int = 80
    ) -> list[Any]:
        """Up to `limit` records of `ent` in the world after `calls` that the task does not touch and a person
        can name: not a composite key (τ²'s `user/payment` rows). The distractor moves draw from these."""
        key = self.ent[ent].key
        world = self.world_after(calls)
        try:
            return [
                r
                for r in world.runtime.find(ent)[:limit]
                if str(r[key]) not in touched and "/" not in str(r[key])
            ]
        finally:
            world.close()

    def replays(self, calls: list[CallSpec]) -> bool:
        try:
            self.world_after(calls).close()
        except EditError:
            return False
        return True

    def key_entity(self, tool: str, param: str) -> str | None:
        sig = self.sigs.get(tool)
        p = sig.param(param) if sig else None
        return p.vtype.removeprefix("key:") if p is not None and p.vtype.startswith("key:") else None


def user_text(spec: TaskSpec) -> str:
    i = spec.instruction
    return " ".join([spec.public_request, i.intent, *i.facts.values()])


def free_name(facts: dict[str, str], name: str, value: str) -> str:
    n, key = 1, name
    while key in facts and facts[key] != value:
        n += 1
        key = f"{name} ({n})"
    return key


def mention(text: str, noun: str, value: str) -> str | None:
    """The words naming `value` in `text`: "appointment APT-00003" when the noun precedes it, else the value."""
    for form in (f"{noun} {value}", f"{noun.capitalize()} {value}", value):
        if form in text:
            return form
    return None


DATE_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2})(.*)$")
SENTENCE_SPLIT = re.compile(r"(?<=[.!?)])\s+")
SENTENCE_END = re.compile(r"\.(?=\s+[A-Z(]|\s*$)")


MAX_SHIFT_DAYS = 60


def relative(current: Any, value: Any) -> tuple[str, str] | None:
    """`value` said against the record's `current` one, and the change as the value the user states:
    (`5.00 more than it is now`, `5.00`), (`3 days later than it is now`, `3 days`); None when they are
    not two numbers or two dates, or are equal."""
    if isinstance(current, bool) or isinstance(value, bool):
        return None
    if isinstance(current, int | float) and isinstance(value, int | float):
        d = value - current
        if d == 0 or current == 0 or abs(d) > abs(current):
            return None  # a change that is not an adjustment of the value there is no relative value
        amount = f"{abs(d):.2f}" if isinstance(value, float) or isinstance(current, float) else str(abs(d))
        return f"{amount} {'more' if d > 0 else 'less'} than it is now", amount
    if isinstance(current, str) and isinstance(value, str):
        a, b = DATE_PREFIX.match(current), DATE_PREFIX.match(value)
        if not (a and b) or a.group(2) != b.group(2):
            return None
        try:
            days = (date.fromisoformat(b.group(1)) - date.fromisoformat(a.group(1))).days
        except ValueError:
            return None
        if days == 0 or abs(days) > MAX_SHIFT_DAYS:
            return None
        unit = "day" if abs(days) == 1 else "days"
        return (
            f"{abs(days)} {unit} {'later' if days > 0 else 'earlier'} than it is now",
            f"{abs(days)} {unit}",
        )
    return None
