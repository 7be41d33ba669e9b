"""What a task asks a server to do, as capabilities, and each capability's implementations across versions.

A task's gold path is written once as capabilities with the user's facts (`write(path, content)`), never as one
version's tools. A capability has implementations in preference order — the fewest calls first, then the tool
the newest versions recommend — each a list of calls whose arguments are built from the capability's
parameters (`"{path}"`), from an earlier call's result text (`{"$result": k}`) or both joined (`{"$join": […]}`).
A version does a capability with the first implementation whose every tool it lists and whose arguments that
tool's input schema accepts (`resolve`); a version with none lacks the capability, and the task is marked,
not failed, there. The reference path of a task on a version is its capabilities' implementations in order:
step-optimal by construction (the seed's DP over one block per capability, D363).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from toolshift.drift.history import VersionListing


@dataclass(frozen=True)
class Impl:
    """One way to do a capability: calls of (tool, argument template)."""

    calls: tuple[tuple[str, dict[str, Any]], ...]


def impl(*calls: tuple[str, dict[str, Any]]) -> Impl:
    return Impl(tuple(calls))


def alt(names: tuple[str, ...], args: dict[str, Any]) -> tuple[Impl, ...]:
    """The same one-call implementation under each of a tool's names across versions."""
    return tuple(impl((n, args)) for n in names)


REPO = {"repo_path": "repo"}
"""The git server's repository, relative to its sandbox (the path its `--repository` names)."""

CAPABILITIES: dict[str, dict[str, tuple[Impl, ...]]] = {
    "filesystem": {
        "write": (impl(("write_file", {"path": "{path}", "content": "{content}"})),),
        "mkdir": (impl(("create_directory", {"path": "{path}"})),),
        "move": (impl(("move_file", {"source": "{source}", "destination": "{destination}"})),),
        "edit": (impl(("edit_file", {"path": "{path}", "edits": [{"oldText": "{old}", "newText": "{new}"}]})),),
        "copy": (
            impl(("copy_file", {"source": "{source}", "destination": "{destination}"})),
            impl(
                ("read_text_file", {"path": "{source}"}),
                ("write_file", {"path": "{destination}", "content": {"$result": 0}}),
            ),
            impl(
                ("read_file", {"path": "{source}"}),
                ("write_file", {"path": "{destination}", "content": {"$result": 0}}),
            ),
        ),
        "append": (
            impl(("append_file", {"path": "{path}", "content": "{text}"})),
            impl(
                ("read_text_file", {"path": "{path}"}),
                ("write_file", {"path": "{path}", "content": {"$join": [{"$result": 0}, "{text}"]}}),
            ),
            impl(
                ("read_file", {"path": "{path}"}),
                ("write_file", {"path": "{path}", "content": {"$join": [{"$result": 0}, "{text}"]}}),
            ),
        ),
    },
    "git": {
        "stage": (impl(("git_add", {**REPO, "files": ["{file}"]})),),
        "unstage_all": (impl(("git_reset", dict(REPO))),),
        "commit": (impl(("git_commit", {**REPO, "message": "{message}"})),),
        "branch": (impl(("git_create_branch", {**REPO, "branch_name": "{branch}"})),),
        "branch_from": (impl(("git_create_branch", {**REPO, "branch_name": "{branch}", "base_branch": "{base}"})),),
        "checkout": (impl(("git_checkout", {**REPO, "branch_name": "{branch}"})),),
        "init": (impl(("git_init", {"repo_path": "{folder}"})),),
    },
    "memory": {
        "remember": (
            impl(("create_entities", {"entities": [{"name": "{name}", "entityType": "{kind}", "observations": ["{fact}"]}]})),
        ),
        "observe": (impl(("add_observations", {"observations": [{"entityName": "{name}", "contents": ["{fact}"]}]})),),
        "relate": (impl(("create_relations", {"relations": [{"from": "{name}", "to": "{other}", "relationType": "{relation}"}]})),),
        "forget": (impl(("delete_entities", {"entityNames": ["{name}"]})),),
        "unobserve": (
            impl(("delete_observations", {"deletions": [{"entityName": "{name}", "observations": ["{fact}"]}]})),
        ),
        "unrelate": (impl(("delete_relations", {"relations": [{"from": "{name}", "to": "{other}", "relationType": "{relation}"}]})),),
    },
    "sqlite": {
        "write": alt(("write_query", "write-query"), {"query": "{sql}"}),
        "create": alt(("create_table", "create-table"), {"query": "{sql}"}),
    },
}  # fmt: skip


def fill(template: Any, params: dict[str, str], results: list[str]) -> Any:
    """An argument template with the parameters and earlier results put in."""
    if isinstance(template, str):
        return re.sub(r"\{([a-z_]+)\}", lambda m: params[m.group(1)], template)
    if isinstance(template, list):
        return [fill(v, params, results) for v in template]
    if isinstance(template, dict):
        if "$result" in template:
            return results[template["$result"]]
        if "$join" in template:
            return "".join(str(fill(v, params, results)) for v in template["$join"])
        return {k: fill(v, params, results) for k, v in template.items()}
    return template


@dataclass(frozen=True)
class Step:
    """One call of a resolved path: the tool, its argument template (results filled when replayed)."""

    capability: str
    tool: str
    template: dict[str, Any]
    params: dict[str, str]
    block: int
    """Which capability of the program this call implements (results are numbered within it)."""


@dataclass(frozen=True)
class Resolution:
    """A task's reference path on one version, or why the version lacks a capability it needs."""

    steps: tuple[Step, ...] = ()
    missing: str | None = None

    @property
    def ok(self) -> bool:
        return self.missing is None


def _accepts(listing: VersionListing, tool: str, args: dict[str, Any]) -> str | None:
    """Why the version's `tool` would refuse `args` (None: it lists the tool and its schema accepts them)."""
    from toolshift.world.state.validation import ArgumentSchema

    found = listing.tool(tool)
    if found is None:
        return f"no {tool}"
    schema = found.get("inputSchema") or {"type": "object"}
    problem = ArgumentSchema(schema, formats=False, check=False).problem(args)
    return None if problem is None else f"{tool} refuses the arguments: {problem.message[:120]}"


def resolve(server: str, program: list[tuple[str, dict[str, str]]], listing: VersionListing) -> Resolution:
    """The version's reference path for a program of (capability, parameters), or the capability it lacks."""
    steps: list[Step] = []
    for block, (capability, params) in enumerate(program):
        why: list[str] = []
        for way in CAPABILITIES[server][capability]:
            placeholder = [f"<result {k}>" for k in range(len(way.calls))]
            problems = [_accepts(listing, tool, fill(args, params, placeholder)) for tool, args in way.calls]
            bad = [p for p in problems if p]
            if not bad:
                steps += [Step(capability, tool, args, params, block) for tool, args in way.calls]
                break
            why.append(bad[0])
        else:
            return Resolution(missing=f"{capability}: {'; '.join(dict.fromkeys(why))}")
    return Resolution(tuple(steps))
