"""`toolshift steward eval BUILD`: the experiment's runs, libraries and scores (resumable, one folder).

Layout of the run folder (docs/formats.md, "Steward experiment"):

    RUN/train/train-v<n>.episodes.jsonl    training trajectories per version (FactReplay instrument)
    RUN/libraries/incremental-v<n>.sqlite  the incrementally maintained library after version n
    RUN/libraries/full-v<n>.sqlite         the full-rebuild comparator of version n
    (frozen = incremental-v1.sqlite used on every version)
    RUN/follow/steward-<kind>.episodes.jsonl  the skill-following instrument's test episodes
    RUN/dev/steward-<kind>.episodes.jsonl     the same on held-out training tasks (`--dev N`, D190)
    RUN/supply.json, RUN/results.json      part 1 and part 2 results (`toolshift.steward-results/1`)

The benchmark's own API supplies builds, versions, reference paths and metrics; Steward's
maintainer gets only catalogs and episodes from here.
"""

from __future__ import annotations

import asyncio
import json
import random
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.agents.assets import Asset
from toolshift.agents.executor import Executor, Job, Lost, NodeProgress, lost_episode
from toolshift.bench.ecosystem.paths import ReferenceRecord, load_references
from toolshift.bench.ecosystem.settings import VersionWorlds
from toolshift.bench.ecosystem.store import atomic_write, load_ecosystem
from toolshift.errors import BadInputError
from toolshift.models import Task
from toolshift.steward.catalog import Catalog, version_catalog
from toolshift.steward.library import Library, copy_library
from toolshift.steward.maintain import Maintainer, rebuild
from toolshift.terminal import ProgressHook, finite_or_null
from toolshift.traces.episode import Episode
from toolshift.traces.store import EpisodeWriter, iter_episodes, read_header, write_episodes

RESULTS_FORMAT = "toolshift.steward-results/1"
KINDS = ("frozen", "full", "incremental")


@dataclass
class Context:
    build: Path
    run: Path
    eco_id: str
    versions: int
    worlds: VersionWorlds
    records: list[ReferenceRecord]
    tasks: dict[str, Task]
    catalogs: dict[int, Catalog]
    executor: Executor = field(default_factory=Executor)
    """Where the experiment's episodes run (`toolshift.agents.executor`); maintenance stays in this process."""
    nodes: NodeProgress | None = None
    """Each node's counts as they change, on Ray (the command's progress lines)."""

    def catalog(self, v: int) -> Catalog:
        if v not in self.catalogs:
            self.catalogs[v] = version_catalog(self.build, v, self.worlds)
        return self.catalogs[v]

    def refs(self, split: str, sample: int | None = None, seed: int = 0) -> list[ReferenceRecord]:
        chosen = [r for r in self.records if r.valid and r.split == split]
        if sample is not None:
            ids = sorted({r.task_id for r in chosen})
            keep = set(random.Random(seed).sample(ids, min(sample, len(ids))))
            chosen = [r for r in chosen if r.task_id in keep]
        return chosen


def context(build: str | Path, run: str | Path) -> Context:
    eco = load_ecosystem(build)
    _, records = load_references(build)
    worlds = VersionWorlds(build)
    tasks = {t.id: t for d in eco.domains for t in worlds.tasks(d)}
    return Context(Path(build), Path(run), eco.id, eco.config.versions, worlds, records, tasks, {})


_opened: dict[str, Context] = {}


def opened_context(build: str | Path, run: str | Path) -> Context:
    """The build's context in this process, made once and kept for the next job (a worker runs many: one
    per episode file and version); the driver's own is kept the same way, so a run in this process
    reads the context it already has."""
    key = str(Path(build).resolve())
    if key not in _opened:
        _opened.clear()
        _opened[key] = context(build, run)
    return _opened[key]


def keep_context(ctx: Context) -> None:
    """Let jobs run in this process use `ctx` itself (`opened_context`)."""
    _opened.clear()
    _opened[str(ctx.build.resolve())] = ctx


# --- episodes through the real agent loop -----------------------------------------------------------


@dataclass
class _Session:
    client: Any
    policy: str
    title: str
    world: Any
    before: Any

    async def diff(self, reported: Any) -> Any:
        return self.world.changes_since(self.before)


