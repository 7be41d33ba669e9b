"""A fact named twice in one request ("capa number", "capa number (2)") bound by the request's clause order (D194).

A request of two parts that both name a field gives the later part's value under the name with " (2)"
("close capa CA-26-0090; then … a new capa … (capa number: CA-26-0695)"). A stored plan's bindings carry
the order of its own training request, and a composed plan's parts need not run in the request's order,
so neither says which value is whose. The clause each write step serves does: the clause of the
conversation that names the step's tool best (a lookup serves the write after it). A step binding the
fact in the n-th of the clauses that use it takes the n-th value, when the user gave it.
"""

from __future__ import annotations

import re
from typing import Any

from toolshift.steward.catalog import Catalog
from toolshift.steward.distill import continues
from toolshift.steward.retrieval import tokens

_NTH = re.compile(r"^(.*) \((\d+)\)$")


def base(fact: str) -> str:
    m = _NTH.match(fact)
    return m.group(1) if m else fact


def step_clauses(steps: list[dict[str, Any]], parts: list[str], catalog: Catalog) -> list[int]:
    """For each step, the index of the clause it serves."""
    from toolshift.steward.naming import said_of, unsaid

    said = [said_of(p) for p in parts]
    out: list[int | None] = []
    for st in steps:
        t = catalog.tools.get(st["tool"])
        if t is None or t.effect == "read" or continues(t):
            out.append(None)
        else:
            out.append(min(range(len(said)), key=lambda i: (unsaid(st["tool"], said[i], catalog), i)))
    after = None
    for k in range(len(out) - 1, -1, -1):  # a lookup or a later call serves the next write's clause
        after = out[k] if out[k] is not None else after
        out[k] = out[k] if out[k] is not None else after
    last = 0
    for k, c in enumerate(out):  # steps after the last write: its clause
        last = c if c is not None else last
        out[k] = last
    return [c if c is not None else 0 for c in out]


def by_clause(
    steps: list[dict[str, Any]], parts: list[str], facts: dict[str, str], catalog: Catalog
) -> list[dict[str, Any]]:
    """The steps with each fact used in several clauses bound to the value of the step's clause's turn
    (the first clause using it: the plain name; the next: " (2)"), where the user gave that value."""
    if len(parts) < 2:
        return steps
    where = step_clauses(steps, parts, catalog)
    users: dict[str, set[int]] = {}
    for k, st in enumerate(steps):
        for b in st.get("args", {}).values():
            for f in [b["fact"]] if "fact" in b else list(b.get("where", {}).values()):
                users.setdefault(base(f), set()).add(where[k])

    def nth(f: str, k: int) -> str:
        order = sorted(users.get(base(f), set()))
        if len(order) < 2:
            return f
        n = order.index(where[k])
        name = base(f) if n == 0 else f"{base(f)} ({n + 1})"
        return name if name in facts else f

    out = []
    for k, st in enumerate(steps):
        args = {}
        for name, b in st.get("args", {}).items():
            if "fact" in b:
                b = {**b, "fact": nth(b["fact"], k)}
            elif b.get("where"):
                b = {**b, "where": {fl: nth(p, k) for fl, p in b["where"].items()}}
            args[name] = b
        out.append({**st, "args": args})
    return out


def unnamed_keys(steps: list[dict[str, Any]], parts: list[str], catalog: Catalog) -> list[dict[str, Any]]:
    """The steps without the optional record keys a write takes from an earlier result while the clause
    it serves never names that record (D199): a stored plan's expense report took the cancelled trip's
    `trip_id` because its training request said "trip: TRIP-00017"; "a new expense report … (report
    number: EXP-00500)" names no trip, so the report is made without one."""
    from toolshift.steward.compose import is_key

    if not parts:  # no clause known (a plan handed over the wire, `toolshift.loop.instrument`): none to read
        return steps
    where = step_clauses(steps, parts, catalog)
    out = []
    for k, st in enumerate(steps):
        t = catalog.tools.get(st["tool"])
        if t is None or t.effect == "read" or continues(t):
            out.append(st)
            continue
        said = set(tokens(parts[where[k]]))
        props = t.input_schema.get("properties", {})
        required = set(t.input_schema.get("required", []))
        args = {
            name: b
            for name, b in st.get("args", {}).items()
            if "step" not in b
            or "." in name  # a merged tool's part: its own schema says what it requires
            or name in required
            or not is_key(name, props.get(name))
            or set(tokens(re.sub(r"_(id|ref)$", "", name))) <= said
        }
        out.append({**st, "args": args})
    return out
