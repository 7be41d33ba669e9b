"""Part 3 of the experiment, at the scale given: a model agent behind Steward's MCP front against the same model
on its domain's tools (the benchmark's own baseline for that model).

The Steward condition serves each episode's world through `StewardServer` over the in-memory MCP
transport. The harness makes the initial supply from the opening request before the model's first
turn (the seed's manager builds the task view; an MCP server never sees the user's message): the
tools of the top candidate plans and the top 3 tools retrieved directly, with `steward_plan`,
`retrieve_tools` and `explore_capabilities` for more. With the handoff (D196), the harness instead asks
Steward for the plan the request's words choose (what `steward_plan` answers) and hands its steps to the
model in the system prompt, with that plan's tools supplied and fixed for the episode (the three Steward
tools unlisted): the model need not know to ask, and cannot spend its turns asking. The model is
any of `toolshift run`'s (`embedded`, `openai:<m>`, `anthropic:<m>`). With `tasks` (held-out training
task ids, `steward eval --dev N --model M`), the rows run on those instead of the test split, in
RUN/dev/model/, so the handoff is chosen without reading test tasks.
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


def _opener(
    ctx: Context, domain: str, version: int, supply: Supply | None, request: str, exposed: set[str],
    handoff: bool = False,
):  # fmt: skip
    """The episode's world over in-memory MCP: behind `StewardServer` with `supply`, or (None) the
    domain's tools as the benchmark serves them. `handoff`: the chosen plan's steps lead the policy."""
    from mcp import Client

    from toolshift.steward.serve import StewardServer
    from toolshift.steward.skillmd import plan_brief
    from toolshift.world.mcp.serve import WorldServer

    @asynccontextmanager
    async def open_world() -> AsyncIterator[_Session]:
        world = ctx.worlds.world(domain, version)
        try:
            before = world.snapshot()
            spec = world.domain.spec
            policy = spec.policy or spec.description
            if supply is None:
                server: WorldServer = WorldServer(world, shared_state=True)
                ep = None
            else:
                server = StewardServer(world, supply, shared_state=True, steward_tools=not handoff)
                ep = server.gate.start(server.shared, request)
                if handoff:
                    view = ep.choose(request)
                    if view.plan is not None:  # first, so a prompt that clips the policy keeps it
                        policy = f"{plan_brief(view.plan)}\n\n{policy}"
                    else:  # no plan: the domain's own tools, as without Steward (D214)
                        server, ep = WorldServer(world, shared_state=True), None
                else:
                    ep.initial()
            async with Client(server.server, mode="legacy") as client:
                yield _Session(client, policy, spec.title, world, before)
            exposed.update(ep.exposed if ep is not None else (t.name for t in world.tools))
        finally:
            world.close()

    return open_world


def model_label(model: str, steward: bool, handoff: bool) -> str:
    """A part-3 row's name: `steward-plan-<model>` (the handoff), `steward-<model>`, `domain-<model>`."""
    name = model.replace(":", "_").replace("/", "_")
    return f"{'steward-plan' if handoff else 'steward'}-{name}" if steward else f"domain-{name}"


def model_steward(
    ctx: Context, model: str, *, sample: int, max_turns: int = 8, base_url: str | None = None,
    handoff: bool = True, tasks: set[str] | None = None, steward: bool = True,
) -> Path:  # fmt: skip
    """`model` behind Steward (incremental library) on `sample` test tasks × every version (with `tasks`,
    those training tasks instead; with `steward=False`, on the domain's tools, as the benchmark serves them)."""
    from toolshift.agents.config import RunConfig, check_model_spec, make_model
    from toolshift.agents.loop import EpisodeLimits, run_episode
    from toolshift.agents.users import ScriptedUser
    from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

    check_model_spec(model, "model")
    label = model_label(model, steward, handoff)
    folder = ctx.run / ("model" if tasks is None else "dev/model")
    path = folder / f"{label}.episodes.jsonl"
    config = RunConfig(world=str(ctx.build), model=model, max_turns=max_turns, base_url=base_url)
    meta = {"ecosystem": ctx.eco_id, "steward": label, "max_turns": max_turns}
    done = {e.id for e in iter_episodes(path, skip_bad=True)} if path.exists() else set()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta=meta)
    refs = ctx.refs("test", sample) if tasks is None else [r for r in ctx.refs("train") if r.task_id in tasks]

    async def go(writer: EpisodeWriter) -> None:
        for v in range(1, ctx.versions + 1):
            with Library.open(library_path(ctx, "incremental", v)) as lib:
                skills = lib.skills()
            for r in refs:
                if r.version != v:
                    continue
                task = ctx.tasks[r.task_id]
                eid = f"{label}:{task.id}:v{v}"
                if eid in done:
                    continue
                cat = ctx.catalog(v)
                domain_cat = Catalog(v, {n: t for n, t in cat.tools.items() if t.domain == task.domain})
                supply = Supply(skills, domain_cat) if steward else None
                exposed: set[str] = set()
                agent = make_model(model, config, seed=zlib.crc32(eid.encode()))
                opener = _opener(ctx, task.domain, v, supply, task.public_request, exposed, handoff)
                ep = await run_episode(
                    task, agent, ScriptedUser(task.public_request, task.instruction), opener,
                    episode_id=eid, limits=EpisodeLimits(max_turns=max_turns), agent_name=label,
                    source={"baseline": label, "criterion": "both"},
                )  # fmt: skip
                ep.ecosystem_version = f"{ctx.eco_id}/v{v}"
                ep.source["exposed_tools"] = sorted(exposed)
                writer.write(ep)

    with EpisodeWriter(path, meta=meta, append=True) as writer:
        asyncio.run(go(writer))
    return path


def model_dev(ctx: Context, model: str, tasks: set[str], *, max_turns: int = 8) -> list[Path]:
    """Part 3 on held-out training tasks: the model on domain tools, behind Steward, and behind Steward
    with the handoff — the rows the handoff was chosen by (D196)."""
    return [
        model_steward(ctx, model, sample=0, max_turns=max_turns, tasks=tasks, steward=False),
        model_steward(ctx, model, sample=0, max_turns=max_turns, tasks=tasks, handoff=False),
        model_steward(ctx, model, sample=0, max_turns=max_turns, tasks=tasks, handoff=True),
    ]


def model_domain_tools(ctx: Context, model: str, *, sample: int, max_turns: int = 8) -> Path:
    """The same model on its task's domain tools: the benchmark's baseline (`toolshift bench baseline`)."""
    from toolshift.bench.ecosystem.baselines import run_baseline

    return run_baseline(
        ctx.build, model, ctx.run / "model", split="test", sample=sample, seed=0, max_turns=max_turns,
        setting="domain-tools",
    )  # fmt: skip


__all__ = ["model_dev", "model_domain_tools", "model_label", "model_steward"]
