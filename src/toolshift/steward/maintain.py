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

import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import groupby
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.steward.catalog import Catalog, arg_roots
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
from toolshift.steward.library import Edit, Library, Skill, Work, dependencies_present, skill_name
from toolshift.traces.episode import Episode

Reviser = Callable[[Skill], tuple[Skill, int]]
"""Optional text writer (`--model`): returns the skill with rewritten description and the tokens it cost."""


def successful(episodes: Iterable[Episode]) -> list[Episode]:
    """Validated successes only: judged by the world diff and marked successful."""
    return [e for e in episodes if e.outcome is not None and e.outcome.success is True]


class Maintainer:
    """Distils episodes into a library's skills under a catalog, counting its work."""

    def __init__(self, library: Library, *, reviser: Reviser | None = None, templates: bool = False) -> None:
        self.library = library
        self.reviser = reviser
        self.templates = templates
        """Bind texts built around the user's facts as templates (D364): servers whose arguments are SQL or paths."""

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

    def maintain_at(self, catalog: Catalog, episodes: Iterable[Episode]) -> Work:
        """Incremental maintenance from episodes of the version the library is already kept for: a library
        brought in step with a new catalog before any episode of it (D213) then learns from its episodes."""
        if catalog.version != self.library.catalog_version:
            raise BadInputError(
                f"the library is kept for version {self.library.catalog_version}, not {catalog.version}",
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
                # a moved result path is mechanical as a rename is: nothing for a writer to write (D185)
                if op in ("add", "revise") and self.reviser is not None and "rebound" not in evidence:
                    skill, tokens = self.reviser(skill)
                    work.tokens += tokens
                if op == "rename":  # mechanical: the tool's new name substituted, nothing written
                    op = "revise" if lib.get(skill.id) is not None else "add"
                return lib.edit(op, skill, v, evidence)  # type: ignore[arg-type]

            names = catalog.names()
            trajs = [trajectory(ep) for ep in eps]
            seen = observed_results(trajs)
            stale_before = stale_ids(lib)
            seen_args = observed_arguments(trajs)
            renames = renamed_tools(lib, catalog)
            successors = deprecated_successors(lib, catalog)
            renames = {**successors, **renames}
            for old_tool, new_tool in sorted(renames.items()):
                current = lib.get(skill_name("tool", old_tool, old_tool))
                if current is not None and lib.get(skill_name("tool", new_tool, new_tool)) is None:
                    body = {"errors": current.body.get("errors", [])}
                    skill = tool_skill(catalog.tools[new_tool], body["errors"])
                    evidence = {"renamed": {old_tool: new_tool}, "catalog_version": v}
                    if old_tool in successors:
                        evidence["deprecated"] = [old_tool]
                    edit("rename", skill, evidence)
            for s in lib.skills():
                if s.level == "foreign":  # another source's skill: kept as written, never maintained
                    continue
                moved = mechanical(s, renames, catalog, seen_args) if s.id not in stale_before else None
                if moved is not None and not stale_bindings(moved[0], seen):
                    evidence = {"renamed": moved[1], "catalog_version": v}
                    if any(t in successors for t in s.tools):
                        evidence["deprecated"] = sorted(t for t in s.tools if t in successors)
                    edit("rename", Skill(**{**moved[0].__dict__, "active": True}), evidence)
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
            distilled: set[tuple[tuple[str, ...], frozenset[str]]] = set()
            for traj in trajs:
                seq = _collapsed(c.tool for c in traj.calls if c.ok)
                if mode == "incremental" and seq in known and all(c.ok for c in traj.calls):
                    continue  # evidence for a skill that still works: nothing to distil
                if mode == "incremental" and (seq, frozenset(traj.facts)) in distilled:
                    continue  # the same calls on the same kind of facts as one distilled in this pass
                distilled.add((seq, frozenset(traj.facts)))
                work.distilled += 1
                wf = workflow(traj, templates=self.templates)
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


def renamed_tools(lib: Library, catalog: Catalog) -> dict[str, str]:
    """Tools the library knows that the catalog no longer has, each with the one new tool of its domain
    whose input schema is the very same (by the tool skill's schema digest): a rename, old → new. A new
    name two old tools would share, or a tool with two candidates, is no rename."""
    known = {s.tools[0] for s in lib.skills("tool")}
    fresh: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, tool in catalog.tools.items():
        if name not in known:
            fresh[(tool.domain, tool_skill(tool, []).body["schema_digest"])].append(name)
    out: dict[str, str] = {}
    for s in lib.skills("tool"):
        if s.tools[0] in catalog.tools:
            continue
        found = fresh.get((s.domain, s.body.get("schema_digest", "")), [])
        if len(found) == 1:
            out[s.tools[0]] = found[0]
    taken = defaultdict(int)
    for new in out.values():
        taken[new] += 1
    return {old: new for old, new in out.items() if taken[new] == 1}


DEPRECATED_FOR = re.compile(
    r"\bdeprecated\b[^.]*?\b(?:use|in favou?r of|replaced by|superseded by)\s+`?([A-Za-z0-9_.-]+?)`?(?=[\s.,;:)]|$)",
    re.IGNORECASE,
)


def deprecated_successors(lib: Library, catalog: Catalog) -> dict[str, str]:
    """Tools the library's skills call that the catalog still lists but now describes as deprecated, naming a
    successor of the same domain it also lists ("DEPRECATED: Use read_text_file instead."): old → new. The
    deprecated tool is still callable, but a skill moved to its successor keeps working when it goes (D365);
    whether the successor takes the skill's calls is checked as for any rename (`mechanical`)."""
    used = {t for s in lib.skills() if s.level != "foreign" for t in s.tools}
    out: dict[str, str] = {}
    for name in sorted(used):
        tool = catalog.tools.get(name)
        found = DEPRECATED_FOR.search(tool.description or "") if tool is not None else None
        if tool is None or found is None:
            continue
        new = catalog.tools.get(found.group(1))
        if new is not None and new.name != name and new.domain == tool.domain:
            out[name] = new.name
    return out


def renamed(skill: Skill, renames: dict[str, str]) -> Skill | None:
    """The skill with its renamed tools' new names (steps, tools, description, written instructions);
    None when none of its tools was renamed."""
    if not any(t in renames for t in skill.tools):
        return None

    def sub(text: str) -> str:
        for old, new in renames.items():
            text = re.sub(rf"\b{re.escape(old)}\b", new, text)
        return text

    body = json.loads(sub(json.dumps(skill.body)))
    tools = tuple(renames.get(t, t) for t in skill.tools)
    return Skill(**{**skill.__dict__, "body": body, "tools": tools, "description": sub(skill.description)})


def observed_arguments(trajs: Iterable[Trajectory]) -> dict[str, set[str]]:
    """Per tool, the argument names its successful calls used in this version's episodes."""
    out: dict[str, set[str]] = defaultdict(set)
    for t in trajs:
        for c in t.calls:
            if c.ok:
                out[c.tool].update(c.args)
    return out


def renamed_arguments(
    skill: Skill, catalog: Catalog, seen_args: dict[str, set[str]]
) -> tuple[Skill, dict] | None:
    """The skill with each argument its tool's schema no longer declares renamed to the one new argument
    of that tool that shares its first word (`receipt_id` → `receipt_ref`; else the only new one) and that
    this version's successful calls use; None when some conflict has no such argument."""
    key = "steps" if "steps" in skill.body else "calls"
    steps = [dict(st) for st in skill.body.get(key, [])]
    changes: dict[str, str] = {}
    for k, st in enumerate(steps):
        tool = catalog.tools.get(st.get("tool", ""))
        if tool is None:
            continue
        props = tool.input_schema.get("properties", {})
        args = st.get("args", {})
        # a merged tool's arguments are paths (`step2.window_id`): the part (`step2`) is what was renamed
        # (`step2_value`), and the path under it stays (D236)
        extra = list(dict.fromkeys(a.partition(".")[0] for a in args if a.partition(".")[0] not in props))
        free = [p for p in props if p not in arg_roots(args) and p in seen_args.get(tool.name, set())]
        if not extra or not props:
            continue
        moved = dict(args)
        for old in extra:
            near = [p for p in free if p.split("_")[0] == old.split("_")[0]]
            pick = near if near else free if len(extra) == 1 else []
            if len(pick) != 1:
                return None
            new = pick[0]
            for a in [a for a in moved if a.partition(".")[0] == old]:
                moved[new + a[len(old) :]] = moved.pop(a)
            free.remove(new)
            changes[f"{tool.name}.{old}"] = new
        steps[k] = {**st, "args": moved}
    if not changes:
        return None
    return Skill(**{**skill.__dict__, "body": {**skill.body, key: steps}}), changes


def mechanical(
    skill: Skill, renames: dict[str, str], catalog: Catalog, seen_args: dict[str, set[str]]
) -> tuple[Skill, dict] | None:
    """A planning or atomic skill brought to this catalog by renames alone (its tools' new names, then its
    arguments' new names), with the changes; None when renames do not make it usable."""
    if skill.level not in ("planning", "atomic"):
        return None
    moved, changes = skill, {}
    by_tool = renamed(skill, renames)
    if by_tool is not None:
        moved, changes = by_tool, {t: renames[t] for t in skill.tools if t in renames}
    if dependencies_present(moved, catalog.names()) and schema_conflicts(moved, catalog):
        by_arg = renamed_arguments(moved, catalog, seen_args)
        if by_arg is not None:
            moved, changes = by_arg[0], {**changes, **by_arg[1]}
    if not changes or not dependencies_present(moved, catalog.names()) or schema_conflicts(moved, catalog):
        return None
    return moved, changes


def schema_conflicts(skill: Skill, catalog: Catalog) -> list[str]:
    """Calls of a planning or atomic skill the catalog's current schema no longer accepts: an argument it
    does not declare, or a required one the skill does not fill (an interface changed under its name)."""
    out = []
    for step in skill.body.get("steps", skill.body.get("calls", [])):
        tool = catalog.tools.get(step.get("tool", ""))
        if tool is None:
            continue
        props = set(tool.input_schema.get("properties", {}))
        args = arg_roots(step.get("args", {}))
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
