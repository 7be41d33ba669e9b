"""Run tasks × trials of one configuration, concurrently, appending each finished episode durably.

Layout of a run folder (see docs/formats.md, "Agent runs"):

    OUT/run-<key>.json                  the configuration (toolshift.run/1) and its key
    OUT/run-<key>.episodes.jsonl        toolshift.episodes/1: header, then one Episode a line
    OUT/run-<key>.results.json          the last results summary

The key is the configuration's hash, so a changed configuration writes new files and is never
mixed with old episodes. An episode is done when the file holds one with the same task id, trial
and task fingerprint; re-running the same command runs only what is missing.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolshift.agents.config import (
    RunConfig,
    load_recorded,
    make_agent,
    make_user,
)
from toolshift.agents.loop import EpisodeHung, hung_episode, open_for, run_episode, run_isolated
from toolshift.agents.retry import AdaptiveLimiter
from toolshift.agents.worlds import listed_tools, world_opener
from toolshift.errors import BadInputError
from toolshift.fileio import read_json, write_text_atomic
from toolshift.models import Task
from toolshift.traces.episode import Episode
from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

EpisodeListener = Callable[[Episode], None]
HUNG_GRACE = 30.0
"""Seconds past the episode timeout after which an episode whose loop stopped answering is abandoned."""


@dataclass
class RunFiles:
    folder: Path
    key: str

    @property
    def config(self) -> Path:
        return self.folder / f"run-{self.key}.json"

    @property
    def episodes(self) -> Path:
        return self.folder / f"run-{self.key}.episodes.jsonl"

    @property
    def results(self) -> Path:
        return self.folder / f"run-{self.key}.results.json"


def episode_id(key: str, task_id: str, trial: int) -> str:
    return f"{key}:{task_id}:{trial}"


def done_key(episode: Episode) -> tuple[str, int, str]:
    return (episode.task_id, episode.trial, str(episode.source.get("task_fingerprint", "")))


def read_finished(path: Path) -> dict[tuple[str, int, str], Episode]:
    """Episodes already in a run file, by (task id, trial, task fingerprint).

    The store's one rule for its lines: a torn last line (a kill mid-append) is not done; a bad line
    anywhere else is refused, naming it, rather than silently run again beside it.
    """
    if not path.exists():
        return {}
    found: dict[tuple[str, int, str], Episode] = {}
    try:
        for episode in iter_episodes(path):
            found[done_key(episode)] = episode
    except BadInputError as exc:
        if not isinstance(exc.record, int):
            raise
        raise BadInputError(
            f"{exc.detail}; repair or delete that line to resume (its episode is then run again)",
            source=exc.source,
            record=exc.record,
            field=exc.field,
        ) from None
    return found


class DurableLog:
    """Appends episodes to the run file, flushed and fsynced one by one: a kill loses nothing finished."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        if not path.exists():
            write_episodes(path, [], meta=meta)
        self._writer = EpisodeWriter(path, append=True)

    def __enter__(self) -> DurableLog:
        self._writer.__enter__()
        return self

    def write(self, episode: Episode) -> None:
        self._writer.write(episode)
        self._writer.sync()

    def __exit__(self, *exc: object) -> None:
        self._writer.__exit__(*exc)


@dataclass
class RunPlan:
    """What a run will do: the configuration, the tasks, and which (task, trial) pairs are still to run."""

    config: RunConfig
    tasks: list[Task]
    trials: int
    files: RunFiles
    todo: list[tuple[Task, int]]
    finished: dict[tuple[str, int, str], Episode] = field(default_factory=dict)
    created: bool = False
    """This plan wrote the run's configuration (a new run, not a resumed one)."""

    def discard_if_empty(self) -> bool:
        """Remove a new run's configuration and episode file when no episode was written (a run that failed
        before its first episode, such as a refused API key, leaves nothing behind); True when removed."""
        if not self.created or self.finished or read_finished(self.files.episodes):
            return False
        for path in (self.files.config, self.files.episodes):
            path.unlink(missing_ok=True)
        return True

    def current_episodes(self) -> list[Episode]:
        """The run file's episodes for these tasks as they are now (stale task versions left out)."""
        wanted = {(t.id, k, t.fingerprint()) for t in self.tasks for k in range(self.trials)}
        return [e for key, e in self.finished.items() if key in wanted]


