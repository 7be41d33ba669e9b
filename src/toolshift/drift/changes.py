"""What changed between two published versions of a server's catalog, and which kind of change each is.

Per transition: tool names **added**, **retired**, and **modified** in place (same name, a changed description,
input or output schema, or annotations) — the counts of the seed's Table 3. Each change is then classified
(D362), from names, schemas and descriptions only (behaviour is judged by the tasks, `toolshift.drift.tasks`):

- a retired and an added tool are a **rename** when their input schemas are the same and take two or more
  parameters (`schema`: one shared `repo_path` says nothing), or when their names are one name in another spelling
  (`read-query` → `read_query`: `spelling`); each pairs at most once;
- two or more retired tools whose parameters one added tool takes together are a **merge**, and one retired
  tool whose parameters two or more added tools share out among themselves a **split** (a person should
  confirm both: parameters coincide by name);
- an added tool with the input schema of a tool the version keeps and two of its name's words is an
  **overlap** (a successor beside its source: `read_text_file` beside `read_file`); a kept tool whose description starts saying it is deprecated is **deprecated** (callable still),
  with the successor it names;
- otherwise an added tool is **new** and a retired one is **retired** (a capability gone, unless a task shows
  another path to it);
- a modified tool's changes, each counted: parameter added (optional or required), removed, renamed (one
  removed and one added with the same schema), retyped, constrained (enum, bounds, pattern, default, items),
  made required or optional, documented (a parameter's description); the tool's description; annotations;
  output schema added or changed; JSON Schema dialect (`$schema`, `additionalProperties`: the SDK's output,
  not the author's).

Where the seed's transformations have a counterpart, `SEED_CLASS` names it; the rest are what real drift
does that the seed's capability-preserving transformations never do.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from toolshift.drift.history import VersionListing

SEED_CLASS: dict[str, str] = {
    "rename": "rename (tool)",
    "param_renamed": "rename (parameter)",
    "param_added_optional": "add parameter",
    "param_added_required": "add parameter",
    "output_schema_added": "change format",
    "output_schema_changed": "change format",
    "split": "split",
    "merge": "merge",
    "overlap": "overlap (source kept)",
    "retired": "retire",
    "description": "noisy documentation",
    "param_documented": "noisy documentation",
}
"""The seed's transformation (its §3.2) each real change class corresponds to; classes absent here it never makes."""

DIALECT_KEYS = ("$schema", "additionalProperties")
CONSTRAINT_KEYS = (
    "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems",
    "minLength", "maxLength", "pattern", "default", "items", "format", "const",
)  # fmt: skip
DEPRECATED = re.compile(r"\bdeprecated\b", re.IGNORECASE)
SUCCESSOR = re.compile(r"\b(?:use|instead[,:]? use|replaced by|superseded by)\s+`?([A-Za-z0-9_-]+)`?", re.I)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def spelling(name: str) -> str:
    """A name in one spelling: camelCase, hyphens and underscores alike, lower case."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return re.sub(r"[-_\s]+", "_", snake).lower()


def interface(tool: dict[str, Any]) -> str:
    """The input schema without documentation or dialect: what a call must look like."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("description", "title", *DIALECT_KEYS)}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return _canon(strip(tool.get("inputSchema") or {}))


