"""What every skill method is given for one version, and the agent rollouts it may run (counted as maintenance).

A method maintains a library of Agent Skills (`toolshift.agents.skills.AgentSkill`): given its previous version's
library and the version's `Pool` — the training episodes every method gets (the pool's reference paths replayed
by Steward's `FactReplay` instrument, all strict successes), the pool's task ids, the validation task ids and the
version's catalog — it returns the next library. Everything it asks a model goes through `MethodModel.ask`
(`calls.py`); every episode it runs the agent for (training rollouts, validation scoring) goes through
`Rollouts.run`, which keeps each episode in the method's file by id (a resumed run does not run it again) and
whose agent tokens count as maintenance tokens.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.agents.skills import AgentSkill, SkillShelf, materialise, read_skills
from toolshift.models import Task
from toolshift.skillmethods.calls import MethodModel
from toolshift.traces.episode import Episode

MAX_SUMMARY = 700


@dataclass
class Pool:
    """One version's training material, the same for every method."""

    version: int
    train: list[str]
    episodes: list[Episode]
    val: list[str]
    tasks: dict[str, Task]
    tools: dict[str, dict[str, str]]
    """Domain → tool name → description, for the version's catalog."""
    gold: dict[str, list[str]] = field(default_factory=dict)
    """Training task → the tools its step-optimal reference path calls at this version (its ground truth)."""


def slug(text: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A spec-valid skill name from text (lowercase words joined by hyphens, ≤ 64), unique among `taken`."""
    words = re.findall(r"[a-z0-9]+", text.lower())[:6] or ["skill"]
    base = "-".join(words)[:56].strip("-") or "skill"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    return name


def summary(ep: Episode, task: Task | None = None, *, gold: bool = False, limit: int = MAX_SUMMARY) -> str:
    """An episode on a few lines: the request, each call and whether it failed, the outcome; with `gold`, the
    changes the task expected (the ground truth a training task may show)."""
    lines = []
    for m in ep.messages:
        if m.role == "user" and m.content:
            lines.append(f"Customer: {m.content[:160]}")
        elif m.role == "assistant":
            for c in m.tool_calls or []:
                args = ", ".join(f"{k}={v}" for k, v in (c.arguments or {}).items())[:120]
                lines.append(f"Agent called {c.name}({args})")
            if m.content and not m.tool_calls:
                lines.append(f"Agent: {m.content[:120]}")
        elif m.role == "tool":
            lines.append(f"  -> {'error: ' if m.error else ''}{(m.content or '')[:100]}")
    ok = ep.outcome.success if ep.outcome else None
    lines.append(f"Outcome: {'solved' if ok else 'not solved'}")
    if gold and task is not None:
        want = "; ".join(f"{c.op} {c.table} {c.field or ''}".strip() for c in task.expected_changes)[:200]
        lines.append(f"Expected changes: {want}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def strict(ep: Episode, task: Task) -> bool:
    """The verdict every method is scored by: Δgold ⊆ Δagent and nothing else written."""
    return bool(task.verdict(ep.world_diff or []).strict_success) if ep.world_diff is not None else False


def agent_tokens(episodes: list[Episode]) -> int:
    """Prompt + completion tokens of the agent's turns (the scripted user spends none)."""
    total = 0
    for ep in episodes:
        for m in ep.messages:
            if m.role == "assistant" and m.usage is not None:
                total += (m.usage.prompt_tokens or 0) + (m.usage.completion_tokens or 0)
    return total


@dataclass
class Rollouts:
    """The agent on training tasks of one version with a given library, for a method's own use."""

    run_episodes: Callable[[list[tuple[str, str, int, Path | None]]], list[Episode]]
    """(episode id, task id, version, library folder or None) jobs → their episodes (kept, resumed by id)."""
    scratch: Path
    label: str
    version: int
    spent: list[Episode] = field(default_factory=list)

    def run(self, name: str, task_ids: list[str], skills: list[AgentSkill]) -> list[Episode]:
        """The agent with `skills` on `task_ids`; `name` keeps this batch's episodes apart (ids `LABEL:NAME:TASK:vN`)."""
        folder = self.scratch / f"v{self.version}" / name
        if not (folder / ".done").exists():
            folder.mkdir(parents=True, exist_ok=True)
            materialise(skills, folder)
            (folder / ".done").write_text("")
        jobs = [(f"{self.label}:{name}:{t}:v{self.version}", t, self.version, folder) for t in task_ids]
        eps = self.run_episodes(jobs)
        self.spent += eps
        return eps


@dataclass
class Step:
    """What a method's version step is given: the model, the rollouts, the pool, and a seed."""

    model: MethodModel
    rollouts: Rollouts
    pool: Pool

    def seed(self, text: str) -> int:
        return zlib.crc32(f"{self.rollouts.label}:{self.pool.version}:{text}".encode())

    def score(self, episodes: list[Episode]) -> float:
        return sum(strict(e, self.pool.tasks[e.task_id]) for e in episodes) / max(1, len(episodes))


def load_library(folder: Path) -> list[AgentSkill]:
    return read_skills(folder) if folder.is_dir() else []


def save_library(skills: list[AgentSkill], folder: Path) -> None:
    """The library as a folder of skills, replaced whole (written beside, then renamed)."""
    import shutil

    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    materialise(skills, tmp)
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)


def shelf_of(folder: Path | None, label: str) -> SkillShelf | None:
    return SkillShelf.from_folder(folder, label=label) if folder is not None else None


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)


__all__ = [
    "Pool",
    "Rollouts",
    "Step",
    "agent_tokens",
    "load_library",
    "save_library",
    "slug",
    "strict",
    "summary",
]
