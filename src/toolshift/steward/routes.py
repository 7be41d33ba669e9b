"""Lookup routes from the catalog when the library's route starts from a fact the user lacks (D192).

A stored plan finds an enrollment by listing a course session's enrollments, keyed by the session number
the user was asked for; this user knows the learner's email instead. The catalog holds the other route:
`lnd_search_learners` (searchable by `email`) → `lnd_list_learner_enrollments` (keyed by `learner_id`)
lists the same kind of record. `other_routes` builds such routes from the catalog's input schemas: for
the plan's list step bound to the missing fact, every other read of the domain listing the same records
by one key `<parent>_id`, preceded by the domain's search of `<parent>` records (a read whose name ends
in the parent's plural, requiring nothing); each route is asked for by the search's fields ("learner
email", "learner full name", …) and taken with the one the user gives. Nothing is read but the plan,
the catalog and the user's words.
"""

from __future__ import annotations

import re
from typing import Any

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import continues
from toolshift.steward.library import Skill

PAGING = frozenset({"limit", "offset", "page", "page_size", "cursor", "sort", "order"})
Route = tuple[str, list[dict[str, Any]]]
"""(the phrase the user answers, the plan's steps with the route in place of the missing fact's)."""


def _entity(tool: str) -> str:
    """The records a tool's name ends with, a version suffix left out (`lnd_search_learners_v2` → learners)."""
    words = [w for w in tool.split("_") if not re.fullmatch(r"v\d+", w)]
    return words[-1] if words else ""


def _searches(catalog: Catalog, domain: str, parent: str) -> list[CatalogTool]:
    """The domain's searches of `parent` records: reads requiring nothing, named `…_<parent>s`."""
    plural = {parent + "s", parent + "es", parent[:-1] + "ies" if parent.endswith("y") else parent + "s"}
    return [
        t
        for t in catalog.tools.values()
        if t.domain == domain and t.effect == "read" and not continues(t)
        and not t.input_schema.get("required") and _entity(t.name) in plural
    ]  # fmt: skip


def other_routes(steps: list[dict[str, Any]], fact: str, catalog: Catalog) -> list[Route]:
    """Routes to the records the plan lists by `fact` (which the user lacks), from the catalog: the list
    step replaced by a search of another parent and that parent's list of the same records, the reads
    bound to the fact dropped (none of whose results a kept step needs)."""
    bound = [
        k for k, st in enumerate(steps) if any(b.get("fact") == fact for b in st.get("args", {}).values())
    ]
    tools = [catalog.tools.get(steps[k]["tool"]) for k in bound]
    if not bound or any(t is None or t.effect != "read" for t in tools):
        return []
    lists = [k for k, t in zip(bound, tools, strict=True) if t is not None
             and (len(t.input_schema.get("required", [])) == 1 or "_then_" in t.name)
             and any("step" in b and b["step"] == k for st in steps for b in st.get("args", {}).values())]  # fmt: skip
    if not lists and len(bound) == 1:
        # the fact keys a search whose one record feeds the list (`rec_search_job_openings(req_number)` →
        # `rec_list_job_opening_applications(opening_id)`): the route replaces the search and the list
        feeds = [
            j
            for j, st in enumerate(steps)
            if any(b.get("step") == bound[0] for b in st.get("args", {}).values())
        ]
        fed = catalog.tools.get(steps[feeds[0]]["tool"]) if len(feeds) == 1 else None
        if fed is not None and fed.effect == "read" and len(fed.input_schema.get("required", [])) == 1:
            lists = feeds
    if len(lists) != 1:
        return []
    j = lists[0]
    listed = catalog.tools[steps[j]["tool"]]
    used = {
        b["step"]
        for k, st in enumerate(steps)
        if k not in bound and k != j
        for b in st.get("args", {}).values()
        if "step" in b
    }
    if (used & set(bound)) - {j}:
        return []  # a kept step needs what a dropped lookup returned
    out: list[Route] = []
    for alt in catalog.tools.values():
        required = alt.input_schema.get("required", [])
        if (alt.domain != listed.domain or alt.name == listed.name or alt.effect != "read" or continues(alt)
                or _entity(alt.name) != _entity(listed.name) or len(required) != 1
                or not required[0].endswith("_id")):  # fmt: skip
            continue
        key = required[0]
        parent = key[: -len("_id")]
        for search in _searches(catalog, alt.domain, parent.split("_")[-1]):
            for prop, schema in search.input_schema.get("properties", {}).items():
                if (
                    prop in PAGING
                    or prop.endswith("_id")
                    or (schema or {}).get("type") not in (None, "string")
                ):
                    continue
                phrase = " ".join([*parent.split("_"), *prop.split("_")])
                out.append((phrase, _replace(steps, bound, j, search, prop, alt, key, phrase)))
    return out[:8]


