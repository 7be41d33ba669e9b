"""The solver: N attempts at a verified task through the agent loop and user simulator of `toolshift run`.

Each attempt is one `toolshift.agents` episode on a fresh in-process world (with the task's starting
state applied first), judged by the world diff: it solves the task only by strict success — Δgold ⊆
Δagent and no collateral write (no change outside Δgold under the judge's renaming σ), since a solver
that breaks other records has not solved the task (D117). Its SR verdict (Δgold ⊆ Δagent) is kept beside. The episode runs on its own event
loop and thread (`run_isolated`), so its deadline is enforced from outside the call: an attempt whose
model or tool blocks is abandoned and recorded as a harness timeout, never waited for. Episodes are
appended and fsynced to the child's episode file as they finish, so an interrupted evaluation resumes
at the next attempt.

Models: `embedded`, `openai:<m>`, `anthropic:<m>` (the agents' backends), and the measuring
instrument `noisy-oracle:<q>`: the gold path, its first call always made and each later one kept with
probability q, the attempt ending at the first lost step — a scripted solver that completes a task of
L calls with probability q^(L−1) (one-call tasks always), for tests and calibration, never a model.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolshift.agents.config import RunConfig, check_model_spec, make_agent, make_user
from toolshift.agents.executor import Executor, Job, Lost, NodeProgress, lost_episode
from toolshift.agents.loop import EpisodeHung, EpisodeLimits, hung_episode, run_episode, run_isolated
from toolshift.agents.policies import DONE_TEXT, ScriptedCall, ScriptedPolicy, TurnScriptedPolicy
from toolshift.agents.runner import HUNG_GRACE, DurableLog, read_finished
from toolshift.agents.worlds import InProcessSession
from toolshift.errors import BadInputError
from toolshift.evolve.verify import VerifiedTask
from toolshift.models import Task
from toolshift.traces.episode import Episode

NOISY_ORACLE = "noisy-oracle"


class SolverConfig(BaseModel):
    """How tasks are attempted. Part of a run's configuration (`toolshift.evolve-run/1`)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "embedded"
    user: str = "scripted"
    attempts: int = Field(10, ge=1, le=100)
    max_turns: int = Field(8, ge=1)
    model_timeout: float = Field(120.0, gt=0)
    user_timeout: float = Field(120.0, gt=0)
    tool_timeout: float = Field(30.0, gt=0)
    episode_timeout: float = Field(600.0, gt=0)
    temperature: float | None = None
    base_url: str | None = None
    partial_credit: bool = False
    """Score an attempt that did not strictly succeed by its overlap with Δgold: the gold changes it made over
    Δgold's size plus its collateral changes (a perfect attempt is still a strict success)."""
    seed: int = 0
    concurrency: int = Field(1, ge=1, le=32)

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        if value.startswith(NOISY_ORACLE):
            noisy_oracle_rate(value)
            return value
        check_model_spec(value, role="model")
        if value in ("oracle", "replay"):
            raise ValueError("the solver is a model or the noisy-oracle instrument, not the plain oracle")
        return value

    @field_validator("user")
    @classmethod
    def _known_user(cls, value: str) -> str:
        check_model_spec(value, role="user")
        return value

    def run_config(self, domain: str) -> RunConfig:
        """The agents' run configuration these attempts use (its factories make the model and the user)."""
        model = "oracle" if self.model.startswith(NOISY_ORACLE) else self.model
        return RunConfig(
            world=domain,
            model=model,
            user=self.user,
            max_turns=self.max_turns,
            model_timeout=self.model_timeout,
            tool_timeout=self.tool_timeout,
            user_timeout=self.user_timeout,
            episode_timeout=self.episode_timeout,
            temperature=self.temperature,
            seed=self.seed,
            base_url=self.base_url,
        )


def noisy_oracle_rate(spec: str) -> float:
    _, _, rate = spec.partition(":")
    try:
        q = float(rate)
    except ValueError:
        raise BadInputError(f"{spec!r}: write noisy-oracle:<q> with q in (0, 1]", field="solver") from None
    if not 0.0 < q <= 1.0:
        raise BadInputError(f"{spec!r}: q must be in (0, 1]", field="solver")
    return q


def _kept_calls(task: Task, q: float, rng: random.Random) -> int:
    """How many gold calls the instrument makes: the first always, each later one with probability q."""
    n = 0
    for i in range(len(task.gold_path)):
        if i > 0 and rng.random() >= q:
            break
        n += 1
    return n


class NoisyOracle(ScriptedPolicy):
    """A measuring instrument: the gold path, cut at the first step lost (each after the first kept with
    probability q), so a task of L calls is completed with probability q^(L−1). Its closing text says
    what the task's judge requires said (τ²'s `communicate_info`), as the oracle's does."""

    def __init__(self, task: Task, q: float, rng: random.Random) -> None:
        n = _kept_calls(task, q, rng)
        calls = [ScriptedCall(c.tool, c.arguments) for c in task.gold_path[:n]]
        said = (task.criteria.communicate_info or []) if task.criteria is not None else []
        super().__init__(f"{NOISY_ORACLE}:{q:g}", calls, " ".join([DONE_TEXT, *said]))


