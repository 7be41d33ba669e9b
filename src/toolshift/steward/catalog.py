"""The tool catalog Steward sees: names, descriptions and schemas of one ecosystem version, nothing more.

No transformation records, reference paths or tasks: what a deployment's tool registry publishes.
`version_catalog` reads one from an evolved bench build through the benchmark's own API.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    return Catalog(version, tools)
