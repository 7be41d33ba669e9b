"""What an agent can know when it makes a call: the user's facts and the results of its earlier calls.

A call is *callable* at a point of a path when every argument value it needs is among the values
known there: a fact from the task's instruction (the user can say it) or a value in the result of
an earlier call of the same path. Values are compared as what they say, not how they are spelled:
a fact "11649.70" is the number 11649.7, "no" is false, and a result read in a declared output
format counts in that format and decoded (a DD/MM/YYYY date is also its ISO date, a money object's
"12.50" also the number 12.5, and "lab supplies" the enum value `lab_supplies`).

This decides which merges an agent can use: a merged call takes every step's arguments up front, so
on a block of a task it is usable only when no later step needs a value that only an earlier step of
the same call returns (`TaskKnowledge.block_usable`). Reference paths use a merge only where it is
usable, and `unknown_arguments` checks a whole replayed path call by call.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from typing import Any

from toolshift.models import Task
from toolshift.world.state.compiler import PAGING

Token = tuple[str, Any]
"""A value as it is compared: ("s", text), ("n", float) or ("b", bool)."""

_DMY = re.compile(r"^(\d{2})/(\d{2})/(\d{4})(?: (\d{2}:\d{2}(?::\d{2})?))?$")
_YES, _NO = ("yes", "true"), ("no", "false")
_WORDS = re.compile(r"[a-z]+(?: [a-z0-9]+)+")
"""Lower-case words as a person says an enum value: "lab supplies" is `lab_supplies` (bench instructions)."""


def _agent_chosen(schema: dict[str, Any] | None) -> bool:
    """A paging parameter: the agent picks its page size and position itself."""
    if not schema:
        return False
    return any(
        schema.get("type") == p["type"] and schema.get("description") == p["description"]
        for p in PAGING.values()
    )


def _leaves(value: Any, path: str = "", schema: dict[str, Any] | None = None) -> Iterator[tuple[str, Any]]:
    """Scalar leaves of a JSON value with their paths; with the value's schema, paging parameters are skipped."""
    if isinstance(value, dict):
        props = (schema or {}).get("properties", {})
        for k, v in value.items():
            sub = props.get(k)
            if _agent_chosen(sub):
                continue
            yield from _leaves(v, f"{path}.{k}" if path else str(k), sub)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    elif value is not None:
        yield path, value


def exact_token(value: Any) -> Token:
    """How a needed argument value is compared."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", float(value))
    return ("s", str(value))


def readings(value: Any) -> set[Token]:
    """Every token a known scalar can stand for (a string may also be a number, a flag or a date)."""
    out = {exact_token(value)}
    if isinstance(value, str):
        text = value.strip()
        with contextlib.suppress(ValueError):
            out.add(("n", float(text)))
        if text.lower() in _YES:
            out.add(("b", True))
        elif text.lower() in _NO:
            out.add(("b", False))
        if m := _DMY.match(text):
            out.add(("s", f"{m[3]}-{m[2]}-{m[1]}" + (f"T{m[4]}" if m[4] else "")))
        if _WORDS.fullmatch(text):
            out.add(("s", text.replace(" ", "_")))
    return out


def known_from(values: Iterable[Any]) -> set[Token]:
    """The tokens known from JSON values (facts, results): every leaf, in every reading."""
    out: set[Token] = set()
    for value in values:
        for _, leaf in _leaves(value):
            out |= readings(leaf)
    return out


def facts_known(task: Task) -> set[Token]:
    return known_from(task.instruction.facts.values())


def unknown_arguments(
    args: dict[str, Any], known: set[Token], schema: dict[str, Any] | None = None
) -> list[str]:
    """Paths of the argument values not in `known` (empty: the call is callable). Given the tool's
    input schema, paging parameters are left out."""
    return [path for path, leaf in _leaves(args, schema=schema) if exact_token(leaf) not in known]


class TaskKnowledge:
    """For one task: what is known before each gold call, from its facts and the gold results before it.

    `schemas` (tool name → input schema of the v1 tools) lets paging parameters be left out.
    """

    def __init__(self, task: Task, schemas: dict[str, dict[str, Any]] | None = None) -> None:
        self.task = task
        self.facts = facts_known(task)
        schemas = schemas or {}
        self._produced = [known_from([c.result]) for c in task.gold_path]
        self._needed = [
            {exact_token(v) for _, v in _leaves(c.arguments, schema=schemas.get(c.tool))}
            for c in task.gold_path
        ]
        self.before: list[set[Token]] = []
        known = set(self.facts)
        for produced in self._produced:
            self.before.append(set(known))
            known |= produced
        self.before.append(known)

    def block_usable(self, start: int, end: int) -> bool:
        """Can one call perform gold calls `start:end` with only what is known before `start`?

        False when a later call of the block needs a value that first appears in the result of an
        earlier call of the same block (the user does not know it and no earlier call returned it).
        Values known nowhere are not the block's doing and do not count against it.
        """
        if end > len(self.task.gold_path):
            return False
        outside = self.before[start]
        inside: set[Token] = set()
        for k in range(start, end):
            if k > start and (self._needed[k] & inside) - outside:
                return False
            inside |= self._produced[k]
        return True
