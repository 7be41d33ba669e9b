"""Run a plan's episodes as Ray tasks: same episodes, same file, same resume; the driver does all writing.

Each Ray task runs one episode with `asyncio.run` in a worker process and returns it as JSON; the
driver keeps at most `concurrency` in flight, appends each episode durably as it arrives, and
narrows the window when workers report rate limits. Workers import toolshift: on a real cluster
install the same version on every node (or pass a `runtime_env`); see docs/formats.md.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from toolshift.agents.loop import hung_episode
from toolshift.agents.runner import HUNG_GRACE, DurableLog, EpisodeListener, RunPlan, done_key, episode_id
from toolshift.traces.episode import Episode

_recorded_cache: dict[str, Any] = {}


def episode_in_worker(
    config_json: dict[str, Any], task_json: dict[str, Any], trial: int, key: str
) -> tuple[str, int]:
    """Worker side: run one episode; returns (episode JSON, rate limits seen)."""
    from toolshift.agents.config import RunConfig, load_recorded, make_agent, make_user
    from toolshift.agents.loop import run_episode
    from toolshift.agents.worlds import world_opener
    from toolshift.models import Task

    config = RunConfig.model_validate(config_json)
    task = Task.model_validate(task_json)
    rate_limits = 0

    def saw_rate_limit() -> None:
        nonlocal rate_limits
        rate_limits += 1

    recorded = None
    if config.model == "replay" and config.replay_from:
        if config.replay_from not in _recorded_cache:
            _recorded_cache[config.replay_from] = load_recorded(config.replay_from)
        recorded = _recorded_cache[config.replay_from]
    agent = make_agent(config, task, trial, recorded=recorded, on_rate_limit=saw_rate_limit)
    user = make_user(config, task, trial, on_rate_limit=saw_rate_limit)
    episode = asyncio.run(
        run_episode(
            task,
            agent,
            user,
            world_opener(config.world),
            episode_id=episode_id(key, task.id, trial),
            trial=trial,
            limits=config.limits(),
            source={"run": key, "executor": "ray"},
        )
    )
    return episode.model_dump_json(exclude_none=True), rate_limits


def connect(address: str | None, *, num_cpus: int | None = None) -> Any:
    """Join the cluster at `address`, or start a local one (this package put on the workers' path)."""
    import ray

    if ray.is_initialized():
        return ray
    if address:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    else:
        src = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            ignore_reinit_error=True,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    return ray


def run_ray(
    plan: RunPlan,
    *,
    concurrency: int = 4,
    address: str | None = None,
    num_cpus: int | None = None,
    on_episode: EpisodeListener | None = None,
) -> list[Episode]:
    """Run the plan's missing episodes on Ray; returns them in the order they finished."""
    ray = connect(address, num_cpus=num_cpus)
    remote = ray.remote(num_cpus=1, max_retries=2)(episode_in_worker)
    config_json = plan.config.model_dump(mode="json")
    key = plan.files.key
    pending = list(plan.todo)
    window = max(1, concurrency)
    in_flight: dict[Any, tuple[Any, int, float]] = {}
    done: list[Episode] = []
    meta = {"run": key, **config_json}
    deadline = plan.config.episode_timeout + HUNG_GRACE

    def record(episode: Episode, log: DurableLog) -> None:
        log.write(episode)
        plan.finished[done_key(episode)] = episode
        done.append(episode)
        if on_episode is not None:
            on_episode(episode)

    with DurableLog(plan.files.episodes, meta) as log:
        try:
            while pending or in_flight:
                while pending and len(in_flight) < window:
                    task, trial = pending.pop(0)
                    ref = remote.remote(config_json, task.model_dump(mode="json"), trial, key)
                    in_flight[ref] = (task, trial, time.monotonic())
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                if not ready:
                    now = time.monotonic()
                    for ref, (task, trial, started) in list(in_flight.items()):
                        if now - started > deadline:  # the worker stopped answering: kill it, record the hang
                            ray.cancel(ref, force=True)
                            del in_flight[ref]
                            hung = hung_episode(
                                task,
                                episode_id=episode_id(key, task.id, trial),
                                trial=trial,
                                agent_name=plan.config.model,
                                reason=f"the Ray task did not finish within {deadline:g} s",
                                seconds=now - started,
                            )
                            hung.source.update({"run": key, "executor": "ray"})
                            record(hung, log)
                    continue
                ref = ready[0]
                del in_flight[ref]
                text, rate_limits = ray.get(ref)
                if rate_limits:
                    window = max(1, window // 2)
                elif window < concurrency:
                    window += 1
                record(Episode.model_validate_json(text), log)
        finally:
            for ref in in_flight:
                ray.cancel(ref, force=True)
    return done
