"""One episode of the loop: the agent on one task at one version, through an in-process gateway.

The gateway is built from a `toolshift.gateway/1` config exactly as `toolshift gateway serve` builds it (a
build backend, i.e. the version middleware, and the record middleware; Steward's and the flows' when the
loop has a library or a flow for this version) and reached over an in-memory MCP client, as
`toolshift.gateway.liveflows` does. Each episode gets its own record folder, so the recording of a
session is known to be this task's; the agent's own episode (its conversation) is returned beside it.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.models import Task
from toolshift.traces.episode import Episode


@dataclass(frozen=True)
class Served:
    """What the gateway mounts for one version of one condition."""

    library: Path | None = None
    """A Steward library (the steward middleware), or None."""
    flow: Path | None = None
    catalog: Path | None = None
    """A flow and the catalog it was learned for (the flows middleware), or None."""


def gateway_config(
    build: Path, task: Task, version: int, served: Served, record: Path, agent: str, handoff: bool = False
) -> Any:
    """The gateway for one episode, as `toolshift gateway serve --build … --record … [--steward] [--flow]` makes it;
    `handoff`: the harness asks `steward_plan` itself, so Steward's tools are not listed to the model."""
    from toolshift.gateway.config import GatewayConfig

    fields: dict[str, Any] = {
        "backends": [{"name": task.domain, "build": str(build), "domain": task.domain, "version": version}],
        "middleware": ["record"],
        "record": {"out": str(record), "agent": agent, "domain": task.domain},
    }
    if served.library is not None:
        fields["middleware"].insert(0, "steward")
        fields["steward"] = {"library": str(served.library), "list_tools": not handoff}
    if served.flow is not None and served.catalog is not None:
        fields["middleware"].append("flows")
        fields["flows"] = {"flow": str(served.flow), "catalog": str(served.catalog), "decider": "reach"}
    return GatewayConfig(**fields)


def make_loop_agent(
    model: str, task: Task, *, max_turns: int, seed: int, max_tokens: int | None = None
) -> tuple[Any, Any, Any]:
    """(agent, user, run configuration) for one episode: the plan-following instrument, or any model `toolshift run` takes."""
    from toolshift.agents.config import RunConfig, make_agent, make_user
    from toolshift.loop.instrument import INSTRUMENT, PlanFollower

    base_url = os.environ.get("TOOLSHIFT_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    run = RunConfig(
        world=task.domain, model="oracle" if model == INSTRUMENT else model, max_turns=max_turns,
        temperature=0.0, seed=seed, base_url=base_url if model.startswith("openai:") else None,
        **({"result_chars": 200_000} if model == INSTRUMENT else {}),
        **({"max_tokens": max_tokens} if max_tokens is not None else {}),
    )  # fmt: skip
    # the instrument reads Steward's plans as JSON: results reach it whole (a model's are cut as `toolshift run` cuts)
    agent = PlanFollower(task) if model == INSTRUMENT else make_agent(run, task, 0)
    return agent, make_user(run, task, 0), run


async def serve_episode(
    build: Path, task: Task, version: int, served: Served, record: Path, *, model: str, episode_id: str,
    max_turns: int = 12, seed: int = 0, max_tokens: int | None = None, handoff: bool = True,
) -> tuple[Episode, Episode | None, float]:  # fmt: skip
    """(the agent's episode, the gateway's recording of it or None, wall seconds). `record` is emptied first.

    With a library and `handoff` (a model, not the instrument, which asks Steward itself), the harness calls
    `steward_plan` with the opening request before the model's first turn and puts the plan's facts and
    steps at the head of the policy (D196); the call is answered by the steward middleware, so the
    recording does not hold it."""
    from mcp import Client

    from toolshift.agents.loop import run_episode
    from toolshift.agents.worlds import RemoteSession
    from toolshift.gateway.build import build_gateway, prepare
    from toolshift.gateway.server import GatewayServer
    from toolshift.traces.store import iter_episodes

    if record.exists():
        shutil.rmtree(record)  # a recording without its agent episode (a run killed between the two)
    record.mkdir(parents=True)
    from toolshift.loop.instrument import INSTRUMENT

    agent, user, run = make_loop_agent(model, task, max_turns=max_turns, seed=seed, max_tokens=max_tokens)
    handoff = handoff and served.library is not None and model != INSTRUMENT
    gateway = build_gateway(gateway_config(build, task, version, served, record, model, handoff))
    await prepare(gateway)
    server = GatewayServer(gateway)
    from toolshift.bench.ecosystem.store import compiled_domain

    spec = compiled_domain(build, task.domain).spec  # the system prompt's policy; the world is the gateway's
    policy, title = spec.policy or spec.description, spec.title

    handed: dict[str, Any] = {}

    @asynccontextmanager
    async def open_world() -> AsyncIterator[Any]:
        async with Client(server.server, mode="legacy") as client:
            prompt = policy
            if handoff:
                # the SDK warns that an unlisted tool's result cannot be checked: this one is unlisted by design
                sdk_log = logging.getLogger("client")
                level = sdk_log.level
                sdk_log.setLevel(logging.ERROR)
                try:
                    answer = await client.call_tool("steward_plan", {"request": task.public_request})
                finally:
                    sdk_log.setLevel(level)
                plan = answer.structured_content
                if plan and plan.get("steps"):
                    from toolshift.steward.skillmd import steps_brief

                    handed.update(plan=plan.get("plan"), steps=len(plan["steps"]))
                    prompt = f"{steps_brief(plan['steps'])}\n\n{policy}"
            yield RemoteSession(client, prompt, title)

    started = time.perf_counter()
    async with gateway.running():
        episode = await run_episode(
            task, agent, user, open_world, episode_id=episode_id, limits=run.limits(),
            agent_name=agent.name if isinstance(agent, _plan_follower()) else model,
        )  # fmt: skip
    seconds = time.perf_counter() - started
    for m in gateway.middleware:
        flush = getattr(m, "flush_close", None)
        if flush is not None:
            flush()
    path = record / f"{task.domain}.episodes.jsonl"
    recorded = list(iter_episodes(path)) if path.exists() else []
    if handoff:
        episode.source["handoff"] = handed or None  # None: Steward had no plan for the request
    if isinstance(agent, _plan_follower()):
        episode.source["followed"] = agent.followed
        episode.source["plan"] = agent.plan_id
    return episode, (recorded[-1] if recorded else None), seconds


def _plan_follower() -> type:
    from toolshift.loop.instrument import PlanFollower

    return PlanFollower
