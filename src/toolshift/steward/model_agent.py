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

from toolshift.agents.assets import Asset
from toolshift.agents.executor import Executor, Job, Lost, lost_episode
from toolshift.steward.catalog import Catalog
from toolshift.steward.experiment import Context, keep_context, library_path, opened_context
from toolshift.steward.library import Library
from toolshift.steward.supply import Supply
from toolshift.traces.episode import Episode


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


def model_label(model: str, steward: bool, handoff: bool, library: str = "incremental") -> str:
    """A part-3 row's name: `steward-plan-<model>` (the handoff), `steward-<model>`, `domain-<model>`; with
    another library than the incremental one, its kind after `plan` (`steward-plan-frozen-<model>`)."""
    name = model.replace(":", "_").replace("/", "_")
    if not steward:
        return f"domain-{name}"
    kind = "" if library == "incremental" else f"-{library}"
    return f"{'steward-plan' if handoff else 'steward'}{kind}-{name}"


MODEL_ROWS: dict[str, dict[str, Any]] = {
    "plan": {"handoff": True},
    "ask": {"handoff": False},
    "plan-full": {"handoff": True, "library": "full"},
    "plan-frozen": {"handoff": True, "library": "frozen"},
    "domain": {"steward": False},
}
"""`steward eval --model-rows`: the handoff with the incremental library, the model left to ask, the handoff
with the full-rebuild or the frozen (v1) library, and the model on its domain's tools (No Skill)."""


def model_steward(
    ctx: Context, model: str, *, sample: int, max_turns: int = 8, base_url: str | None = None,
    handoff: bool = True, tasks: set[str] | None = None, steward: bool = True, workers: int = 1,
    library: str = "incremental", command: str = "",
) -> Path:  # fmt: skip
    """`model` behind Steward (the `library` kind's library of each version) on `sample` test tasks × every
    version (with `tasks`, those training tasks instead; with `steward=False`, on the domain's tools, as the
    benchmark serves them). The episodes run where `ctx.executor` says (`workers` > 1: that many local
    processes), same file. `command`, the command line that asked for the row, goes in
    the file's header, so a file kept beside its page says how to resume it (docs/results/episodes)."""
    from toolshift.agents.config import check_model_spec
    from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

    check_model_spec(model, "model")
    label = model_label(model, steward, handoff, library)
    folder = ctx.run / ("model" if tasks is None else "dev/model")
    path = folder / f"{label}.episodes.jsonl"
    meta = {"ecosystem": ctx.eco_id, "steward": label, "max_turns": max_turns, "command": command}
    done = {e.id for e in iter_episodes(path, skip_bad=True)} if path.exists() else set()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta=meta)
    refs = ctx.refs("test", sample) if tasks is None else [r for r in ctx.refs("train") if r.task_id in tasks]
    todo = [
        (r.task_id, v)
        for v in range(1, ctx.versions + 1)
        for r in refs
        if r.version == v and f"{label}:{r.task_id}:v{v}" not in done
    ]
    row = _Row(str(ctx.build), str(ctx.run), model, label, max_turns, base_url, handoff, steward, library)
    if not todo:
        return path
    executor = _executor(ctx, workers)
    keep_context(ctx)
    libraries = (
        {v: executor.asset(library_path(ctx, library, v)) for v in sorted({v for _, v in todo})}
        if steward
        else {}
    )
    spec = _RowSpec(row, executor.asset(ctx.build), libraries)
    with EpisodeWriter(path, meta=meta, append=True) as writer:

        def lost(item: tuple[str, int], why: Lost) -> None:
            task_id, v = item
            ep = lost_episode(ctx.tasks[task_id], episode_id=f"{label}:{task_id}:v{v}", trial=0, agent_name=label,
                              lost=why)  # fmt: skip
            ep.ecosystem_version = f"{ctx.eco_id}/v{v}"
            ep.source.update({"baseline": label, "criterion": "both"})
            writer.write(ep)

        executor.run(
            Job(_open_row, _run_row_item, spec, name=f"steward {label}"), todo, key=lambda i: f"{i[0]}:v{i[1]}",
            on_result=lambda _i, text: writer.write(Episode.model_validate_json(text)), on_lost=lost,
            progress=ctx.nodes,
        )  # fmt: skip
    return path


def _executor(ctx: Context, workers: int) -> Executor:
    """The context's executor; `workers` > 1 (the older way to ask for local processes) on a local one."""
    if workers > 1 and not ctx.executor.is_ray:
        return Executor.choose("local", workers)
    return ctx.executor