def domain_opener(worlds: VersionWorlds, domain: str, version: int) -> Callable[[], Any]:
    """An opener for `run_episode`: a fresh world of one domain at one version behind an in-memory MCP client."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def open_world() -> Any:
        from mcp import Client

        from toolshift.world.mcp.serve import WorldServer

        world = worlds.world(domain, version)
        try:
            before = world.snapshot()
            server = WorldServer(world, shared_state=True)
            async with Client(server.server, mode="legacy") as client:
                spec = world.domain.spec
                yield _Session(client, spec.policy or spec.description, spec.title, world, before)
        finally:
            world.close()

    return open_world


@dataclass(frozen=True)
class _Item:
    """One instrument episode of an episode file: its id, task, version, instrument and source fields.
    `agent` is `("fact-replay", facts, calls)` or `("follower",)` (the file's library supplies it)."""

    eid: str
    task_id: str
    version: int
    agent: tuple[Any, ...]
    source: dict[str, Any]


@dataclass(frozen=True)
class _FileSpec:
    build: Asset
    run: str
    library: Asset | None
    """The skill follower's library (the file's version), shipped to the workers; None for training."""
    version: int


def _open_file(spec: _FileSpec) -> tuple[Context, Any]:
    from toolshift.steward.supply import Supply

    ctx = opened_context(spec.build.local(), spec.run)
    if spec.library is None:
        return ctx, None
    with Library.open(spec.library.local()) as lib:
        return ctx, Supply(lib, ctx.catalog(spec.version))


def _run_item(opened: tuple[Context, Any], item: _Item) -> str:
    """One instrument episode through the agent loop on a fresh world of its version, as JSON."""
    from toolshift.agents.loop import EpisodeLimits, run_episode
    from toolshift.agents.users import ScriptedUser
    from toolshift.steward.instruments import FactReplay, SkillFollower

    ctx, supply = opened
    task = ctx.tasks[item.task_id]
    agent: Any = FactReplay(*item.agent[1:]) if item.agent[0] == "fact-replay" else SkillFollower(supply)
    ep = asyncio.run(
        run_episode(
            task, agent, ScriptedUser(task.public_request, task.instruction),
            domain_opener(ctx.worlds, task.domain, item.version), episode_id=item.eid,
            limits=EpisodeLimits(max_turns=60, result_chars=200_000), agent_name=agent.name,
            source=dict(item.source),
        )
    )  # fmt: skip
    ep.ecosystem_version = f"{ctx.eco_id}/v{item.version}"
    if hasattr(agent, "exposed"):
        ep.source["exposed_tools"] = agent.exposed
        ep.source["failure"] = agent.failure
        ep.source["plan"] = getattr(agent, "plan_id", None)
    return ep.model_dump_json()


def _run_file(
    ctx: Context,
    path: Path,
    items: list[_Item],
    progress: ProgressHook | None,
    label: str,
    *,
    version: int,
    library: Path | None = None,
) -> None:
    """Run the items not yet in `path` where `ctx.executor` says, appending each as it ends."""
    meta = {"ecosystem": ctx.eco_id, "steward": label}
    done: set[str] = set()
    if path.exists():
        if read_header(path).meta.get("ecosystem") != ctx.eco_id:
            raise BadInputError(f"holds episodes of another ecosystem than {ctx.eco_id}", source=str(path))
        done = {e.id for e in iter_episodes(path, skip_bad=True)}
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta=meta)
    todo = [i for i in items if i.eid not in done]
    if progress:
        progress(label, len(todo))
    if not todo:
        return
    # the instruments' episodes take milliseconds: local processes would cost more than they save
    executor = ctx.executor if ctx.executor.is_ray else Executor()
    keep_context(ctx)
    spec = _FileSpec(executor.asset(ctx.build), str(ctx.run),
                     executor.asset(library) if library is not None else None, version)  # fmt: skip

    with EpisodeWriter(path, meta=meta, append=True) as writer:

        def keep(ep: Episode) -> None:
            writer.write(ep)
            if progress:
                progress(label, None)

        def lost(item: _Item, why: Lost) -> None:
            ep = lost_episode(
                ctx.tasks[item.task_id], episode_id=item.eid, trial=0, agent_name=label, lost=why
            )
            ep.ecosystem_version = f"{ctx.eco_id}/v{item.version}"
            ep.source.update(item.source)
            keep(ep)

        executor.run(
            Job(_open_file, _run_item, spec, name=f"steward {label}"), todo, key=lambda i: i.eid,
            on_result=lambda _i, text: keep(Episode.model_validate_json(text)), on_lost=lost, progress=ctx.nodes,
        )  # fmt: skip


def train_path(ctx: Context, v: int) -> Path:
    return ctx.run / "train" / f"train-v{v}.episodes.jsonl"


def training_episodes(
    ctx: Context, v: int, progress: ProgressHook | None = None, sample: int | None = None
) -> Path:
    """Version v's training trajectories: each train task's step-optimal reference path replayed with
    its facts asked first (FactReplay), through the agent loop on a fresh world of that version."""
    items = []
    for r in ctx.refs("train", sample):
        if r.version != v or r.step is None:
            continue
        task = ctx.tasks[r.task_id]
        calls = [(n, a) for n, a in r.step.calls]
        items.append(_Item(
            f"train:{task.id}:v{v}", task.id, v, ("fact-replay", list(task.instruction.facts), calls),
            {"baseline": "steward-fact-replay", "criterion": "step"},
        ))  # fmt: skip
    path = train_path(ctx, v)
    _run_file(ctx, path, items, progress, f"training episodes v{v}", version=v)
    return path


