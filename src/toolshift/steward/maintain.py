"""Keeping a library in step with the catalog: initialise on v1, then local edits per version.

The maintainer's whole input is a `Catalog` (names, descriptions, schemas of one version) and that
version's successful training episodes: it cannot see transformation records, reference paths or
test tasks because no argument carries them (this module imports nothing from `toolshift.bench`).

Per version, `maintain` (incremental) does only local edits:

1. **activity**: a skill whose tools are not all in the catalog is deactivated (kept, never
   supplied); an inactive one whose tools are all back is reactivated;
1b. **bindings**: every skill's result bindings are re-checked against the results this version's
   successful episodes show for their source tools; a path no result holds any more (an interface
   that moved its fields) is revised to where the results now hold it, or the skill is deactivated
   and stays so until results hold its paths again (D134);
2. **episodes**: an episode whose call sequence an active planning skill already has is evidence
   and costs no distillation; any other is distilled, and its workflow added as a planning skill
   (with its new atomic skills) unless an identical one exists;
3. **tool skills**: added for tools newly seen in episodes, revised when a tool's schema changed
   under the same name or new errors were seen.

`rebuild` is the full-rebuild comparator (a fresh library from one version's episodes) and a
library never maintained after v1 is the frozen one. Work per version (episodes, distilled, edits,
CPU seconds, model tokens) is recorded in the library's `work` table.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import groupby
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.steward.catalog import Catalog
from toolshift.steward.distill import (
    Trajectory,
    Workflow,
    atomic_skills,
    get_path,
    observed_errors,
    planning_skill,
    tool_skill,
    trajectory,
    workflow,
)
from toolshift.steward.library import Edit, Library, Skill, Work, dependencies_present
from toolshift.traces.episode import Episode

Reviser = Callable[[Skill], tuple[Skill, int]]
"""Optional text writer (`--model`): returns the skill with rewritten description and the tokens it cost."""


def successful(episodes: Iterable[Episode]) -> list[Episode]:
    """Validated successes only: judged by the world diff and marked successful."""
    return [e for e in episodes if e.outcome is not None and e.outcome.success is True]


class Maintainer:
    """Distils episodes into a library's skills under a catalog, counting its work."""

    def __init__(self, library: Library, *, reviser: Reviser | None = None) -> None:
        self.library = library
        self.reviser = reviser

    def initialise(self, catalog: Catalog, episodes: Iterable[Episode]) -> Work:
        """Populate an empty library from one version's successful episodes."""
        if self.library.skills():
            raise ValueError("initialise needs an empty library; use maintain")
        return self._run(catalog, episodes, mode="initialise")

    def maintain(self, catalog: Catalog, episodes: Iterable[Episode]) -> Work:
        """Incremental maintenance on a later version: local edits only."""
        if catalog.version <= self.library.catalog_version:
            raise BadInputError(
                f"the library is already at version {self.library.catalog_version}; maintain onto a later one",
                field="version",
            )
        return self._run(catalog, episodes, mode="incremental")

    # --- the one pass -------------------------------------------------------------------------------

    def _run(self, catalog: Catalog, episodes: Iterable[Episode], *, mode: str) -> Work:
        t0 = time.process_time()
        lib, v = self.library, catalog.version
        work = Work(v, mode)
        ops: dict[str, int] = defaultdict(int)
        eps = successful(episodes)
        work.episodes = len(eps)
        with lib.transaction():

            def edit(op: str, skill: Skill, evidence: dict) -> Skill:
                ops[op] += 1
                if op in ("add", "revise") and self.reviser is not None:
                    skill, tokens = self.reviser(skill)
                    work.tokens += tokens
                return lib.edit(op, skill, v, evidence)  # type: ignore[arg-type]

            names = catalog.names()
            trajs = [trajectory(ep) for ep in eps]
            seen = observed_results(trajs)
            stale_before = stale_ids(lib)
            for s in lib.skills():
                if s.level == "foreign":  # another source's skill: kept as written, never maintained
                    continue
                usable = dependencies_present(s, names) and not schema_conflicts(s, catalog)
                stale = stale_bindings(s, seen)
                if stale:
                    moved = rebound(s, seen)
                    if moved is not None:  # the results moved the field: revise the paths from the evidence
                        body, changes = moved
                        edit("revise", Skill(**{**s.__dict__, "body": body, "active": usable}),
                             {"rebound": changes, "catalog_version": v})  # fmt: skip
                        continue
                    usable = False
                elif s.id in stale_before and not s.active and usable and bindings_confirmed(s, seen):
                    edit("reactivate", s, {"bindings_hold_again": True})
                    continue
                if s.active and not usable:
                    if stale:
                        edit("deactivate", s, {"stale_bindings": stale, "catalog_version": v})
                        continue
                    edit("deactivate", s, {"missing_tools": sorted(set(s.tools) - names),
                                           "schema_conflicts": schema_conflicts(s, catalog)})  # fmt: skip
                elif not s.active and usable and s.id not in stale_before:
                    edit("reactivate", s, {"tools_back": list(s.tools)})
            known = {
                _collapsed(s.body.get("steps_tools", s.tools)) for s in lib.skills("planning", active=True)
            }
            by_key: dict[str, list[Workflow]] = defaultdict(list)
            errors: dict[str, list[dict[str, str]]] = defaultdict(list)
            seen_tools: set[str] = set()
            for traj in trajs:
                seq = _collapsed(c.tool for c in traj.calls if c.ok)
                if mode == "incremental" and seq in known and all(c.ok for c in traj.calls):
                    continue  # evidence for a skill that still works: nothing to distil
                work.distilled += 1
                wf = workflow(traj)
                if not wf.steps or not all(t in names for t in wf.tools):
                    continue
                by_key[wf.key()].append(wf)
                seen_tools.update(wf.tools)
                for tool, errs in observed_errors(traj).items():
                    if tool in names:
                        errors[tool] += errs
                        seen_tools.add(tool)
            for wfs in by_key.values():
                plan = planning_skill(wfs, catalog)
                plan = Skill(**{**plan.__dict__, "body": {**plan.body, "steps_tools": list(wfs[0].tools)}})
                evidence = {"episodes": plan.body["evidence"], "catalog_version": v}
                current = lib.get(plan.id)
                if current is None:
                    edit("add", plan, evidence)
                elif not current.active:
                    edit("reactivate", current, evidence)
                for _, atom in atomic_skills(wfs[0], catalog):
                    if lib.get(atom.id) is None:
                        edit("add", atom, {"episodes": [wfs[0].episode_id], "from": plan.id})
            for name in sorted(seen_tools):
                skill = tool_skill(catalog.tools[name], errors.get(name, []))
                current = lib.get(skill.id)
                if current is None:
                    edit("add", skill, {"tool": name, "errors": len(errors.get(name, []))})
                elif (
                    current.body.get("schema_digest") != skill.body["schema_digest"]
                    or current.description != skill.description
                    or (errors.get(name) and errors[name][-10:] != current.body.get("errors"))
                ):
                    merged = current.body.get("errors", []) + errors.get(name, [])
                    body = {**skill.body, "errors": merged[-10:]}
                    edit(
                        "revise",
                        Skill(**{**skill.__dict__, "body": body}),
                        {"tool": name, "schema_changed": True},
                    )
            work.edits = sum(ops.values())
            work.by_op = dict(ops)
            work.seconds = time.process_time() - t0
            lib.record_work(work)
        return work