class NoisyTurnOracle(TurnScriptedPolicy):
    """The instrument on a task with scripted user turns (BFCL): the same cut of the gold path, made turn
    by turn as the oracle makes it (later turns get no calls once a step is lost)."""

    def __init__(self, task: Task, q: float, rng: random.Random) -> None:
        super().__init__(f"{NOISY_ORACLE}:{q:g}", task)
        left = _kept_calls(task, q, rng)
        cut = []
        for turn in self.turns:
            cut.append(turn[:left])
            left = max(0, left - len(turn))
        self.turns = cut


class AttemptRecord(BaseModel):
    """One attempt as the archive keeps it (its episode is in the child's episode file)."""

    trial: int
    success: bool | None
    """The episode's SR verdict (Δgold ⊆ Δagent, or the world's own judge)."""
    strict_success: bool | None = None
    """Success and no collateral write: what solving the task means here (None: unjudged)."""
    collateral_changes: int | None = None
    collateral_rows: list[str] = []
    score: float | None
    tool_calls: int = 0
    turns: int = 0
    termination: str | None = None
    charged_to: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    seconds: float = 0.0


def attempt_record(episode: Episode, task: Task, partial_credit: bool) -> AttemptRecord:
    """One attempt judged by strict success (from its world diff, so episodes of older runs are judged alike)."""
    info = episode.outcome.info if episode.outcome else {}
    success = episode.outcome.success if episode.outcome else None
    score: float | None = None
    strict: bool | None = None
    collateral: list[str] = []
    changes: int | None = None
    if success is not None:
        verdict = task.verdict(episode.world_diff) if episode.world_diff is not None else None
        if verdict is not None:
            strict = bool(success) and not verdict.collateral
            changes, collateral = len(verdict.collateral), verdict.collateral_rows()
        else:  # judged without a diff (a world's own judge): its recorded strict verdict, if any
            recorded = info.get("strict_success")
            strict = bool(success) and (recorded is not False)
        score = 1.0 if strict else 0.0
        if not strict and partial_credit and verdict is not None and task.expected_changes:
            gold = len(task.expected_changes)
            score = (gold - len(verdict.missing)) / (gold + len(verdict.collateral))
    prompt = sum((m.usage.prompt_tokens or 0) for m in episode.messages if m.usage)
    completion = sum((m.usage.completion_tokens or 0) for m in episode.messages if m.usage)
    costs = [c for c in (episode.agent_cost, episode.user_cost) if c is not None]
    return AttemptRecord(
        trial=episode.trial,
        success=success,
        strict_success=strict,
        collateral_changes=changes,
        collateral_rows=collateral,
        score=score,
        tool_calls=int(info.get("tool_calls", 0) or 0),
        turns=int(info.get("turns", 0) or 0),
        termination=episode.termination_reason,
        charged_to=info.get("charged_to"),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=sum(costs) if costs else None,
        seconds=float(episode.duration or 0.0),
    )


def world_with_setup(domain: str, setup: list[tuple[str, dict[str, Any]]]) -> Callable[[], Any]:
    """An opener of fresh in-process worlds of `domain` with the starting-state calls applied first (called
    directly by the agent loop, D149)."""
    from toolshift.agents.worlds import in_process_client
    from toolshift.world import World, load_domain

    compiled = load_domain(domain)

    @asynccontextmanager
    async def open_world() -> AsyncIterator[InProcessSession]:
        world = World(compiled)
        try:
            for tool, args in setup:
                res = world.call(tool, args)
                if not res.ok:
                    raise RuntimeError(f"starting state {tool} failed: {res.error}")
            before = world.snapshot()
            async with in_process_client(world) as client:
                spec = compiled.spec
                yield InProcessSession(client, spec.policy or spec.description, spec.title, world, before)
        finally:
            world.close()

    return open_world


def _opener(verified: VerifiedTask) -> Callable[[], Any]:
    """Fresh worlds for the task's attempts: its own object world for a BFCL or AgentDojo task."""
    from toolshift.evolve.worlds import external_world, is_external_domain

    task = verified.task
    if is_external_domain(task.domain):
        from toolshift.agents.worlds import external

        return external(external_world(task))
    return world_with_setup(task.domain, verified.setup)


def _agent(config: SolverConfig, run: RunConfig, task: Task, trial: int) -> Any:
    if config.model.startswith(NOISY_ORACLE):
        rng = random.Random(f"{config.seed}:{task.id}:{task.fingerprint()}:{trial}")
        kind = NoisyTurnOracle if task.turns else NoisyOracle
        return kind(task, noisy_oracle_rate(config.model), rng)
    return make_agent(run, task, trial)


