"""The embedded agent's study runs: the tasks `toolshift report embedded` measures, and their episodes.

Running belongs to the agents room; the page drawn from these episodes is `toolshift.report.embedded`.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from toolshift.models import Task

MODELS = ("embedded", "embedded:recent")
NAMED = "one write, every value of it named by the user"
SAMPLE = {2: 5, 3: 5, 4: 2}
"""Test tasks sampled per gold-path length (besides the named ones), seeded."""
MAX_TURNS = 6
TRIALS = {"embedded": 3, "embedded:recent": 1}
"""Trials per task: the rule decodes the same tools as the model (same seeds), so one trial pairs with the
model's first; the machine's two shared cores set the budget."""
# -- which tasks ------------------------------------------------------------------------------------


def _writes(task: Task) -> list[Any]:
    """The gold path's writes, by the generated tools' verbs (`get_…`, or `pay_get_…` with a domain prefix)."""
    reads = ("get_", "list_", "search_", "find_")
    return [
        g for g in task.gold_path if not any(n.startswith(reads) for n in (g.tool, g.tool.split("_", 1)[-1]))
    ]


def names_every_value(task: Task) -> bool:
    """Every argument of the task's one write is a value the user holds (its facts, intent or request)."""
    said = " ".join(
        [task.public_request, task.instruction.intent, *map(str, task.instruction.facts.values())]
    )
    writes = _writes(task)
    return len(writes) == 1 and all(str(v) in said for v in writes[0].arguments.values())


@dataclass
class Picked:
    domain: str
    task: Task
    group: str


def select_tasks(build: Path, sample: dict[int, int] | None = None, seed: int = 0) -> list[Picked]:
    """Every test task with one write whose values the user names, and a seeded sample of the other test
    tasks by gold-path length."""
    from toolshift.taskfile import read_tasks

    sample = SAMPLE if sample is None else sample
    named: list[Picked] = []
    by_length: dict[int, list[Picked]] = defaultdict(list)
    for path in sorted((build / "domains").glob("*/tasks.jsonl")):
        for task in read_tasks(path):
            if task.split != "test":
                continue
            if names_every_value(task):
                named.append(Picked(path.parent.name, task, NAMED))
            else:
                by_length[len(task.gold_path)].append(Picked(path.parent.name, task, ""))
    rng = random.Random(seed)
    out = list(named)
    for length, n in sorted(sample.items()):
        pool = by_length.get(length, [])
        for p in rng.sample(pool, min(n, len(pool))):
            out.append(Picked(p.domain, p.task, f"{length} steps"))
    return out


# -- running the episodes ---------------------------------------------------------------------------


def run_episodes(
    build: Path, runs: Path, picked: list[Picked], *, trials: dict[str, int], console: Console
) -> dict[str, list[Any]]:
    """Episodes per model (resumable: each (model, domain) is a `toolshift run` folder)."""
    import asyncio

    from rich.progress import Progress

    from toolshift.agents.config import RunConfig
    from toolshift.agents.demo import demo_tasks
    from toolshift.agents.runner import plan_run, run_local

    groups: dict[str, list[Task]] = defaultdict(list)
    for p in picked:
        groups[p.domain].append(p.task)
    jobs = [("clinic", "clinic", demo_tasks())]
    jobs += [(d, str(build / "domains" / d / "spec.yaml"), tasks) for d, tasks in sorted(groups.items())]
    out: dict[str, list[Any]] = {m: [] for m in MODELS}

    def plan(model: str, domain: str, world: str, tasks: list[Task]) -> Any:
        config = RunConfig(world=world, model=model, max_turns=MAX_TURNS)
        return plan_run(config, tasks, trials[model], runs / model.replace(":", "-") / domain)

    todo = sum(len(plan(m, *j).todo) for m in MODELS for j in jobs)
    console.print(f"embedded episodes: {todo} to run")
    with Progress(console=console) as bar:
        job = bar.add_task("episodes", total=todo)
        for model in MODELS:
            for domain, world, tasks in jobs:
                current = plan(model, domain, world, tasks)  # planned now: another process may have run some
                if current.todo:
                    asyncio.run(run_local(current, concurrency=1, on_episode=lambda _e: bar.advance(job)))
                out[model] += current.current_episodes()
    return out
