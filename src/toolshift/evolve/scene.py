"""What the structural operators stand on: a domain's schema and tools, fresh worlds at any point of a
ground-truth path, and small text helpers (fact names, mentions of a value, derived values)."""

from __future__ import annotations

import json
import random
import re
from datetime import date, timedelta
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


def derive(value: Any, rng: random.Random) -> str | None:
    """A short computation that gives `value`: for money and numbers, a half or a sum; for dates, a day count."""
    if isinstance(value, str):
        m = DATE_PREFIX.match(value)
        if not m:
            return None
        try:
            day = date.fromisoformat(m.group(1))
        except ValueError:
            return None
        n = rng.randint(2, 9)
        return f"{n} days after {(day - timedelta(days=n)).isoformat()}{m.group(2)}"
    if isinstance(value, float):
        if rng.random() < 0.5:
            return f"half of {value * 2:.2f}"
        d = float(rng.choice([5, 10, 15, 20]))
        return f"{value + d:.2f} minus {d:.2f}"
    if isinstance(value, int):
        d = rng.randint(1, 5)
        return f"{value - d} plus {d}" if value - d >= 0 else f"{value + d} minus {d}"
    return None