def props(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema") or {}
    found = schema.get("properties") if isinstance(schema, dict) else None
    return found if isinstance(found, dict) else {}


def required(tool: dict[str, Any]) -> set[str]:
    schema = tool.get("inputSchema") or {}
    return set(schema.get("required") or []) if isinstance(schema, dict) else set()


def _param_type(p: Any) -> Any:
    return p.get("type") if isinstance(p, dict) else None


def _constraints(p: Any) -> str:
    return _canon({k: p.get(k) for k in CONSTRAINT_KEYS if isinstance(p, dict) and k in p})


def _undocumented(p: Any) -> str:
    if not isinstance(p, dict):
        return _canon(p)
    return _canon({k: v for k, v in p.items() if k not in ("description", "title")})


def tool_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The classes of change between two listings of one tool (empty when it is unchanged)."""
    out: list[str] = []
    po, pn = props(old), props(new)
    ro, rn = required(old), required(new)
    gone, came = [p for p in po if p not in pn], [p for p in pn if p not in po]
    for p in list(gone):
        twin = [q for q in came if _undocumented(pn[q]) == _undocumented(po[p])]
        if len(twin) == 1:
            out.append("param_renamed")
            gone.remove(p)
            came.remove(twin[0])
    out += ["param_removed"] * len(gone)
    out += ["param_added_required" if p in rn else "param_added_optional" for p in came]
    for p in po:
        if p not in pn:
            continue
        if _param_type(po[p]) != _param_type(pn[p]):
            out.append("param_retyped")
        if _constraints(po[p]) != _constraints(pn[p]):
            out.append("param_constrained")
        if (po[p] or {}).get("description") != (pn[p] or {}).get("description"):
            out.append("param_documented")
        if (p in ro) != (p in rn):
            out.append("param_required" if p in rn else "param_optional")
    if (old.get("description") or "") != (new.get("description") or ""):
        became = DEPRECATED.search(new.get("description") or "") and not DEPRECATED.search(
            old.get("description") or ""
        )
        out.append("deprecated" if became else "description")
    if _canon(old.get("annotations")) != _canon(new.get("annotations")):
        out.append("annotations")
    if old.get("outputSchema") != new.get("outputSchema"):
        out.append("output_schema_added" if old.get("outputSchema") is None else "output_schema_changed")
    so, sn = old.get("inputSchema") or {}, new.get("inputSchema") or {}
    if any(so.get(k) != sn.get(k) for k in DIALECT_KEYS):
        out.append("schema_dialect")
    return out


@dataclass
class Transition:
    """One server's change from one listed version to the next."""

    server: str
    before: str
    after: str
    tools_before: int
    tools_after: int
    added: list[str]
    retired: list[str]
    modified: list[str]
    events: list[tuple[str, str]] = field(default_factory=list)
    """(class, what): one per tool-level event and per change inside a modified tool."""
    confirm: list[str] = field(default_factory=list)
    """Decisions a person should confirm (renames by one signal only, splits, merges)."""

    def counts(self) -> Counter[str]:
        return Counter(kind for kind, _ in self.events)

    @property
    def schema_modified(self) -> list[str]:
        """Modified tools whose interface (what a call must look like) changed, beside doc-only changes."""
        return [
            n
            for n, kinds in self._modified_kinds().items()
            if any(k.startswith("param_") and k != "param_documented" for k in kinds)
        ]

    def _modified_kinds(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for kind, what in self.events:
            name = what.split(":", 1)[0]
            if name in self.modified:
                out.setdefault(name, []).append(kind)
        return out


def _apart(parts: list[set[str]], whole: set[str]) -> bool:
    """Parameter sets that together make `whole` and each bring one no other part has (a merge's sources, a
    split's parts); tools that share one argument (`repo_path`) and nothing else are no merge."""
    if set().union(*parts) != whole:
        return False
    return all(p - set().union(*(q for j, q in enumerate(parts) if j != i)) for i, p in enumerate(parts))


def transition(server: str, old: VersionListing, new: VersionListing) -> Transition:
    names_o, names_n = old.names(), new.names()
    added = [n for n in names_n if n not in names_o]
    retired = [n for n in names_o if n not in names_n]
    modified = []
    t = Transition(server, old.version, new.version, len(names_o), len(names_n), added, retired, modified)
    for name in names_n:
        if name in names_o:
            kinds = tool_changes(old.tool(name) or {}, new.tool(name) or {})
            if kinds:
                modified.append(name)
                t.events += [(k, f"{name}: {k}") for k in kinds]
                if "deprecated" in kinds:
                    successor = SUCCESSOR.search((new.tool(name) or {}).get("description") or "")
                    if successor:
                        t.events.append(("deprecated_successor", f"{name} → {successor.group(1)}"))
    free_old, free_new = list(retired), list(added)
    # renames: the same input schema, else the same name in another spelling
    for o in list(free_old):
        by_schema = [
            a
            for a in free_new
            if interface(new.tool(a) or {}) == interface(old.tool(o) or {})
            and len(props(old.tool(o) or {})) >= 2
        ]
        by_name = [a for a in free_new if spelling(a) == spelling(o)]
        pick = by_name if len(by_name) == 1 else by_schema if len(by_schema) == 1 else []
        if pick:
            a = pick[0]
            same = interface(new.tool(a) or {}) == interface(old.tool(o) or {})
            signal = (
                "spelling and schema" if a in by_name and same else "spelling" if a in by_name else "schema"
            )
            t.events.append(("rename", f"{o} → {a} ({signal})"))
            if signal != "spelling and schema":
                t.confirm.append(f"{server} {old.version} → {new.version}: rename {o} → {a} by {signal} only")
            free_old.remove(o)
            free_new.remove(a)
    # merges: one added tool taking the parameters of two or more retired ones
    for a in list(free_new):
        pa = set(props(new.tool(a) or {}))
        parts = [o for o in free_old if props(old.tool(o) or {}) and set(props(old.tool(o) or {})) <= pa]
        if len(parts) >= 2 and _apart([set(props(old.tool(o) or {})) for o in parts], pa):
            t.events.append(("merge", f"{' + '.join(parts)} → {a}"))
            t.confirm.append(f"{server} {old.version} → {new.version}: merge {' + '.join(parts)} → {a}")
            free_new.remove(a)
            for o in parts:
                free_old.remove(o)
    # splits: one retired tool whose parameters two or more added ones share out
    for o in list(free_old):
        po = set(props(old.tool(o) or {}))
        parts = [
            a for a in free_new if set(props(new.tool(a) or {})) & po and set(props(new.tool(a) or {})) <= po
        ]
        if len(parts) >= 2 and _apart([set(props(new.tool(a) or {})) for a in parts], po):
            t.events.append(("split", f"{o} → {' + '.join(parts)}"))
            t.confirm.append(f"{server} {old.version} → {new.version}: split {o} → {' + '.join(parts)}")
            free_old.remove(o)
            for a in parts:
                free_new.remove(a)
    kept = [n for n in names_n if n in names_o]
    for a in free_new:
        twin = [
            k
            for k in kept
            if interface(new.tool(k) or {}) == interface(new.tool(a) or {})
            and props(new.tool(a) or {})
            and len(set(spelling(k).split("_")) & set(spelling(a).split("_"))) >= 2
        ]
        if twin:
            t.events.append(("overlap", f"{a} beside {twin[0]}"))
        else:
            t.events.append(("new", a))
    t.events += [("retired", o) for o in free_old]
    return t


def transitions(server: str, versions: list[VersionListing]) -> list[Transition]:
    """Consecutive transitions between the versions that listed."""
    listed = [v for v in versions if v.error is None]
    return [transition(server, a, b) for a, b in itertools.pairwise(listed)]