def read_episodes(path: Path) -> list[Episode]:
    return list(iter_episodes(path))


# --- libraries --------------------------------------------------------------------------------------


def library_path(ctx: Context, kind: str, v: int) -> Path:
    if kind == "frozen":
        return ctx.run / "libraries" / "incremental-v1.sqlite"
    return ctx.run / "libraries" / f"{kind}-v{v}.sqlite"


def build_libraries(
    ctx: Context, progress: ProgressHook | None = None, sample: int | None = None
) -> dict[str, Any]:
    """Incremental (v1 initialise, then maintain per version) and full rebuild per version; work per version."""
    work: dict[str, dict[int, dict[str, Any]]] = {"incremental": {}, "full": {}}
    for v in range(1, ctx.versions + 1):
        eps = read_episodes(training_episodes(ctx, v, progress, sample))
        cat = ctx.catalog(v)
        inc = library_path(ctx, "incremental", v)
        if not inc.exists():
            tmp = inc.with_name(inc.name + ".build")
            if v == 1:
                lib = Library.create(tmp, name="incremental", replace_existing=True)
                Maintainer(lib).initialise(cat, eps)
            else:
                lib = copy_library(library_path(ctx, "incremental", v - 1), tmp)
                Maintainer(lib).maintain(cat, eps)
            lib.close()
            tmp.replace(inc)
        full = library_path(ctx, "full", v)
        if not full.exists():
            tmp = full.with_name(full.name + ".build")
            lib, _ = rebuild(tmp, cat, eps)
            lib.close()
            tmp.replace(full)
        for kind, path in (("incremental", inc), ("full", full)):
            with Library.open(path) as lib:
                w = next(x for x in lib.work() if x.catalog_version == v)
                work[kind][v] = {
                    "episodes": w.episodes, "distilled": w.distilled, "edits": w.edits,
                    "seconds": w.seconds, "tokens": w.tokens,
                    "skills": {lvl: len(lib.skills(lvl)) for lvl in ("planning", "atomic", "tool")},
                    "active": len(lib.skills(active=True)),
                    "by_op": dict(Counter(edit_kind(e) for e in lib.edits() if e.catalog_version == v)),
                }  # fmt: skip
        if progress:
            progress(f"libraries v{v}", None)
    return work


def edit_kind(edit: Any) -> str:
    """An edit's op, a mechanical rename told apart: a tool's new name substituted, or a result path moved
    to where the version's results hold it (D185); nothing written."""
    return "rename" if "renamed" in edit.evidence or "rebound" in edit.evidence else edit.op


def held_out(ctx: Context, train_sample: int | None, n: int, seed: int = 1) -> set[str]:
    """`n` train tasks the library was not built from (outside the `train_sample` the libraries used), a
    seeded sample: where the instrument's failures may be read without looking at the test split (D190)."""
    used = {r.task_id for r in ctx.refs("train", train_sample)}
    rest = sorted({r.task_id for r in ctx.refs("train")} - used)
    if not rest:
        raise BadInputError("no training task is held out of the library (give --train-sample)", field="dev")
    return set(random.Random(seed).sample(rest, min(n, len(rest))))


def follow(
    ctx: Context,
    kinds: tuple[str, ...] = KINDS,
    progress: ProgressHook | None = None,
    sample: int | None = None,
    dev: set[str] | None = None,
) -> list[Path]:
    """The skill-following instrument on the test split, every version, with each library; with `dev`
    (task ids from `held_out`), on those training tasks instead, in RUN/dev/."""
    paths = []
    folder, prefix = ("follow", "") if dev is None else ("dev", "dev-")
    refs = ctx.refs("test", sample) if dev is None else [r for r in ctx.refs("train") if r.task_id in dev]
    for kind in kinds:
        path = ctx.run / folder / f"steward-{kind}.episodes.jsonl"
        for v in range(1, ctx.versions + 1):
            items = [
                _Item(f"{prefix}steward-{kind}:{r.task_id}:v{v}", r.task_id, v, ("follower",),
                      {"baseline": f"steward-{kind}", "criterion": "both"})
                for r in refs
                if r.version == v
            ]  # fmt: skip
            _run_file(ctx, path, items, progress, f"{prefix}{kind} v{v}", version=v,
                      library=library_path(ctx, kind, v))  # fmt: skip
        paths.append(path)
    return paths


def seed_of(text: str) -> int:
    return zlib.crc32(text.encode())


def write_results(path: Path, body: dict[str, Any]) -> None:
    """The results file, strict JSON: a figure over nothing (an interval's NaN) is written null (D307, D321)."""
    strict, _ = finite_or_null({"format": RESULTS_FORMAT, **body})
    atomic_write(path, json.dumps(strict, indent=1, sort_keys=True, allow_nan=False))