def plan_run(config: RunConfig, tasks: list[Task], trials: int, out: Path) -> RunPlan:
    if trials < 1:
        raise BadInputError("--trials must be at least 1", field="trials")
    files = RunFiles(Path(out), config.key())
    files.folder.mkdir(parents=True, exist_ok=True)
    created = not files.config.exists()
    if not created:
        stored = read_json(files.config, what="run configuration")
        if not isinstance(stored, dict) or stored.get("config") != config.stored():
            raise BadInputError(
                "run file holds a different configuration under the same key", source=str(files.config)
            )
    else:
        write_text_atomic(
            files.config,
            json.dumps(
                {
                    "format": "toolshift.run/1",
                    "key": files.key,
                    "created": datetime.now(UTC).isoformat(timespec="seconds"),
                    "config": config.stored(),
                },
                indent=2,
            )
            + "\n",
        )
    finished = read_finished(files.episodes)
    todo = [(t, k) for t in tasks for k in range(trials) if (t.id, k, t.fingerprint()) not in finished]
    return RunPlan(config, tasks, trials, files, todo, finished, created=created)


def check_models(config: RunConfig, tasks: list[Task]) -> None:
    """Build the agent's and the user's API model clients once, so a missing key fails before anything is
    written (`ModelConfigError`); no request is made, and local models (embedded) are not loaded here."""
    if not tasks:
        return
    for spec in (config.model, config.user):
        if spec.split(":", 1)[0] in ("openai", "anthropic"):
            from toolshift.agents.config import make_model

            make_model(spec, config, seed=0)


async def run_local(
    plan: RunPlan,
    *,
    concurrency: int = 4,
    on_episode: EpisodeListener | None = None,
) -> list[Episode]:
    """Run the plan's missing episodes in this process with asyncio, at most `concurrency` at a time."""
    config = plan.config
    limiter = AdaptiveLimiter(concurrency)
    recorded = load_recorded(config.replay_from) if config.model == "replay" and config.replay_from else None
    if config.model == "replay" and recorded is None:
        raise BadInputError("--model replay needs --replay-from EPISODES_FILE", field="replay_from")
    opener = world_opener(config.world)
    shelf = skill_shelf(config)
    done: list[Episode] = []

    async def one(task: Task, trial: int, log: DurableLog) -> None:
        async with limiter:
            # A fresh model client per episode: each episode runs on its own event loop (run_isolated).
            agent = make_agent(config, task, trial, recorded=recorded, on_rate_limit=limiter.rate_limited)
            user = make_user(config, task, trial, on_rate_limit=limiter.rate_limited)
            eid = episode_id(plan.files.key, task.id, trial)
            started = time.perf_counter()
            try:
                episode = await run_isolated(
                    lambda: run_episode(
                        task,
                        agent,
                        user,
                        opener,
                        episode_id=eid,
                        trial=trial,
                        limits=config.limits(),
                        source={"run": plan.files.key},
                        skills=shelf,
                    ),
                    deadline=config.episode_timeout + HUNG_GRACE,
                )
            except EpisodeHung as exc:
                episode = hung_episode(
                    task, episode_id=eid, trial=trial, agent_name=agent.name, reason=str(exc),
                    seconds=time.perf_counter() - started,
                )  # fmt: skip
                episode.source["run"] = plan.files.key
        log.write(episode)
        plan.finished[done_key(episode)] = episode
        done.append(episode)
        if on_episode is not None:
            on_episode(episode)

    with DurableLog(plan.files.episodes, {"run": plan.files.key, **config.stored()}) as log:
        jobs = [asyncio.create_task(one(task, trial, log)) for task, trial in plan.todo]
        try:
            await asyncio.gather(*jobs)
        finally:
            for job in jobs:
                job.cancel()
    return done


