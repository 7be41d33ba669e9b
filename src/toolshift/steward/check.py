"""`toolshift steward check`: which of a library's skills a new catalog breaks, before anyone deploys it.

The check is maintenance's first pass run dry (D366): nothing is written. Each active skill of the domain is
**ok** (its tools are listed and their schemas take its calls), **rebound** (renames alone bring it to the new
catalog: a tool of the same input schema under a new name, or the successor its deprecated tool names), or
**broken**, with why: the tools it calls that are gone, the calls the new schemas refuse (an argument no longer
declared, a new required one). A tool skill whose tool's schema or description changed is **changed**. Inactive
skills are listed as such. No episode of the new version exists yet, so result bindings are not re-checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import tool_skill
from toolshift.steward.library import Library, dependencies_present
from toolshift.steward.maintain import deprecated_successors, mechanical, renamed_tools, schema_conflicts

Status = Literal["ok", "rebound", "changed", "broken", "inactive"]


@dataclass
class SkillCheck:
    skill: str
    level: str
    status: Status
    tools: list[str]
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"skill": self.skill, "level": self.level, "status": self.status, "tools": self.tools,
                "reasons": self.reasons}  # fmt: skip


def catalog_from_tools(domain: str, tools: Iterable[dict[str, Any]], version: int = 0) -> Catalog:
    """A Steward catalog from an MCP `tools/list` (the wire's JSON): the effect from `readOnlyHint` /
    `destructiveHint`, else the verb rule (`toolshift.traces.catalog.label_by_verb`), else a write."""
    from toolshift.traces.catalog import label_by_verb

    out: dict[str, CatalogTool] = {}
    for t in tools:
        name = str(t.get("name"))
        notes = t.get("annotations") or {}
        if notes.get("readOnlyHint") is True:
            effect = "read"
        elif notes.get("readOnlyHint") is False or notes.get("destructiveHint") is True:
            effect = "write"
        else:
            effect = (label_by_verb(name) or ("write", ""))[0]
        schema = t.get("inputSchema") if isinstance(t.get("inputSchema"), dict) else {"type": "object"}
        out[name] = CatalogTool(name, domain, str(t.get("description") or ""), schema, effect)
    return Catalog(version, out)


def check_library(lib: Library, catalog: Catalog, domain: str | None = None) -> list[SkillCheck]:
    """Every skill of `domain` (all domains when None) checked against the catalog, nothing written."""
    renames = {**deprecated_successors(lib, catalog), **renamed_tools(lib, catalog)}
    names = catalog.names()
    out: list[SkillCheck] = []
    for s in lib.skills():
        if s.level == "foreign" or (domain is not None and s.domain != domain):
            continue
        tools = list(s.tools)
        if not s.active:
            out.append(SkillCheck(s.id, s.level, "inactive", tools))
            continue
        if s.level == "tool":
            name = s.tools[0]
            if name in renames:
                out.append(SkillCheck(s.id, s.level, "rebound", tools, [f"{name} → {renames[name]}"]))
            elif name not in names:
                out.append(SkillCheck(s.id, s.level, "broken", tools, [f"{name} is gone"]))
            else:
                now = tool_skill(catalog.tools[name], [])
                why = []
                if now.body["schema_digest"] != s.body.get("schema_digest"):
                    why.append(f"{name}: input schema changed")
                if now.description != s.description:
                    why.append(f"{name}: description changed")
                out.append(SkillCheck(s.id, s.level, "changed" if why else "ok", tools, why))
            continue
        moved = mechanical(s, renames, catalog, {})
        if moved is not None:
            how = [f"{a} → {b}" for a, b in moved[1].items()]
            out.append(SkillCheck(s.id, s.level, "rebound", tools, how))
            continue
        missing = sorted(set(s.tools) - names)
        conflicts = schema_conflicts(s, catalog) if not missing else []
        if missing or conflicts:
            why = [f"{t} is gone" for t in missing] + conflicts
            out.append(SkillCheck(s.id, s.level, "broken", tools, why))
        elif not dependencies_present(s, names):
            out.append(SkillCheck(s.id, s.level, "broken", tools, ["a tool it depends on is gone"]))
        else:
            out.append(SkillCheck(s.id, s.level, "ok", tools))
    return out