def schema_conflicts(skill: Skill, catalog: Catalog) -> list[str]:
    """Calls of a planning or atomic skill the catalog's current schema no longer accepts: an argument it
    does not declare, or a required one the skill does not fill (an interface changed under its name)."""
    out = []
    for step in skill.body.get("steps", skill.body.get("calls", [])):
        tool = catalog.tools.get(step.get("tool", ""))
        if tool is None:
            continue
        props = set(tool.input_schema.get("properties", {}))
        args = set(step.get("args", {}))
        extra, missing = args - props, set(tool.input_schema.get("required", [])) - args
        if (extra and props) or missing:
            out.append(
                f"{tool.name}: "
                + ", ".join([*(f"no {a}" for a in sorted(extra)), *(f"needs {a}" for a in sorted(missing))])
            )
    return out


def observed_results(trajs: Iterable[Trajectory], per_tool: int = 8) -> dict[str, list[Any]]:
    """Per tool, up to `per_tool` results its successful calls returned in this version's episodes."""
    out: dict[str, list[Any]] = defaultdict(list)
    for t in trajs:
        for c in t.calls:
            if c.ok and isinstance(c.result, dict | list) and len(out[c.tool]) < per_tool:
                out[c.tool].append(c.result)
    return out


def _holds(result: Any, path: list[Any]) -> bool:
    if "*" not in path:
        return get_path(result, path) is not None
    at = path.index("*")
    items = get_path(result, path[:at])
    if not isinstance(items, list):
        return False
    return not items or any(get_path(it, path[at + 1 :]) is not None for it in items)


