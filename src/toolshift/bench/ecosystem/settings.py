"""The tool-supply settings an agent runs under, and the whole catalog of one ecosystem version.

The seed's standard setting is the whole ecosystem: one service desk over every department, whose
agent must find its tools among all of a version's ~850 and is exposed only what it retrieves. Its
diagnostics hand the agent progressively more (docs/formats.md, "Settings"):

* `standard`     — every domain's tools behind `search_tools(query, k)`; nothing is listed until
                   retrieved; exposed = every tool a search returned.
* `domain-tools` — the task's domain's whole version catalog is listed; no search.
* `task-tools`   — the tools of every implementation that performs part of the task's base function
                   sequence (alternatives, overlaps and merges included); no search.
* `oracle-tools` — exactly the tools of the task's step- and cost-optimal reference paths.
* `oracle-path`  — those tools, plus the step-optimal path's order of calls in the instructions.

In every setting the *exposed set* of an episode is the set of world tools whose definitions the
agent was given (listed, or returned by a search), recorded by the agent loop as
`source.exposed_tools`; `search_tools` and `end_conversation` are harness tools, never exposed
world tools and never steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.bench.ecosystem.catalog import DomainCatalog
from toolshift.bench.ecosystem.search import ToolDoc, ToolSearch
from toolshift.bench.ecosystem.store import compiled_domain, domain_tasks, load_history, rebuild_catalog
from toolshift.errors import BadInputError
from toolshift.models import Task
from toolshift.world.state.compiler import CompiledDomain
from toolshift.world.state.tools import Tool
from toolshift.world.state.world import World

SETTINGS: tuple[str, ...] = ("standard", "domain-tools", "task-tools", "oracle-tools", "oracle-path")
SETTING_HELP: dict[str, str] = {
    "standard": "every domain's tools of the version behind search_tools; exposed = what searches returned",
    "domain-tools": "the task's domain's whole version catalog, listed; no search",
    "task-tools": "the tools of every implementation performing part of the task's function sequence",
    "oracle-tools": "exactly the tools of the task's step- and cost-optimal reference paths",
    "oracle-path": "oracle tools plus the step-optimal path's order of calls in the instructions",
}
PER_TASK = ("task-tools", "oracle-tools", "oracle-path")
SEARCH_TOOL = "search_tools"
SEARCH_K, SEARCH_MAX_K = 5, 10
"""Tools a search returns by default and at most (the seed's Steward retrieves at most 5 per call)."""
HARNESS_TOOLS = frozenset({SEARCH_TOOL, "end_conversation"})


def check_setting(setting: str) -> str:
    if setting not in SETTINGS:
        raise BadInputError(f"unknown setting {setting!r} (one of {', '.join(SETTINGS)})", field="setting")
    return setting


class VersionWorlds:
    """Fresh worlds of any domain × version of an evolved build; compiled domains and catalogs cached."""

    def __init__(self, build: str | Path) -> None:
        self.build = Path(build)
        self._compiled: dict[str, CompiledDomain] = {}
        self._tasks: dict[str, list[Task]] = {}
        self._catalogs: dict[tuple[str, int], DomainCatalog] = {}

    def tasks(self, domain: str) -> list[Task]:
        if domain not in self._tasks:
            self._tasks[domain] = domain_tasks(self.build, domain)
        return self._tasks[domain]

    def compiled(self, domain: str) -> CompiledDomain:
        if domain not in self._compiled:
            self._compiled[domain] = compiled_domain(self.build, domain)
        return self._compiled[domain]

    def catalog(self, domain: str, version: int) -> DomainCatalog:
        key = (domain, version)
        if key not in self._catalogs:
            world = World(self.compiled(domain))
            self._catalogs[key] = rebuild_catalog(
                world, self.tasks(domain), load_history(self.build, domain), version
            )
            world.close()
        return self._catalogs[key]

    def world(self, domain: str, version: int) -> World:
        """A fresh world of `domain` with its version-`version` catalog."""
        return self.catalog(domain, version).world(World(self.compiled(domain)))


class EcosystemVersion:
    """Every domain of an evolved build at one version: one catalog, each tool's domain, a search index."""

    def __init__(self, worlds: VersionWorlds, domains: Sequence[str], version: int) -> None:
        self.worlds = worlds
        self.version = version
        self.domains = list(domains)
        self.tools: dict[str, Tool] = {}
        self.domain_of: dict[str, str] = {}
        tables: dict[str, str] = {}
        docs: list[ToolDoc] = []
        for d in self.domains:
            compiled = worlds.compiled(d)
            for t in compiled.tables:
                if t in tables:
                    raise BadInputError(
                        f"table {t!r} is in domains {tables[t]} and {d}: one world cannot hold both",
                        source=str(worlds.build),
                        field="domains",
                    )
                tables[t] = d
            title = compiled.spec.title
            for name, tool in worlds.catalog(d, version).tools.items():
                if name in self.tools:
                    raise BadInputError(
                        f"tool {name!r} is in domains {self.domain_of[name]} and {d}",
                        source=str(worlds.build),
                        field="domains",
                    )
                self.tools[name] = tool
                self.domain_of[name] = d
                params = " ".join(tool.params)
                docs.append(ToolDoc(name, d, f"{title} {tool.description} {params}"))
        self.search = ToolSearch(docs)

    def title(self, domain: str) -> str:
        return self.worlds.compiled(domain).spec.title

    def policy(self, domain: str) -> str:
        spec = self.worlds.compiled(domain).spec
        return spec.policy or spec.description


@dataclass(frozen=True)
class Exposure:
    """What a setting gives the agent at the start of an episode."""

    setting: str
    listed: tuple[str, ...]
    """World tools listed from the start, in listing order."""
    searchable: bool
    """`search_tools` is offered (the standard setting)."""
    domain: str | None = None
    task: str | None = None
    plan: tuple[str, ...] = ()
    """oracle-path: the step-optimal path's tools in call order."""


def task_tools(catalog: DomainCatalog, task: Task) -> list[str]:
    """Tools of every active implementation whose block occurs consecutively in the task's function sequence."""
    seq = task.base_functions
    blocks = {tuple(seq[i:j]) for i in range(len(seq)) for j in range(i + 1, len(seq) + 1)}
    names = {t for impl in catalog.impls.values() if impl.covers in blocks for t in impl.tools}
    return sorted(names)


def exposure_for(
    setting: str,
    *,
    version: EcosystemVersion | None = None,
    catalog: DomainCatalog | None = None,
    task: Task | None = None,
    reference: Any = None,
    domain: str | None = None,
) -> Exposure:
    """The exposure of `setting` (`reference`: the task's `ReferenceRecord` in this version, for the oracle settings)."""
    check_setting(setting)
    if setting == "standard":
        if version is None:
            raise BadInputError("the standard setting serves a whole version", field="setting")
        return Exposure(setting, (), True, task=task.id if task else None)
    dom = task.domain if task is not None else domain
    if dom is None or catalog is None:
        raise BadInputError(f"setting {setting!r} needs a domain or a task", field="setting")
    if setting == "domain-tools":
        return Exposure(setting, tuple(sorted(catalog.tools)), False, dom, task.id if task else None)
    if task is None:
        raise BadInputError(f"setting {setting!r} needs a task (--task)", field="task")
    if setting == "task-tools":
        return Exposure(setting, tuple(task_tools(catalog, task)), False, dom, task.id)
    if reference is None or reference.step is None or reference.cost is None:
        raise BadInputError(f"task {task.id!r} has no reference path in this version", field="task")
    tools = tuple(dict.fromkeys([*reference.step.tools, *reference.cost.tools]))
    plan = tuple(reference.step.tools) if setting == "oracle-path" else ()
    return Exposure(setting, tools, False, dom, task.id, plan)
