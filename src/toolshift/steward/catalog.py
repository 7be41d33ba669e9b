"""The tool catalog Steward sees: names, descriptions and schemas of one ecosystem version, nothing more.

No transformation records, reference paths or tasks: what a deployment's tool registry publishes.
`version_catalog` reads one from an evolved bench build through the benchmark's own API.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CatalogTool:
    name: str
    domain: str
    description: str
    input_schema: dict[str, Any]
    effect: str

    def text(self) -> str:
        props = self.input_schema.get("properties", {})
        return " ".join(
            [self.name.replace("_", " "), self.description, *(p.replace("_", " ") for p in props)]
        )


@dataclass(frozen=True)
class Catalog:
    """The tools of one ecosystem version, across every domain."""

    version: int
    tools: dict[str, CatalogTool]

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def names(self) -> frozenset[str]:
        return frozenset(self.tools)

    def domain_tools(self, domain: str) -> list[str]:
        return sorted(n for n, t in self.tools.items() if t.domain == domain)


def arg_roots(args: Any) -> set[str]:
    """The schema arguments a step's bindings fill: a field of an object argument is bound under the
    argument's name and the field's, dotted (`step1.vin`, a merged tool's first part, D186)."""
    return {name.partition(".")[0] for name in args}


def field_enums(catalog: Catalog, domain: str) -> dict[str, list[Any]]:
    """The members the domain's tools give a field name (`reason` → `not_as_described`, …), for every field
    name whose schemas with an `enum` all give the same members (D198): a write's free-text argument of
    that name takes the member a value names, as the records it sets hold it."""
    seen: dict[str, list[Any] | None] = {}
    for t in catalog.tools.values():
        if t.domain != domain:
            continue
        for name, schema in t.input_schema.get("properties", {}).items():
            members = (schema or {}).get("enum") if isinstance(schema, dict) else None
            if isinstance(members, list) and members:
                seen[name] = members if seen.get(name, members) == members else None
    return {n: m for n, m in seen.items() if m is not None}


_OPENER = re.compile(r"\b([a-z0-9]+_start_[a-z0-9_]+)\b")
_STEP = re.compile(r"^Step [1-9] of [2-9]\b")


def paged_operations(tools: dict[str, CatalogTool]) -> dict[str, CatalogTool]:
    """The tools with the calls of a paged lookup split into start → set → commit (each call's
    description says "Step k of n"; the later ones name the `…_start_…` call that opens the draft) marked
    as reads, since they change no record: an operation one of whose calls takes an `offset` pages through
    a list (D184). The catalog marks every call of such an operation a write (a draft is opened)."""
    groups: dict[str, list[str]] = {}
    for t in tools.values():
        if not _STEP.match(t.description or ""):
            continue
        opener = t.name if "_start_" in t.name else next(iter(_OPENER.findall(t.description)), None)
        if opener is not None:
            groups.setdefault(opener, []).append(t.name)
    out = dict(tools)
    for names in groups.values():
        if any("offset" in tools[n].input_schema.get("properties", {}) for n in names):
            for n in names:
                out[n] = replace(tools[n], effect="read")
    return out


def version_catalog(build: str | Path, version: int, worlds: Any = None) -> Catalog:
    """Version `version`'s catalog of an evolved build (every domain), via `toolshift.bench`'s VersionWorlds."""
    from toolshift.bench.ecosystem.settings import VersionWorlds
    from toolshift.bench.ecosystem.store import load_ecosystem

    eco = load_ecosystem(build)
    worlds = worlds or VersionWorlds(build)
    tools: dict[str, CatalogTool] = {}
    for domain in eco.domains:
        for t in worlds.catalog(domain, version).tools.values():
            tools[t.name] = CatalogTool(t.name, domain, t.description, t.input_schema, str(t.effect))
    return Catalog(version, paged_operations(tools))
