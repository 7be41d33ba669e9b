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

from typing import Any

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import continues

_PAGING = frozenset({"limit", "offset", "page", "page_size", "cursor", "sort", "order"})
Route = tuple[str, list[dict[str, Any]]]
"""(the phrase the user answers, the plan's steps with the route in place of the missing fact's)."""


def _entity(tool: str) -> str:
    return tool.split("_")[-1]


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
    lists = [k for k, t in zip(bound, tools, strict=True) if t is not None and len(t.input_schema.get("required", [])) == 1
             and any("step" in b and b["step"] == k for st in steps for b in st.get("args", {}).values())]  # fmt: skip
    if len(lists) != 1:
        return []
    j = lists[0]
    listed = catalog.tools[steps[j]["tool"]]
    used = {
        b["step"]
        for k, st in enumerate(steps)
        if k not in bound
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
                    prop in _PAGING
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
                b = {**b, "step": index[b["step"]]}
            args[name] = b
        out.append({**st, "args": args})
    return out