def _replace(
    steps: list[dict[str, Any]], bound: list[int], j: int, search: CatalogTool, prop: str,
    alt: CatalogTool, key: str, phrase: str,
) -> list[dict[str, Any]]:  # fmt: skip
    new: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    for k, st in enumerate(steps):
        if k == j:
            new.append({"tool": search.name, "args": {prop: {"fact": phrase}}, "each": False})
            pick = {"step": len(new) - 1, "path": ["items", "*", key], "where": {prop: phrase}}
            new.append({"tool": alt.name, "args": {key: pick}, "each": False})
            index[k] = len(new) - 1
        elif k not in bound:
            index[k] = len(new)
            new.append(st)
    out = []
    for st in new:
        args = {}
        for name, b in st.get("args", {}).items():
            if "step" in b and b["step"] in index and st.get("tool") != alt.name:
                path = b.get("path", [])
                if b["step"] == j and "*" in path:  # the list's own items (a merged lookup's last step's)
                    path = ["items", *path[path.index("*") :]]
                b = {**b, "step": index[b["step"]], "path": path}
            args[name] = b
        out.append({**st, "args": args})
    return out


def _plain(schema: Any) -> bool:
    """A field a user can state as a value: a string, number or enum, not an object or a list."""
    return not isinstance(schema, dict) or schema.get("type") in _PLAIN_TYPES


_PLAIN_TYPES = (None, "string", "integer", "number", "boolean")


def _feed(key: str, feeds: dict[str, Any]) -> str:
    """The stored lookups' input that feeds `key`: the same name, else the one input of the same record
    (`hire_ref_value` after renames, fed as `hire_id` or `hire_ref` by the same lookup); "" when none, or
    when lookups of different tools feed it."""
    if key in feeds:
        return key
    same = sorted(f for f in feeds if f.split("_")[0] == key.split("_")[0])
    return same[0] if same and len({feeds[f][0]["tool"] for f in same}) == 1 else ""


