"""Episodes on real servers: a fresh sandbox per episode, the server started on it, the diff judged by state.

`RealWorld` opens a session for `toolshift.agents.loop.run_episode` (an SDK client to the version, its policy
and title, and the diff of the sandbox's state from before the episode to after). `replay` runs a reference path
directly (no agent) and returns the Δ it made — how each task's Δgold is defined and checked on every version.
`PathReplay` is the oracle instrument: it asks the user for the task's facts, then makes the version's reference
path's calls, filling an argument that takes an earlier result from that call's text.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.shared.exceptions import MCPError

from toolshift.drift.capabilities import Resolution, Step, fill
from toolshift.drift.install import Installed
from toolshift.drift.listing import connect
from toolshift.drift.seeds import fresh_sandbox
from toolshift.drift.state import Rows, diff, read_state
from toolshift.models import RowChange

POLICIES: dict[str, str] = {
    "filesystem": "You look after the user's files with the filesystem tools. Paths are relative to the user's "
    "folder (for example notes/todo.txt); write file contents exactly as the user gives them.",
    "git": "You look after the user's git repository with the git tools. The repository is at the path `repo` "
    "(give it as repo_path); other paths the user names are relative to the folder that holds it.",
    "memory": "You keep the user's knowledge graph with the memory tools: entities (people, cities, organizations) "
    "with observations about them, and relations between entities, named as the user names them.",
    "sqlite": "You look after the shop's SQLite database with the database tools. Tables: products(id, name, "
    "price, stock) and customers(id, name, city); ids are assigned by the database.",
}


@dataclass
class RealSession:
    """One episode's view of a real server: its client, and the state diff since it opened."""

    client: Any
    policy: str
    title: str
    kind: str
    sandbox: Path
    before: Rows
    served: dict[str, Any] = field(default_factory=dict)

    async def diff(self, reported: list[RowChange] | None) -> list[RowChange]:
        return diff(self.before, read_state(self.kind, self.sandbox))


@asynccontextmanager
async def sandbox_dir(kind: str) -> AsyncIterator[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="toolshift-drift-"))
    try:
        yield fresh_sandbox(kind, tmp / "sandbox")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def real_world(inst: Installed) -> Any:
    """An opener for `run_episode`: a fresh sandbox and a freshly started server per episode."""
    kind = inst.spec.state

    @asynccontextmanager
    async def open_world() -> AsyncIterator[RealSession]:
        async with sandbox_dir(kind) as sandbox, connect(inst, sandbox) as client:
            before = read_state(kind, sandbox)
            served = {"ecosystem_version": f"{inst.spec.key}/{inst.version}", "setting": "real-server"}
            title = f"{inst.spec.title} ({inst.spec.package} {inst.version})"
            yield RealSession(client, POLICIES.get(kind, ""), title, kind, sandbox, before, served)

    return open_world


def call_text(result: Any) -> str:
    from toolshift.agents.toolbox import result_text

    return result_text(result)


@dataclass
class Replayed:
    changes: list[RowChange]
    errors: list[str]
    texts: list[str]


def block_results(steps: tuple[Step, ...], texts: list[str], k: int) -> list[str]:
    """The result texts of the calls before step k in step k's own capability block."""
    return [t for s, t in zip(steps[:k], texts, strict=False) if s.block == steps[k].block]


async def replay(inst: Installed, resolution: Resolution) -> Replayed:
    """Run a reference path on a fresh sandbox of `inst`: the Δ it made and the calls that failed."""
    kind = inst.spec.state
    async with sandbox_dir(kind) as sandbox:
        before = read_state(kind, sandbox)
        texts: list[str] = []
        errors: list[str] = []
        async with connect(inst, sandbox) as client:
            for k, step in enumerate(resolution.steps):
                args = fill(step.template, step.params, block_results(resolution.steps, texts, k))
                try:
                    result = await client.call_tool(step.tool, args)
                except MCPError as exc:  # the server refused the request (a protocol error, not a result)
                    texts.append("")
                    errors.append(f"{step.tool}: {exc}"[:200])
                    continue
                text = call_text(result)
                texts.append(text)
                if getattr(result, "is_error", False):
                    errors.append(f"{step.tool}: {text[:200]}")
        return Replayed(diff(before, read_state(kind, sandbox)), errors, texts)


class PathReplay:
    """The oracle instrument: asks for the task's facts by name, then makes the reference path's calls."""

    name = "drift-path-replay"

    def __init__(self, facts: list[str], steps: tuple[Step, ...]) -> None:
        self.facts = facts
        self.steps = steps
        self.texts: list[str] = []
        self._next = -1 if facts else 0

    async def complete(self, messages: list[dict[str, Any]], tools: list[Any]) -> Any:
        from toolshift.agents.users import END_CONVERSATION
        from toolshift.steward.instruments import _reply, ask_text

        if self._next == -1:
            self._next = 0
            return _reply(ask_text(self.facts))
        if 0 < self._next <= len(self.steps) and messages and messages[-1].get("role") == "tool":
            self.texts.append(str(messages[-1].get("content") or ""))
        if self._next < len(self.steps):
            k = self._next
            step = self.steps[k]
            self._next += 1
            args = fill(step.template, step.params, block_results(self.steps, self.texts, k))
            return _reply(call=(f"call_{k + 1}", step.tool, args))
        if self._next == len(self.steps):
            from toolshift.agents.policies import DONE_TEXT

            self._next += 1
            return _reply(DONE_TEXT)
        return _reply(call=("call_end", END_CONVERSATION, {}))
