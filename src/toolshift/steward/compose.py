"""Composing plans no stored plan holds: atomic skills chained and adapted to the catalog's input schemas.

A request whose workflow no training episode showed has no planning skill that fits the user's facts,
but the atomic skills distilled from other workflows often cover every tool it needs. The composer
builds a plan from them, model-free:

* the first part is a self-contained atomic skill (no input taken from an earlier result: it starts
  from the user's facts), the most relevant to the request among those whose facts the user gave;
* while facts remain unused, the part (planning or atomic skill of the domain) using the most of them
  follows, its inputs taken by name from earlier results;
* a part is adapted to the facts at hand by its tools' input schemas: a fact the user gave that names
  an argument of the part's write tool (`rating` → `rating`, `supplier vat number` → `vat_number`) is
  bound to it; after earlier steps, a required key argument (`…_id`) bound to a fact the user did not
  give is taken by name from their results instead (and a lookup by that fact dropped); an update of a record (a
  write whose required arguments include a key) leaves out a field bound to a fact the user did not
  give, while any other part that sets what the user did not say is another workflow and is not used.

Composed plans are marked (`body.composed`, ids starting `composed-`) and validated against the
current catalog (every tool present, every required argument bound) before they are supplied; a
successful training episode of the same workflow is distilled into a learned plan as any other.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from toolshift.steward.catalog import Catalog, arg_roots
from toolshift.steward.library import Skill

_WORD = re.compile(r"[a-z0-9]+")


def _facts(s: Skill) -> set[str]:
    return set(s.body.get("facts", []))


def _calls(s: Skill) -> list[dict[str, Any]]:
    return list(s.body.get("steps", s.body.get("calls", [])))


def self_contained(s: Skill) -> bool:
    """No argument of the skill comes from outside it (an atomic skill's `input`)."""
    return not any("input" in b for c in _calls(s) for b in c.get("args", {}).values())


def fact_argument(fact: str, properties: dict[str, Any]) -> str | None:
    """The argument a fact's name names: every word of the argument's name is a word of the fact's name
    (the most words wins; a tie names none)."""
    words = set(_WORD.findall(fact.lower()))
    scored = sorted(
        ((len(p.split("_")), p) for p in properties if set(p.lower().split("_")) <= words), reverse=True
    )
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return None
    return scored[0][1]


def is_key(name: str, schema: Any) -> bool:
    """An argument that identifies a record (`…_id`, `…_ref`, or described as a key): the one value an
    earlier lookup's results may stand in for."""
    described = isinstance(schema, dict) and "key" in str(schema.get("description", "")).lower()
    return name.endswith(("_id", "_ref")) or described


def adapt(
    part: Skill, have: set[str], rest: set[str], catalog: Catalog, *, after: bool = False
) -> Skill | None:
    """The part rebound to the facts at hand by its tools' schemas; None if a required argument stays
    bound to a fact the user did not give. A part that follows earlier steps (`after`) may instead
    take such an argument by name from their results, and drops a lookup it then no longer needs."""
    calls: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    changed = False
    for k, call in enumerate(_calls(part)):
        tool = catalog.tools.get(call["tool"])
        if tool is None:
            return None
        props = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        args: dict[str, Any] = {}
        missing_lookup = False
        for name, b in call.get("args", {}).items():
            if "fact" in b and b["fact"] not in have:
                changed = True
                if name not in required and any(is_key(r, props.get(r)) for r in required):
                    continue  # an update of a record: the field the user did not name is left as it is
                if name not in required or not after or not is_key(name, props.get(name)):
                    return None  # a part that sets what the user did not say is another workflow
                if tool.effect == "read":
                    missing_lookup = True
                args[name] = {"input": name}
            elif "step" in b and b["step"] not in index:
                changed = True
                args[name] = {"input": b["path"][-1] if b.get("path") else name}
            elif "step" in b:
                args[name] = {**b, "step": index[b["step"]]}
            else:
                args[name] = b
        if missing_lookup:
            continue  # a lookup by a fact the user lacks: its results come from the earlier steps instead
        if tool.effect != "read":
            bound = {b["fact"] for b in args.values() if "fact" in b}
            for fact in sorted(rest - bound):
                arg = fact_argument(fact, props)
                if arg is not None and arg not in args:
                    args[arg] = {"fact": fact}
                    changed = True
        index[k] = len(calls)
        calls.append({**call, "args": args})
    if not changed:
        return part
    if not calls:
        return None
    facts = {b["fact"] for c in calls for b in c["args"].values() if "fact" in b}
    facts |= {p for c in calls for b in c["args"].values() for p in b.get("where", {}).values()}
    key = "steps" if "steps" in part.body else "calls"
    digest = hashlib.sha256(repr((part.id, calls)).encode()).hexdigest()[:8]
    body = {**part.body, key: calls, "facts": sorted(facts), "adapted_from": part.id}
    tools = tuple(dict.fromkeys(c["tool"] for c in calls))
    return Skill(f"{part.id}~{digest}", part.level, part.domain, part.description, body, tools)


def open_arguments(part: Skill, catalog: Catalog) -> list[str]:
    """Optional arguments of the part's write tools it binds to nothing, as fact names to ask for
    (`note` → "note", `bank_account_last4` → "bank account last4")."""
    out = []
    for c in _calls(part):
        tool = catalog.tools.get(c["tool"])
        if tool is None or tool.effect == "read":
            continue
        required = set(tool.input_schema.get("required", []))
        for p in tool.input_schema.get("properties", {}):
            if p not in required and p not in c.get("args", {}):
                out.append(p.replace("_", " "))
    return out


def as_plan(part: Skill) -> Skill:
    """An atomic (or planning) skill as the first part of a composed plan."""
    steps = _calls(part)
    body = {
        "facts": sorted(_facts(part)),
        "steps": steps,
        "requests": list(part.body.get("requests", [])),
        "composed": True,
        "composed_of": [part.id],
        "steps_tools": [c["tool"] for c in steps],
    }
    return Skill(f"composed-{part.id}", "planning", part.domain, part.description, body, part.tools)


def valid(plan: Skill, catalog: Catalog) -> bool:
    """Every tool of the plan is in the catalog and every required argument of each step is bound."""
    for step in _calls(plan):
        tool = catalog.tools.get(step["tool"])
        if tool is None:
            return False
        if set(tool.input_schema.get("required", [])) - arg_roots(step.get("args", {})):
            return False
    return True


def providers(skills: list[Skill]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Which lookups feed which arguments, as the stored plans show it: argument name → (the read step
    that fed it, starting from the user's facts only; the binding into its result)."""
    out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for s in skills:
        steps = _calls(s)
        for step in steps:
            for name, b in step.get("args", {}).items():
                if "step" not in b or name in out or not 0 <= b["step"] < len(steps):
                    continue
                source = steps[b["step"]]
                if all("fact" in x or "value" in x for x in source.get("args", {}).values()):
                    out[name] = (source, b)
    return out


def grounded(part: Skill, feeds: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> Skill | None:
    """A part that takes inputs from earlier results, with the lookups that feed them put first (from
    `providers`); None when some input has no known lookup."""
    calls = _calls(part)
    inputs = sorted({b["input"] for c in calls for b in c.get("args", {}).values() if "input" in b})
    if not inputs or any(i not in feeds for i in inputs):
        return None
    heads: list[dict[str, Any]] = []
    where: dict[str, int] = {}
    for name in inputs:
        source, _ = feeds[name]
        if source not in heads:
            heads.append(source)
        where[name] = heads.index(source)
    moved = []
    for c in calls:
        args = {}
        for n, b in c.get("args", {}).items():
            if "input" in b:
                source, bind = feeds[b["input"]]
                args[n] = {**{k: v for k, v in bind.items() if k != "step"}, "step": where[b["input"]]}
            elif "step" in b:
                args[n] = {**b, "step": b["step"] + len(heads)}
            else:
                args[n] = b
        moved.append({**c, "args": args})
    steps = [*heads, *moved]
    facts = {b["fact"] for c in steps for b in c.get("args", {}).values() if "fact" in b}
    facts |= {p for c in steps for b in c.get("args", {}).values() for p in b.get("where", {}).values()}
    tools = tuple(dict.fromkeys([*(h["tool"] for h in heads), *part.tools]))
    key = "steps" if "steps" in part.body else "calls"
    body = {**part.body, key: steps, "facts": sorted(facts), "grounded_from": part.id}
    return Skill(f"{part.id}^", part.level, part.domain, part.description, body, tools)


def drop_steps(plan: Skill, drop: set[int], catalog: Catalog) -> Skill | None:
    """The plan without the steps `drop` (writes the request does not name) and the lookups that fed only
    them. A kept step bound to a dropped step's result takes that step's own binding of the same field
    (the record a write returned is the record it was given). None when a kept step needs what a dropped
    one returned otherwise, when no write would be left, or when the result is not valid against the
    catalog."""
    steps = [{**s, "args": {n: dict(b) for n, b in s.get("args", {}).items()}} for s in _calls(plan)]
    gone = set(drop)
    fed = {b["step"] for s in steps for b in s["args"].values() if "step" in b}
    for step in steps:  # resolve in order: a dropped step's own bindings are resolved already
        for name, b in list(step["args"].items()):
            if "step" in b and b["step"] in gone:
                field = b["path"][-1] if b.get("path") else name
                own = steps[b["step"]]["args"].get(field)
                if own is None:
                    return None  # what the dropped step returned feeds a kept one: it is part of the work
                step["args"][name] = dict(own)
    while True:  # a lookup that fed only dropped steps goes too
        used = {
            b["step"] for k, s in enumerate(steps) if k not in gone for b in s["args"].values() if "step" in b
        }
        idle = {
            k
            for k, s in enumerate(steps)
            if k not in gone and k in fed and k not in used
            and s["tool"] in catalog.tools and catalog.tools[s["tool"]].effect == "read"
        }  # fmt: skip
        if not idle:
            break
        gone |= idle
    index = {k: i for i, k in enumerate(k for k in range(len(steps)) if k not in gone)}
    kept = [
        {
            **s,
            "args": {
                n: ({**b, "step": index[b["step"]]} if "step" in b else b) for n, b in s["args"].items()
            },
        }
        for k, s in enumerate(steps)
        if k not in gone
    ]
    if not kept or not any(
        catalog.tools[s["tool"]].effect != "read" for s in kept if s["tool"] in catalog.tools
    ):
        return None
    facts = {b["fact"] for c in kept for b in c["args"].values() if "fact" in b}
    facts |= {p for c in kept for b in c["args"].values() for p in b.get("where", {}).values()}
    body = {**plan.body, "steps": kept, "facts": sorted(facts), "steps_tools": [c["tool"] for c in kept]}
    body["trimmed_from"] = plan.id
    tools = tuple(dict.fromkeys(c["tool"] for c in kept))
    out = Skill(
        f"{plan.id}-{'-'.join(map(str, sorted(gone)))}",
        "planning",
        plan.domain,
        plan.description,
        body,
        tools,
    )
    return out if valid(out, catalog) else None