@dataclass(frozen=True)
class _Row:
    """What one part-3 row's episodes depend on besides their task and version (picklable, for workers)."""

    build: str
    run: str
    model: str
    label: str
    max_turns: int
    base_url: str | None
    handoff: bool
    steward: bool
    library: str = "incremental"


@dataclass(frozen=True)
class _RowSpec:
    """A row's job: the row, the build and the row's library of each version to run (shipped to Ray nodes)."""

    row: _Row
    build: Asset
    libraries: dict[int, Asset]


def _open_row(spec: _RowSpec) -> tuple[Context, _RowSpec, dict[int, Any]]:
    return opened_context(spec.build.local(), spec.row.run), spec, {}


def _run_row_item(opened: tuple[Context, _RowSpec, dict[int, Any]], item: tuple[str, int]) -> str:
    """One (task, version) episode of the row, as JSON (the version's skills read once per process)."""
    from toolshift.agents.config import RunConfig, make_model
    from toolshift.agents.loop import EpisodeLimits, run_episode
    from toolshift.agents.users import ScriptedUser

    ctx, spec, skills_of = opened
    row = spec.row
    task_id, v = item
    config = RunConfig(world=row.build, model=row.model, max_turns=row.max_turns, base_url=row.base_url)
    if row.steward and v not in skills_of:
        with Library.open(spec.libraries[v].local()) as lib:
            skills_of[v] = lib.skills()
    task = ctx.tasks[task_id]
    eid = f"{row.label}:{task.id}:v{v}"
    cat = ctx.catalog(v)
    domain_cat = Catalog(v, {n: t for n, t in cat.tools.items() if t.domain == task.domain})
    supply = Supply(skills_of[v], domain_cat) if row.steward else None
    exposed: set[str] = set()
    agent = make_model(row.model, config, seed=zlib.crc32(eid.encode()))
    opener = _opener(ctx, task.domain, v, supply, task.public_request, exposed, row.handoff)
    ep = asyncio.run(run_episode(
        task, agent, ScriptedUser(task.public_request, task.instruction), opener,
        episode_id=eid, limits=EpisodeLimits(max_turns=row.max_turns), agent_name=row.label,
        source={"baseline": row.label, "criterion": "both"},
    ))  # fmt: skip
    ep.ecosystem_version = f"{ctx.eco_id}/v{v}"
    ep.source["exposed_tools"] = sorted(exposed)
    return ep.model_dump_json()


def model_dev(
    ctx: Context, model: str, tasks: set[str], *, max_turns: int = 8, workers: int = 1
) -> list[Path]:
    """Part 3 on held-out training tasks: the model on domain tools, behind Steward, and behind Steward
    with the handoff — the rows the handoff was chosen by (D196)."""
    return [
        model_steward(ctx, model, sample=0, max_turns=max_turns, tasks=tasks, steward=False, workers=workers),
        model_steward(ctx, model, sample=0, max_turns=max_turns, tasks=tasks, handoff=False, workers=workers),
        model_steward(ctx, model, sample=0, max_turns=max_turns, tasks=tasks, handoff=True, workers=workers),
    ]


def model_domain_tools(
    ctx: Context, model: str, *, sample: int, max_turns: int = 8, workers: int = 1, command: str = ""
) -> Path:
    """The same model on its task's domain tools: the benchmark's baseline (`toolshift bench baseline`)."""
    from toolshift.bench.ecosystem.baselines import run_baseline

    return run_baseline(
        ctx.build, model, ctx.run / "model", split="test", sample=sample, seed=0, max_turns=max_turns,
        setting="domain-tools", executor=_executor(ctx, workers), nodes=ctx.nodes, command=command,
    )  # fmt: skip


def model_rows(
    ctx: Context, model: str, rows: list[str], *, sample: int, max_turns: int = 8, workers: int = 1,
    command: str = "",
) -> list[Path]:  # fmt: skip
    """Part 3's rows (names of `MODEL_ROWS`) on `sample` test tasks per version, one episode file each,
    each file's header holding `command`."""
    paths = []
    common = {"sample": sample, "max_turns": max_turns, "workers": workers, "command": command}
    for name in rows:
        spec = MODEL_ROWS[name]
        if spec.get("steward", True):
            paths.append(model_steward(ctx, model, **common, **spec))
        else:
            paths.append(model_domain_tools(ctx, model, **common))
    return paths


__all__ = ["MODEL_ROWS", "model_dev", "model_domain_tools", "model_label", "model_rows", "model_steward"]
