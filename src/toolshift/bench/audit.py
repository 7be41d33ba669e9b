"""Audits of synthesised tasks: reordered creates, policy conflicts, duplicate Δgold, routed phrasing.

These are measuring instruments over a build (what `bench stats` reports and the tests assert),
independent of how synthesis made the tasks: each reads a task's gold path, facts and Δgold against
the domain's spec and seeded world.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from toolshift.bench.graph import ToolSignature, signatures
from toolshift.bench.instructions import row_value_text
from toolshift.models import RowChange, Task, covers
from toolshift.world.language.spec import DomainSpec
from toolshift.world.state.world import World


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# --- reordered creates -------------------------------------------------------------------------------


def call_dependencies(task: Task) -> dict[int, set[int]]:
    """Call index → the earlier calls it depends on: an argument value first returned by that call."""
    results = [_canon(c.result) for c in task.gold_path]
    out: dict[int, set[int]] = {}
    for j, call in enumerate(task.gold_path):
        deps: set[int] = set()
        for v in call.arguments.values():
            if isinstance(v, str) and v:
                token = json.dumps(v)
                first = next((i for i in range(j) if token in results[i]), None)
                if first is not None:
                    deps.add(first)
        out[j] = deps
    return out


@dataclass
class Reordering:
    """A task's gold path with two independent row-creating writes in the other order."""

    order: list[int]
    """Gold call indices in the new order."""
    first: int
    second: int
    same_table: bool
    """Both writes create rows of one table (their generated keys trade places)."""


def reordered_creates(task: Task, world: World) -> Reordering | None:
    """The first pair of row-creating writes that can run in the other order with every call succeeding.

    The later write moves before the earlier one together with the reads it depends on; a pair is
    independent when the later write's dependency closure does not contain the earlier write.
    `world` must be fresh; it is left as it was.
    """
    base = world.snapshot()
    creates: list[int] = []
    tables: dict[int, set[str]] = {}
    for i, call in enumerate(task.gold_path):
        res = world.call(call.tool, call.arguments)
        made = {c.table for c in res.changes if c.op == "insert"} if res.ok else set()
        if made:
            creates.append(i)
            tables[i] = made
    world.restore(base)
    deps = call_dependencies(task)
    try:
        for a, i in enumerate(creates):
            for j in creates[a + 1 :]:
                closure, stack = set(), [j]
                while stack:
                    x = stack.pop()
                    if x not in closure:
                        closure.add(x)
                        stack += [y for y in deps[x] if y > i]
                if i in closure:
                    continue
                order = [
                    *range(i),
                    *sorted(closure),
                    *(k for k in range(i, len(task.gold_path)) if k not in closure),
                ]
                ok = all(world.call(task.gold_path[k].tool, task.gold_path[k].arguments).ok for k in order)
                world.restore(base)
                if ok:
                    return Reordering(order, i, j, bool(tables[i] & tables[j]))
        return None
    finally:
        world.restore(base)


def replay_order(task: Task, world: World, order: list[int]) -> list[RowChange]:
    """The diff of running the gold calls in `order` on `world` (fresh; restored afterwards)."""
    base = world.snapshot()
    for k in order:
        world.call(task.gold_path[k].tool, task.gold_path[k].arguments)
    diff = world.diff(base)
    world.restore(base)
    return diff


# --- duplicate Δgold ---------------------------------------------------------------------------------


def delta_signature(task: Task) -> str:
    """A hash of Δgold with created rows' keys and generated values blanked: equal for tasks whose Δgold
    are the same up to a renaming (a necessary condition; `duplicate_groups` confirms with the judge)."""
    created = {c.key for c in task.expected_changes if c.op == "insert"}
    blank = created | set(task.generated_values)

    def norm(v: Any) -> Any:
        return "<generated>" if isinstance(v, str) and v in blank else v

    rows = sorted(
        _canon([c.table, norm(c.key), c.field, c.op, norm(c.before), norm(c.after)])
        for c in task.expected_changes
    )
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def same_delta(a: Task, b: Task) -> bool:
    """Δgold of `a` and `b` are equal up to a renaming of generated values (each covers the other)."""
    return covers(a.expected_changes, b.expected_changes, generated=b.generated_values) and covers(
        b.expected_changes, a.expected_changes, generated=a.generated_values
    )


