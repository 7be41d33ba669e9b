"""The task instances a framework's evaluation holds (one sample each), each run through toolshift's episode core.

An instance is one task of one source — a Δτ-Bench task at one ecosystem version and setting, a τ²-bench
airline or retail task, a task of a built-in world — with `run(agent, seed)`: one whole episode of that task
with the given agent (a chat model or an agent that owns its loop, `toolshift.agents.outside`), through
exactly the code `toolshift run` and `toolshift bench baseline` use (`run_episode`, `run_planned`): the same
world, user simulator, limits and judge. Integrations (inspect_ai, verifiers) only say who the agent is.
`oracle_task` is the task whose gold path the oracle follows on this instance (for Δτ-Bench, the version's
reference path with the setting's tool searches), so `ConversationOracle(oracle_task)` is the plumbing check.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.agents.config import RunConfig, make_user
from toolshift.errors import BadInputError
from toolshift.models import Task
from toolshift.traces.episode import Episode

Runner = Callable[[Any, int], Awaitable[Episode]]
"""`run(agent, seed)`: one judged episode of the instance with this agent (the seed drives a model user)."""


@dataclass
class Instance:
    """One task instance: a sample of an inspect task, a row of a verifiers environment."""

    id: str
    task: Task
    oracle_task: Task
    run: Runner
    metadata: dict[str, Any] = field(default_factory=dict)
    scores: Callable[[Episode], dict[str, float]] | None = None
    """The instance's metrics beyond the verdict (Δτ-Bench: tool P/R/F1 and SPE against its reference)."""


def seed_of(instance_id: str, trial: int = 0) -> int:
    return zlib.crc32(f"{instance_id}:{trial}".encode())


def delta_tau(
    build: str | Path,
    *,
    version: int,
    setting: str = "standard",
    split: str | None = "test",
    sample: int | None = None,
    seed: int = 0,
    user: str = "scripted",
    max_turns: int = 30,
    label: str = "inspect",
) -> list[Instance]:
    """Δτ-Bench's task instances of one version and setting: the instances `toolshift bench baseline` runs
    (the same split, the same seeded `--sample` of tasks), each episode run by `run_planned` as it runs them."""
    from toolshift.bench.ecosystem.baselines import (
        RunSetting,
        VersionCatalogs,
        _as_gold,
        _plan_run,
        run_planned,
        with_searches,
    )
    from toolshift.bench.ecosystem.evaluate import instance_reference
    from toolshift.bench.ecosystem.paths import load_references
    from toolshift.bench.ecosystem.settings import check_setting
    from toolshift.bench.ecosystem.store import load_history
    from toolshift.bench.metrics import agent_path, score_instance

    check_setting(setting)
    eco, worlds, planned = _plan_run(build, label, split, sample, seed)
    if not 1 <= version <= eco.config.versions:
        raise BadInputError(
            f"ecosystem {eco.id} has versions 1..{eco.config.versions}, not {version}", field="version"
        )
    _, records = load_references(build)
    refs = {(r.task_id, r.version): r for r in records}
    versions = VersionCatalogs(worlds, list(eco.domains))
    run = RunSetting(setting=setting, user=user, max_turns=max_turns)
    config = RunConfig(world=str(worlds.build), model="oracle", user=user, max_turns=max_turns)
    costs: dict[str, dict[str, float]] = {}

    def cost_table(domain: str) -> dict[str, float]:
        if domain not in costs:
            costs[domain] = next(
                e.costs for e in load_history(build, domain).versions if e.version == version
            )
        return costs[domain]

    out = []
    for p in sorted((p for p in planned if p.version == version), key=lambda p: p.task.id):
        calls = p.calls if p.calls is not None else (p.reference.step.calls if p.reference.step else [])
        script = with_searches(calls) if setting == "standard" else calls
        oracle_task = p.task.model_copy(update={"gold_path": _as_gold(script)})

        def runner(agent: Any, episode_seed: int, p: Any = p) -> Awaitable[Episode]:
            user_sim = make_user(config.model_copy(update={"seed": episode_seed}), p.task, 0)
            return run_planned(p, agent, user_sim, worlds, eco.id, versions, run, label)

        def scores(ep: Episode, p: Any = p) -> dict[str, float]:
            path = agent_path(ep, p.task.expected_changes, cost_table(p.task.domain), p.task.generated_values)
            s = score_instance(instance_reference(refs, p.task.id, version), path)
            return {
                "P": s.precision,
                "R": s.recall,
                "F1": s.f1,
                "Step-SPE": s.step_spe,
                "Cost-SPE": s.cost_spe,
            }

        out.append(
            Instance(
                id=f"{p.task.id}:v{version}",
                task=p.task,
                oracle_task=oracle_task,
                run=runner,
                metadata={
                    "ecosystem": eco.id,
                    "version": version,
                    "setting": setting,
                    "domain": p.task.domain,
                },
                scores=scores,
            )
        )
    return out


def world_tasks(
    world: str,
    tasks: list[Task],
    *,
    user: str = "scripted",
    max_turns: int = 30,
    label: str = "inspect",
) -> list[Instance]:
    """Tasks of a world `toolshift run --world` names (a built-in domain, `tau2-airline`, a URL, …), each
    episode run by `run_episode` with the world, user and limits `toolshift run` gives it."""
    from toolshift.agents.loop import run_episode
    from toolshift.agents.worlds import world_opener

    config = RunConfig(world=world, model="oracle", user=user, max_turns=max_turns)
    opener = world_opener(world)
    out = []
    for task in tasks:

        def runner(agent: Any, episode_seed: int, task: Task = task) -> Awaitable[Episode]:
            user_sim = make_user(config.model_copy(update={"seed": episode_seed}), task, 0)
            return run_episode(
                task, agent, user_sim, opener, episode_id=f"{label}:{task.id}:0",
                limits=config.limits(), source={"world": world},
            )  # fmt: skip

        out.append(
            Instance(
                id=task.id,
                task=task,
                oracle_task=task,
                run=runner,
                metadata={"world": world, "domain": task.domain},
            )
        )
    return out


def tau2(domain: str, *, split: str | None = None, limit: int | None = None, **kwargs: Any) -> list[Instance]:
    """τ²-bench's airline or retail tasks (`toolshift.world.tau2`), judged by τ²'s reward as `toolshift run`
    judges them on the `tau2-<domain>` world; `split`: τ²'s own train/test split."""
    from toolshift.world.tau2.tasks import import_tasks

    if domain not in ("airline", "retail"):
        raise BadInputError(f"τ²-bench domain must be airline or retail, not {domain!r}", field="domain")
    report = import_tasks(
        f"tau2-{domain}"
    )  # tasks whose expected actions include failing calls are τ²'s own: kept
    tasks = [t for t in report.tasks if split is None or t.split == split]
    return world_tasks(f"tau2-{domain}", tasks[:limit] if limit else tasks, **kwargs)


def task_file(world: str, tasks: str | Path, *, limit: int | None = None, **kwargs: Any) -> list[Instance]:
    """The tasks of a task file (`toolshift.tasks/1`) on a world, as `toolshift run --world W --tasks F`."""
    from toolshift.taskfile import read_tasks

    found = read_tasks(tasks)
    return world_tasks(world, found[:limit] if limit else found, **kwargs)
