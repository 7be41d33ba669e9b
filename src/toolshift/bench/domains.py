"""The benchmark's domain registry: the spec files in toolshift/bench/domains and their catalog counts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from toolshift.errors import BadInputError
from toolshift.world.state.registry import load_domain, world_domains

BENCH_DOMAINS_DIR = Path(__file__).resolve().parent / "domains"


def bench_domain_names() -> list[str]:
    """The benchmark domains (spec file stems), sorted."""
    return sorted(p.stem for p in BENCH_DOMAINS_DIR.glob("*.yaml"))


def resolve_domains(names: str | list[str] | None) -> list[str]:
    """`None` → every bench domain; a comma list or list → those names (bench or built-in world domains)."""
    if names is None or names == "" or names == []:
        found = bench_domain_names()
        if not found:
            raise BadInputError("no benchmark domain specs found", source=str(BENCH_DOMAINS_DIR))
        return found
    items = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    known = set(bench_domain_names()) | set(world_domains())
    for n in items:
        if n not in known and not n.endswith((".yaml", ".yml")):
            raise BadInputError(f"unknown domain {n!r} (see `toolshift bench domains`)", field="--domains")
    return list(dict.fromkeys(items))


@dataclass
class DomainInfo:
    name: str
    title: str
    prefix: str
    entities: int
    relations: int
    actions: int
    tools: int
    rows: int
    tool_names: list[str]


def domain_info(name: str) -> DomainInfo:
    """Compile a domain and count what it offers."""
    d = load_domain(name)
    s = d.spec
    return DomainInfo(
        name=s.name,
        title=s.title,
        prefix=s.tool_prefix,
        entities=len(s.entities),
        relations=len(s.relations),
        actions=len(s.actions),
        tools=len(d.tools),
        rows=sum(d.row_counts().values()),
        tool_names=[t.name for t in d.tools],
    )


def catalog_collisions(infos: list[DomainInfo]) -> dict[str, list[str]]:
    """Tool names that more than one domain defines (must be empty for the benchmark catalog)."""
    owners: dict[str, list[str]] = {}
    for info in infos:
        for n in info.tool_names:
            owners.setdefault(n, []).append(info.name)
    return {n: ds for n, ds in owners.items() if len(ds) > 1}