def skill_shelf(config: RunConfig) -> Any:
    """The run's Agent Skills (`--skills DIR`), read once, or None."""
    if not config.skills:
        return None
    from toolshift.agents.skills import SkillShelf

    return SkillShelf.from_folder(config.skills)


ORACLE_CHECK_FORMAT = "toolshift.oracle-check/1"


async def find_invalid_tasks(world: str, tasks: list[Task], folder: Path | None = None) -> set[str]:
    """Tasks whose expected changes the oracle (their gold path) cannot produce on a fresh world.

    Results are cached in `folder/oracle-check.json` by world and task fingerprint. A world whose
    diff is unknown (a remote server that does not report changes) marks no task invalid.
    """
    from toolshift.agents.policies import oracle
    from toolshift.agents.users import ScriptedUser, user_for_task

    cache_path = folder / "oracle-check.json" if folder is not None else None
    cache: dict[str, Any] = {"format": ORACLE_CHECK_FORMAT, "worlds": {}}
    if cache_path is not None and cache_path.exists():
        try:
            loaded = read_json(cache_path, what="oracle check cache")
        except BadInputError:
            loaded = None  # an unreadable cache is only a cache: every task is checked again
        worlds = loaded.get("worlds") if isinstance(loaded, dict) else None
        if isinstance(worlds, dict) and loaded.get("format") == ORACLE_CHECK_FORMAT:
            cache = {
                "format": ORACLE_CHECK_FORMAT,
                "worlds": {w: v for w, v in worlds.items() if isinstance(v, dict)},
            }
    known: dict[str, bool] = cache["worlds"].setdefault(world, {})
    opener = world_opener(world)
    for task in tasks:
        fingerprint = task.fingerprint()
        if fingerprint in known:
            continue
        episode = await run_episode(
            task,
            oracle(task),
            user_for_task(task) or ScriptedUser(task.public_request, task.instruction),
            opener,
            episode_id="oracle-check",
        )
        success = episode.outcome.success if episode.outcome else None
        known[fingerprint] = success is not False
    if cache_path is not None:
        write_text_atomic(cache_path, json.dumps(cache, indent=1) + "\n")
    return {t.id for t in tasks if not known[t.fingerprint()]}


async def write_catalog(
    world: str, domains: set[str], folder: Path, tasks: list[Task] | None = None
) -> list[Path]:
    """Save the world's tool catalog (from its MCP listing) beside the episodes, one file per task domain,
    so `toolshift traces stats` can tell reads from writes; `end_conversation` is labelled `neither`.

    For a family of per-task worlds (`bfcl`, `agentdojo`) a domain's catalog is the union of its tasks'
    worlds' tools, read from their definitions."""
    from toolshift.agents.users import END_CONVERSATION
    from toolshift.traces.catalog import catalog_from_mcp_tools, catalog_path, save_catalog

    opener = world_opener(world)
    if getattr(opener, "per_task", False):
        from toolshift.world.external import load_external

        by_domain: dict[str, dict[str, Any]] = {}
        for task in tasks or []:
            for tool in load_external(opener.world_for(task)).tools:  # type: ignore[attr-defined]
                by_domain.setdefault(task.domain, {}).setdefault(tool.name, tool)
        return [
            save_catalog(
                catalog_from_mcp_tools(
                    d,
                    list(by_domain.get(d, {}).values()),
                    neither=[END_CONVERSATION],
                    source=f"tools of {world}",
                ),
                catalog_path(folder, d),
            )
            for d in sorted(domains)
        ]
    async with open_for(opener, tasks[0]) if tasks else opener() as session:
        listed = await listed_tools(session)
    written = []
    for domain in sorted(domains):
        catalog = catalog_from_mcp_tools(
            domain, listed, neither=[END_CONVERSATION], source=f"MCP listing of {world}"
        )
        written.append(save_catalog(catalog, catalog_path(folder, domain)))
    return written