def _result_bindings(skill: Skill) -> list[tuple[int, str, str, list[Any]]]:
    """(step, argument, source tool, path) of every argument a skill binds to an earlier result."""
    steps = skill.body.get("steps", skill.body.get("calls", []))
    out = []
    for k, step in enumerate(steps):
        for name, b in step.get("args", {}).items():
            if "step" in b and 0 <= b["step"] < len(steps):
                out.append((k, name, steps[b["step"]]["tool"], list(b["path"])))
    return out


def stale_bindings(skill: Skill, seen: dict[str, list[Any]]) -> list[str]:
    """Bindings this version's results contradict: the source tool was seen returning results, and in
    none of them does the bound path exist (an interface that moved its fields, e.g. nested them)."""
    out = []
    for _, name, tool, path in _result_bindings(skill):
        results = seen.get(tool)
        if results and not any(_holds(r, path) for r in results):
            out.append(f"{name} ← {tool}.{'.'.join(map(str, path))}")
    return out


def bindings_confirmed(skill: Skill, seen: dict[str, list[Any]]) -> bool:
    """Every result binding of the skill holds in a result this version's episodes show."""
    return all(any(_holds(r, p) for r in seen.get(t, [])) for _, _, t, p in _result_bindings(skill))


def _paths(value: Any, depth: int = 6) -> Iterable[tuple[list[Any], Any]]:
    """(path, node) of a result's dict and list nodes, descending into the first item of lists only."""
    stack: list[tuple[list[Any], Any]] = [([], value)]
    while stack:
        path, node = stack.pop()
        yield path, node
        if len(path) >= depth:
            continue
        if isinstance(node, dict):
            stack += [([*path, k], v) for k, v in node.items() if isinstance(v, dict | list)]
        elif isinstance(node, list) and node and isinstance(node[0], dict | list):
            stack.append(([*path, 0], node[0]))


def _moved(path: list[Any], results: list[Any]) -> list[Any] | None:
    """Where this version's results hold what `path` held: the shortest path to a list whose items
    have the same suffix (for `*` paths) or to the same key; None when no result shows it."""
    found: list[list[Any]] = []
    for r in results:
        for p, node in _paths(r):
            if any(isinstance(k, int) for k in p):
                continue
            if "*" in path:
                suffix = path[path.index("*") + 1 :]
                if isinstance(node, list) and any(get_path(it, suffix) is not None for it in node):
                    found.append([*p, "*", *suffix])
            elif isinstance(node, dict) and node.get(path[-1]) is not None:
                found.append([*p, path[-1]])
    found = [f for f in found if f != path]
    return min(found, key=lambda f: (len(f), [str(x) for x in f])) if found else None


def rebound(skill: Skill, seen: dict[str, list[Any]]) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The skill's body with every contradicted path moved to where this version's results hold it,
    and the changes; None when some contradicted binding has no new place (the skill is deactivated)."""
    key = "steps" if "steps" in skill.body else "calls"
    steps = [{**st, "args": {n: dict(b) for n, b in st.get("args", {}).items()}} for st in skill.body[key]]
    changes = {}
    for k, name, tool, path in _result_bindings(skill):
        results = seen.get(tool) or []
        if not results or any(_holds(r, path) for r in results):
            continue
        new = _moved(path, results)
        if new is None:
            return None
        steps[k]["args"][name]["path"] = new
        changes[f"{name} ← {tool}"] = f"{'.'.join(map(str, path))} → {'.'.join(map(str, new))}"
    return {**skill.body, key: steps}, changes


def stale_ids(lib: Library) -> set[str]:
    """Skills whose latest state edit deactivated them for stale bindings (tool presence alone does not
    bring them back; results that hold their paths again do)."""
    last: dict[str, Edit] = {}
    for e in lib.edits():
        if e.op in ("deactivate", "reactivate", "revise", "add"):
            last[e.skill_id] = e
    return {k for k, e in last.items() if e.op == "deactivate" and "stale_bindings" in e.evidence}


def _collapsed(tools: Iterable[str]) -> tuple[str, ...]:
    """A call sequence with runs of one tool counted once (an `each` step is one step)."""
    return tuple(k for k, _ in groupby(tools))


def rebuild(path: str | Path, catalog: Catalog, episodes: Iterable[Episode], **kw) -> tuple[Library, Work]:
    """The full-rebuild comparator: a fresh library from this version's episodes alone, at `path`."""
    lib = Library.create(path, name=f"full-rebuild-v{catalog.version}", replace_existing=True)
    work = Maintainer(lib, **kw).initialise(catalog, episodes)
    return lib, work