def catalog_write(
    domain: str,
    said: set[str],
    catalog: Catalog,
    feeds: dict[str, tuple[dict[str, Any], dict[str, Any]]],
) -> Skill | None:
    """A plan for a write no stored skill makes, from the catalog (D193): the domain's write tool the
    conversation names best (at most a quarter of its name's words unsaid, by name or description, a
    single best one) that takes one record key: the key of the record its name ends with, from the lookup
    stored plans show feeding it, else from the user's number for the record ("maintenance window
    number" for `noc_approve_maintenance_window(window_id)`); or, for a tool whose key is another
    record's (`onb_create_equipment_request(hire_id, item)`), from a stored lookup feeding that key, the
    other required fields, plain values, asked as facts under their own names (D233). None when no such
    tool stands out."""
    from toolshift.steward.compose import as_plan, grounded, is_key, valid
    from toolshift.steward.naming import unsaid

    options = []
    for t in catalog.tools.values():
        if (
            t.domain != domain
            or t.effect == "read"
            or continues(t)
            or "_start_" in t.name
            or "_then_" in t.name
        ):
            continue
        props = t.input_schema.get("properties", {})
        required = t.input_schema.get("required", [])
        keys = [r for r in required if is_key(r, props.get(r))]
        words = [w for w in t.name.split("_")[1:] if not re.fullmatch(r"v\d+", w)]
        if len(keys) != 1 or not words:
            continue
        # the record's key, named as the tool names its record (`…_window` ← `window_id`), alone; or
        # another record's key a stored lookup feeds, beside plain fields
        own = keys[0].rsplit("_", 1)[0].split("_")[-1] == words[-1]
        rest = [r for r in required if r != keys[0]]
        if (own and not rest) or (_feed(keys[0], feeds) and all(_plain(props.get(r)) for r in rest)):
            options.append((unsaid(t.name, said, catalog), t.name, keys[0]))
    options.sort()
    if not options or options[0][0] > 0.25 or (len(options) > 1 and options[1][0] == options[0][0]):
        return None
    share, name, key = options[0]
    tool = catalog.tools[name]
    args: dict[str, Any] = {}
    fed = _feed(key, feeds)
    if fed:
        args[key] = {"input": fed}
    else:
        words = [w for w in name.split("_")[2:] if not re.fullmatch(r"v\d+", w)]
        args[key] = {"fact": " ".join([*words, "number"])}
    for r in tool.input_schema.get("required", []):
        if r != key:
            args[r] = {"fact": r.replace("_", " ")}
    facts = sorted(b["fact"] for b in args.values() if "fact" in b)
    body = {"facts": facts, "calls": [{"tool": name, "args": args, "each": False}], "requests": []}
    part = Skill(f"atomic-catalog-{name}", "atomic", domain, tool.description, body, (name,))
    if fed:
        part = grounded(part, feeds)
    if part is None or not valid(part, catalog):
        return None
    plan = as_plan(part)
    plan.body["named"] = share  # the share of the tool's name the conversation leaves unsaid
    return plan


def lookup_alternatives(step: dict[str, Any], fact: str, tool: Any) -> list[tuple[str, str]]:
    """For a read step bound to a fact the user lacks: (phrase to ask, argument) for every other field its
    tool's schema searches by (`vendor number` missing at `ap_search_vendors` → "vendor name" → `name`, …).
    The phrase names the record as the missing fact did (its words before the argument's), else as the
    tool's name does (`…_search_vendors` → vendor)."""
    if tool is None or tool.effect != "read":
        return []
    arg = next((n for n, b in step.get("args", {}).items() if b.get("fact") == fact), None)
    if arg is None:
        return []
    # a merged tool's argument is one of a part's (`step1.unit_no`): its siblings are that part's fields
    part, _, own = arg.rpartition(".")
    props = tool.input_schema.get("properties", {})
    if part:
        props = props.get(part, {}).get("properties", {}) if isinstance(props.get(part), dict) else {}
    own_words = own.lower().split("_")
    entity = fact.lower().split()
    # the record's name is what precedes the argument's own words, a renamed argument's abbreviations
    # included (`unit_no` for "vehicle unit number")
    while entity and any(_abbreviates(a, entity[-1]) for a in own_words):
        entity.pop()
    if not entity:
        last = tool.name.split("_")[-1]
        entity = [last[:-1] if last.endswith("s") and not last.endswith("ss") else last]
    out = []
    for prop, schema in props.items():
        name = f"{part}.{prop}" if part else prop
        if prop == own or name in step.get("args", {}) or prop in PAGING:
            continue
        if isinstance(schema, dict) and schema.get("type") not in (None, "string", "integer", "number"):
            continue
        prop_words = prop.lower().split("_")
        phrase = " ".join(prop_words if prop_words[0] == entity[-1] else [*entity, *prop_words])
        out.append((phrase, name))
    return out[:8]


def _abbreviates(short: str, word: str) -> bool:
    """Is `short` the word or an abbreviation of it: its letters in order from the same first letter
    (`qty` quantity, `desc` description, `amt` amount), or "no" for number (the numero sign)?"""
    if short == word or (short, word) == ("no", "number"):
        return True
    if len(short) < 2 or len(short) >= len(word) or short[0] != word[0]:
        return False
    rest = iter(word)
    return all(c in rest for c in short)