def duplicate_groups(tasks: Iterable[Task]) -> list[list[Task]]:
    """Groups of two or more tasks of one domain whose Δgold are the same up to renaming."""
    buckets: dict[tuple[str, str], list[Task]] = defaultdict(list)
    for t in tasks:
        buckets[(t.domain, delta_signature(t))].append(t)
    groups: list[list[Task]] = []
    for bucket in buckets.values():
        rest = list(bucket)
        while rest:
            head, rest = rest[0], rest[1:]
            same = [t for t in rest if same_delta(head, t)]
            if same:
                groups.append([head, *same])
                rest = [t for t in rest if t not in same]
    return groups


# --- policy: rows named by the identifiers the domain accepts ----------------------------------------


class TaskReader:
    """Reads tasks of one domain against its spec and seeded rows (the state every task starts from)."""

    def __init__(self, world: World) -> None:
        self.spec: DomainSpec = world.domain.spec
        self.sigs: dict[str, ToolSignature] = signatures(world.tools, self.spec)
        self.ent = {e.name: e for e in self.spec.entities}
        self.world = world

    def row(self, entity: str, key: str) -> dict[str, Any] | None:
        return self.world.runtime.get(entity, key)

    def identifiers(self, entity: str, row: dict[str, Any]) -> set[str]:
        """The row's values under its entity's accepted identifiers (`lookup`), as a user writes them."""
        return {row_value_text(row[f]) for f in self.ent[entity].lookup if row.get(f) not in (None, "")}

    def named_rows(self, task: Task) -> list[tuple[int, str, str, str]]:
        """Every use of a row as a key argument, in order: (call index, entity, key, how the agent got it).

        `how` is `user` (the user states the key), `search:<fields>` (found by the user's values),
        `listing` (picked from a list of its own entity), `routed` (reached through another record: a
        relation traversal or another row's foreign key) or `created` (the task made it). A row used by
        several calls has one entry per call.
        """
        facts = set(task.instruction.facts.values())
        results = [_canon(c.result) for c in task.gold_path]
        out: list[tuple[int, str, str, str]] = []
        for i, call in enumerate(task.gold_path):
            sig = self.sigs.get(call.tool)
            if sig is None:
                continue
            for p in sig.params:
                v = call.arguments.get(p.name)
                if not p.vtype.startswith("key:") or v in (None, ""):
                    continue
                entity, key = p.vtype.removeprefix("key:"), str(v)
                token = json.dumps(key)
                sources = [k for k in range(i) if token in results[k]]
                # the read that looked the row up itself, if any; else the first record that showed it
                own = [k for k in sources if self._reads_own(task.gold_path[k].tool, entity)]
                source = (own or sources or [None])[0]
                if self.row(entity, key) is None:
                    how = "created"
                elif key in facts:
                    how = "user"
                elif source is None:
                    how = "unknown"
                else:
                    how = self._how(task, source, entity, facts)
                out.append((i, entity, key, how))
        return out

    def row_uses(self, task: Task) -> dict[tuple[str, str], tuple[set[str], bool]]:
        """(entity, key) → (how its uses got it, whether a write takes it)."""
        writes = {i for i, c in enumerate(task.gold_path) if self.sigs[c.tool].effect == "write"}
        out: dict[tuple[str, str], tuple[set[str], bool]] = {}
        for i, entity, key, how in self.named_rows(task):
            hows, taken = out.get((entity, key), (set(), False))
            out[(entity, key)] = (hows | {how}, taken or i in writes)
        return out

    def _reads_own(self, tool: str, entity: str) -> bool:
        sig = self.sigs.get(tool)
        return sig is not None and sig.effect == "read" and sig.kind != "relation" and sig.rows_of == entity

    def _how(self, task: Task, source: int, entity: str, facts: set[str]) -> str:
        call = task.gold_path[source]
        sig = self.sigs[call.tool]
        if sig.kind == "relation" or sig.rows_of != entity:
            return "routed"
        if sig.kind == "search":
            given = [n for n, v in call.arguments.items() if row_value_text(v) in facts]
            return "search:" + ",".join(sorted(given))
        if sig.kind == "list":
            return "listing"
        return "routed"  # a get whose key the user did not state re-reads a row reached otherwise

    def repeated_keys(self, task: Task) -> set[str]:
        """Keys of rows a repeated write handles as a group ("every open ticket of …"), not one by one."""
        by_shape: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for call in task.gold_path:
            sig = self.sigs.get(call.tool)
            if sig is not None and sig.effect == "write" and sig.key_params:
                by_shape[call.tool].append(call.arguments)
        out: set[str] = set()
        for tool, calls in by_shape.items():
            if len(calls) < 2:
                continue
            anchor = self.sigs[tool].key_params[0].name
            out |= {str(a.get(anchor)) for a in calls}
        return out

    def policy_conflicts(self, task: Task) -> list[str]:
        """Rows the user names by something other than an identifier the domain accepts (its `lookup`).

        A row of an entity with accepted identifiers that the agent finds from a user's value — used
        as its key, as a search filter, or to pick it from a listing — must be named by one of them,
        and so must such a row that a write takes even when the agent reaches it through another
        record ("the employee on payslip …" leaves a policy-following agent asking for an identifier
        the user does not hold). Rows the task creates and rows a repeated write handles as a group
        ("every open ticket of …") are not named one by one and are not checked. A row used several
        times is fine when one use names it by an accepted identifier.
        """
        facts = set(task.instruction.facts.values())
        group = self.repeated_keys(task)
        out: list[str] = []
        for (entity, key), (hows, taken) in self.row_uses(task).items():
            e = self.ent[entity]
            if not e.lookup or "created" in hows or key in group:
                continue
            row = self.row(entity, key) or {}
            named = hows - {"routed", "unknown"}
            if not named and not taken:
                continue  # only read on the way to another row
            accepted = bool(self.identifiers(entity, row) & facts)
            ok = any(
                (h == "user" and e.key in e.lookup)
                or (
                    h.startswith("search:")
                    and any(f in e.lookup for f in h.removeprefix("search:").split(","))
                )
                or (h == "listing" and accepted)
                for h in named
            ) or (not named and accepted)
            if ok:
                continue
            words = " or ".join(e.lookup)
            if not named:
                out.append(
                    f"{entity} {key} is reached through another record; the user never gives its {words}"
                )
            else:
                fields = sorted(f.name for f in e.fields if row_value_text(row.get(f.name)) in facts)
                out.append(
                    f"{entity} {key} is named by {', '.join(fields) or '/'.join(sorted(named))}, not by {words}"
                )
        return out

    def direct_identifiers(self, entity: str) -> set[str]:
        """The identifiers of `entity` some read looks a row up by: its get (when the key is one), a
        search filter, or a listing a user can pick from."""
        e = self.ent[entity]
        out: set[str] = set()
        for s in self.sigs.values():
            if s.effect != "read" or s.rows_of != entity or s.kind == "relation":
                continue
            if s.kind == "get" and e.key in e.lookup:
                out.add(e.key)
            elif s.kind == "search":
                out |= {p.name for p in s.params if p.name in e.lookup}
            elif s.kind == "list" and s.query_start:
                out |= set(e.lookup)
        return out

    def routed_despite_identifier(self, task: Task) -> list[str]:
        """Rows only ever reached through another record although the user states one of the row's own
        identifiers and a read finds the row by it ("the opportunity of … whose opportunity number is …")."""
        facts = set(task.instruction.facts.values())
        out = []
        for (entity, key), (hows, _) in self.row_uses(task).items():
            if hows != {"routed"}:
                continue
            row = self.row(entity, key) or {}
            for f in self.direct_identifiers(entity):
                v = row.get(f)
                # a read by this identifier finds the row itself only when no other row shares the value
                if v not in (None, "") and row_value_text(v) in facts and self._unique(entity, f, v):
                    out.append(f"{entity} {key}")
                    break
        return out

    def _unique(self, entity: str, field: str, value: Any) -> bool:
        return self.world.runtime.count(entity, **{field: value}) == 1

    def routed(self, task: Task) -> list[str]:
        """Rows the writes take that the agent only ever reaches through another record."""
        return [
            f"{e} {k}"
            for (e, k), (hows, taken) in self.row_uses(task).items()
            if taken and hows == {"routed"}
        ]
