"""A task in the making: the steps, reaches and write intents of a draft, why one is rejected, the run's tally.

Synthesis (`bench.synthesis`) fills drafts; the instruction writer (`bench.instructions`) and the audits
read them. These records sit below all three so none of them imports another to name a draft.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Step:
    tool: str
    args: dict[str, Any]
    result: Any = None


@dataclass
class Reach:
    """How the agent gets to one row: the reads to make, what the user says, how the user names it."""

    steps: list[Step]
    facts: dict[str, str]
    phrase: str
    start: str | None
    rows: list[tuple[str, str, str]] = field(default_factory=list)
    """Every row the reads put in the agent's hands on the way, as (entity, key, phrase)."""
    sibling_fact: tuple[str, str] | None = None
    """For a row picked out of its parent's list: the (fact, value) that tells it from its siblings."""


@dataclass
class WriteIntent:
    """One change the task asks for, in words the user would use."""

    kind: str
    verb: str
    noun: str
    target: str
    details: list[tuple[str, str]]
    repeat: int = 1


@dataclass
class Draft:
    steps: list[Step] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    intents: list[WriteIntent] = field(default_factory=list)
    known: dict[tuple[str, str], str] = field(default_factory=dict)
    """(entity, key) → phrase, for rows the path has already put in the agent's hands."""
    sibling_facts: dict[tuple[str, str], str] = field(default_factory=dict)
    """(entity, key) → the name of the fact that tells that row from its siblings."""
    related: set[tuple[str, str]] = field(default_factory=set)
    """Rows with identifiers that rows of the path refer to: a spliced write may take one (the user then
    names it by its identifier), so the second change is about a record the first one touches."""
    spliced: bool = False
    repeated: int = 1


class Rejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class SynthesisReport:
    domain: str
    target: int
    made: int = 0
    attempts: int = 0
    rejections: Counter[str] = field(default_factory=Counter)
    candidates: Counter[str] = field(default_factory=Counter)
    """Why candidate rows for a write were passed over (the attempt itself may still succeed)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "target": self.target,
            "made": self.made,
            "attempts": self.attempts,
            "rejections": dict(sorted(self.rejections.items(), key=lambda kv: (-kv[1], kv[0]))),
            "candidates_passed_over": dict(sorted(self.candidates.items(), key=lambda kv: (-kv[1], kv[0]))),
        }


def stable_rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def add_fact(facts: dict[str, str], name: str, value: str) -> str:
    """Add a fact without overwriting a different value under the same name (`amount`, `amount (2)`)."""
    n, key = 1, name
    while key in facts and facts[key] != value:
        n += 1
        key = f"{name} ({n})"
    facts[key] = value
    return key