def solve(
    verified: VerifiedTask,
    config: SolverConfig,
    episodes_path: Path,
    *,
    on_attempt: Callable[[Episode], None] | None = None,
    executor: Executor | None = None,
    nodes: NodeProgress | None = None,
) -> list[Episode]:
    """The task's N episodes, in trial order: those already in `episodes_path`, then the missing ones (in this
    process, `config.concurrency` at a time, or with a Ray `executor` one Ray task per attempt)."""
    task = verified.task
    run = config.run_config(task.domain)
    finished = read_finished(episodes_path)
    have = {
        trial: e for (tid, trial, fp), e in finished.items() if tid == task.id and fp == task.fingerprint()
    }
    todo = [k for k in range(config.attempts) if k not in have]
    meta = {"task": task.id, "solver": config.model_dump(mode="json")}
    if todo and executor is not None and executor.is_ray:
        have.update(
            _attempts_elsewhere(verified, config, todo, episodes_path, meta, on_attempt, executor, nodes)
        )
    elif todo:
        opener = _opener(verified)
        new = asyncio.run(_attempts(task, config, run, opener, todo, episodes_path, meta, on_attempt))
        have.update(new)
    return [have[k] for k in range(config.attempts)]


def _open_attempts(spec: tuple[VerifiedTask, SolverConfig]) -> tuple[VerifiedTask, SolverConfig, Any]:
    verified, config = spec
    return verified, config, _opener(verified)


def _attempt(opened: tuple[VerifiedTask, SolverConfig, Any], trial: int) -> str:
    """One attempt in a worker (its deadline kept by the executor), as JSON."""
    verified, config, opener = opened
    task, run = verified.task, config.run_config(verified.task.domain)
    episode = asyncio.run(
        run_episode(
            task, _agent(config, run, task, trial), make_user(run, task, trial), opener, episode_id=f"{task.id}:{trial}",
            trial=trial, limits=run.limits(), harness="toolshift.evolve/1", source={"evolve": task.id},
        )
    )  # fmt: skip
    return episode.model_dump_json()


def _attempts_elsewhere(
    verified: VerifiedTask, config: SolverConfig, todo: list[int], path: Path, meta: dict[str, Any],
    on_attempt: Callable[[Episode], None] | None, executor: Executor, nodes: NodeProgress | None,
) -> dict[int, Episode]:  # fmt: skip
    """The attempts as Ray tasks; this process appends each as it arrives."""
    task = verified.task
    done: dict[int, Episode] = {}
    grace = min(HUNG_GRACE, max(1.0, config.episode_timeout / 2))
    path.parent.mkdir(parents=True, exist_ok=True)
    with DurableLog(path, meta) as log:

        def keep(episode: Episode) -> None:
            log.write(episode)
            done[episode.trial] = episode
            if on_attempt is not None:
                on_attempt(episode)

        def lost(trial: int, why: Lost) -> None:
            eid, name = f"{task.id}:{trial}", config.model
            if why.hung:
                keep(hung_episode(task, episode_id=eid, trial=trial, agent_name=name, reason=why.reason,
                                  seconds=why.seconds))  # fmt: skip
            else:
                keep(lost_episode(task, episode_id=eid, trial=trial, agent_name=name, lost=why))

        executor.run(
            Job(_open_attempts, _attempt, (verified, config), name=f"evolve {task.id}"), todo, key=str,
            on_result=lambda _t, text: keep(Episode.model_validate_json(text)), on_lost=lost, progress=nodes,
            deadline=config.episode_timeout + grace,
        )  # fmt: skip
    return done


async def _attempts(
    task: Task,
    config: SolverConfig,
    run: RunConfig,
    opener: Callable[[], Any],
    todo: list[int],
    path: Path,
    meta: dict[str, Any],
    on_attempt: Callable[[Episode], None] | None,
) -> dict[int, Episode]:
    gate = asyncio.Semaphore(config.concurrency)
    # the episode's own timeout gets the first chance; past this grace the attempt is abandoned from outside
    grace = min(HUNG_GRACE, max(1.0, config.episode_timeout / 2))
    done: dict[int, Episode] = {}
    limits: EpisodeLimits = run.limits()

    async def one(trial: int, log: DurableLog) -> None:
        async with gate:
            agent = _agent(config, run, task, trial)
            user = make_user(run, task, trial)
            eid = f"{task.id}:{trial}"
            started = time.perf_counter()
            try:
                episode = await run_isolated(
                    lambda: run_episode(
                        task, agent, user, opener, episode_id=eid, trial=trial, limits=limits,
                        harness="toolshift.evolve/1", source={"evolve": task.id},
                    ),
                    deadline=config.episode_timeout + grace,
                )  # fmt: skip
            except EpisodeHung as exc:
                episode = hung_episode(
                    task, episode_id=eid, trial=trial, agent_name=agent.name, reason=str(exc),
                    seconds=time.perf_counter() - started,
                )  # fmt: skip
        log.write(episode)
        done[trial] = episode
        if on_attempt is not None:
            on_attempt(episode)

    path.parent.mkdir(parents=True, exist_ok=True)
    with DurableLog(path, meta) as log:
        await asyncio.gather(*(one(k, log) for k in todo))
    return done
