"""Part 3 of the experiment, at the scale given: a model agent behind Steward's MCP front against the same model
on its domain's tools (the benchmark's own baseline for that model).

The Steward condition serves each episode's world through `StewardServer` over the in-memory MCP
transport. The harness makes the initial supply from the opening request before the model's first
turn (the seed's manager builds the task view; an MCP server never sees the user's message): the
tools of the top candidate plans and the top 3 tools retrieved directly, with `steward_plan`,
`retrieve_tools` and `explore_capabilities` for more. The model is any of `toolshift run`'s
(`embedded`, `openai:<m>`, `anthropic:<m>`).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.steward.catalog import Catalog
from toolshift.steward.experiment import Context, library_path
from toolshift.steward.library import Library
from toolshift.steward.supply import Supply


@dataclass
class _Session:
    client: Any
    policy: str
    title: str
    world: Any
    before: Any

    async def diff(self, reported: Any) -> Any:
        return self.world.changes_since(self.before)


def _opener(ctx: Context, domain: str, version: int, supply: Supply, request: str, exposed: set[str]):
    from mcp import Client

    from toolshift.steward.serve import StewardServer

    @asynccontextmanager
    async def open_world() -> AsyncIterator[_Session]:
        world = ctx.worlds.world(domain, version)
        try:
            before = world.snapshot()
            server = StewardServer(world, supply, shared_state=True)
            ep = server.gate.start(server.shared, request)
            ep.initial()
            async with Client(server.server, mode="legacy") as client:
                spec = world.domain.spec
                yield _Session(client, spec.policy or spec.description, spec.title, world, before)
            exposed.update(ep.exposed)
        finally:
            world.close()

    return open_world


def model_steward(
    ctx: Context, model: str, *, sample: int, max_turns: int = 8, base_url: str | None = None
) -> Path:
    """`model` behind Steward (incremental library) on `sample` test tasks × every version."""
    from toolshift.agents.config import RunConfig, check_model_spec, make_model
    from toolshift.agents.loop import EpisodeLimits, run_episode
    from toolshift.agents.users import ScriptedUser
    from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

    check_model_spec(model)
    label = f"steward-{model.replace(':', '_').replace('/', '_')}"
    path = ctx.run / "model" / f"{label}.episodes.jsonl"
    config = RunConfig(world=str(ctx.build), model=model, max_turns=max_turns, base_url=base_url)
    meta = {"ecosystem": ctx.eco_id, "steward": label, "max_turns": max_turns}
    done = {e.id for e in iter_episodes(path, skip_bad=True)} if path.exists() else set()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta=meta)

    async def go(writer: EpisodeWriter) -> None:
        for v in range(1, ctx.versions + 1):
            with Library.open(library_path(ctx, "incremental", v)) as lib:
                skills = lib.skills()
            for r in ctx.refs("test", sample):
                if r.version != v:
                    continue
                task = ctx.tasks[r.task_id]
                eid = f"{label}:{task.id}:v{v}"
                if eid in done:
                    continue
                cat = ctx.catalog(v)
                domain_cat = Catalog(v, {n: t for n, t in cat.tools.items() if t.domain == task.domain})
                supply = Supply(skills, domain_cat)
                exposed: set[str] = set()
                agent = make_model(model, config, seed=zlib.crc32(eid.encode()))
                ep = await run_episode(
                    task, agent, ScriptedUser(task.public_request, task.instruction),
                    _opener(ctx, task.domain, v, supply, task.public_request, exposed),
                    episode_id=eid, limits=EpisodeLimits(max_turns=max_turns), agent_name=label,
                    source={"baseline": label, "criterion": "both"},
                )  # fmt: skip
                ep.ecosystem_version = f"{ctx.eco_id}/v{v}"
                ep.source["exposed_tools"] = sorted(exposed)
                writer.write(ep)

    with EpisodeWriter(path, meta=meta, append=True) as writer:
        asyncio.run(go(writer))
    return path


def model_domain_tools(ctx: Context, model: str, *, sample: int, max_turns: int = 8) -> Path:
    """The same model on its task's domain tools: the benchmark's baseline (`toolshift bench baseline`)."""
    from toolshift.bench.ecosystem.baselines import run_baseline

    return run_baseline(
        ctx.build, model, ctx.run / "model", split="test", sample=sample, seed=0, max_turns=max_turns,
        setting="domain-tools",
    )  # fmt: skip


__all__ = ["model_domain_tools", "model_steward"]
