"""Baselines that give the metrics meaning without a model, plus the embedded model, run over MCP on version worlds.

* `oracle` follows the current version's reference path (one episode per criterion when the
  step- and cost-optimal paths differ): SR and SPE must come out at 100%.
* `frozen-v1` replays the v1 reference path by tool names and arguments on every version: it loses
  success where its tools were retired or changed, and efficiency where better paths appeared.
* `embedded` is the embedded SmolLM2 agent of `toolshift.agents`, on a small sample per version.

Every episode goes through the real agent loop (`toolshift.agents.loop.run_episode`): an MCP client
of a fresh world of that version over the in-memory transport, with the scripted user. Episodes
record `ecosystem_version = "<ecosystem id>/v<n>"` so `toolshift bench eval` can refuse foreign runs.
"""

from __future__ import annotations

import asyncio
import random
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.bench.ecosystem.catalog import DomainCatalog
from toolshift.bench.ecosystem.paths import ReferenceRecord, load_references
from toolshift.bench.ecosystem.store import (
    compiled_domain,
    domain_tasks,
    load_ecosystem,
    load_history,
    rebuild_catalog,
)
from toolshift.errors import BadInputError
from toolshift.models import GoldCall, Task
from toolshift.traces.episode import Episode
from toolshift.traces.store import EpisodeWriter, iter_episodes, read_header, write_episodes
from toolshift.world.world import World

Baseline = str
"""`oracle`, `frozen-v1`, `embedded`, or a model of `toolshift.agents` (`openai:<name>`, `anthropic:<name>`)."""
SCRIPTED: tuple[str, ...] = ("oracle", "frozen-v1")
BASELINES: tuple[str, ...] = ("oracle", "frozen-v1", "embedded", "openai:<model>", "anthropic:<model>")


@dataclass
class _Session:
    client: Any
    policy: str
    title: str
    world: World
    before: Any

    async def diff(self, reported: Any) -> Any:
        return self.world.changes_since(self.before)


class VersionWorlds:
    """Fresh worlds of any domain × version of an evolved build; compiled domains and catalogs cached."""

    def __init__(self, build: str | Path) -> None:
        self.build = Path(build)
        self._compiled: dict[str, Any] = {}
        self._tasks: dict[str, list[Task]] = {}
        self._catalogs: dict[tuple[str, int], DomainCatalog] = {}

    def tasks(self, domain: str) -> list[Task]:
        if domain not in self._tasks:
            self._tasks[domain] = domain_tasks(self.build, domain)
        return self._tasks[domain]

    def catalog(self, domain: str, version: int) -> DomainCatalog:
        key = (domain, version)
        if key not in self._catalogs:
            if domain not in self._compiled:
                self._compiled[domain] = compiled_domain(self.build, domain)
            world = World(self._compiled[domain])
            self._catalogs[key] = rebuild_catalog(
                world, self.tasks(domain), load_history(self.build, domain), version
            )
            world.close()
        return self._catalogs[key]

    def world(self, domain: str, version: int) -> World:
        cat = self.catalog(domain, version)
        return cat.world(World(self._compiled[domain]))

    def opener(self, domain: str, version: int) -> Callable[[], Any]:
        """An opener for `run_episode`: a fresh version world behind an in-memory MCP client."""

        @asynccontextmanager
        async def open_world() -> AsyncIterator[_Session]:
            from mcp import Client

            from toolshift.world.serve import WorldServer

            world = self.world(domain, version)
            try:
                before = world.snapshot()
                server = WorldServer(world, shared_state=True)
                async with Client(server.server, mode="legacy") as client:
                    spec = world.domain.spec
                    yield _Session(client, spec.policy or spec.description, spec.title, world, before)
            finally:
                world.close()

        return open_world


def _as_gold(calls: list[tuple[str, dict[str, Any]]]) -> list[GoldCall]:
    return [GoldCall(tool=name, arguments=args) for name, args in calls]


@dataclass(frozen=True)
class PlannedEpisode:
    task: Task
    version: int
    criterion: str
    """`step`, `cost`, or `both` (the two reference paths are the same calls)."""
    calls: list[tuple[str, dict[str, Any]]] | None
    exposed: list[str] | None


def plan_baseline(
    baseline: Baseline,
    records: list[ReferenceRecord],
    tasks: dict[str, Task],
    *,
    split: str | None = "test",
    sample: int | None = None,
    seed: int = 0,
) -> list[PlannedEpisode]:
    """What a baseline runs: which task × version episodes, and for scripted ones, which calls."""
    by = {(r.task_id, r.version): r for r in records}
    chosen = [r for r in records if r.valid and (split is None or r.split == split)]
    if sample is not None:
        rng = random.Random(seed)
        per_version: dict[int, list[ReferenceRecord]] = {}
        for r in chosen:
            per_version.setdefault(r.version, []).append(r)
        ids = sorted({r.task_id for r in chosen})
        picked = set(rng.sample(ids, min(sample, len(ids))))
        chosen = [r for r in chosen if r.task_id in picked]
    out: list[PlannedEpisode] = []
    for r in chosen:
        task = tasks[r.task_id]
        assert r.step is not None and r.cost is not None
        if baseline == "oracle":
            if r.step.calls == r.cost.calls:
                out.append(PlannedEpisode(task, r.version, "both", r.step.calls, r.step.tools))
            else:
                out.append(PlannedEpisode(task, r.version, "step", r.step.calls, r.step.tools))
                out.append(PlannedEpisode(task, r.version, "cost", r.cost.calls, r.cost.tools))
        elif baseline == "frozen-v1":
            v1 = by.get((r.task_id, 1))
            if v1 is None or v1.step is None:
                continue
            out.append(PlannedEpisode(task, r.version, "both", v1.step.calls, v1.step.tools))
        else:
            out.append(PlannedEpisode(task, r.version, "both", None, None))
    return out


def episode_key(baseline: str, p: PlannedEpisode) -> str:
    return f"{baseline}:{p.task.id}:v{p.version}:{p.criterion}"


async def _run_all(
    planned: list[PlannedEpisode],
    baseline: Baseline,
    worlds: VersionWorlds,
    eco_id: str,
    *,
    max_turns: int,
    on_episode: Callable[[Episode], None],
    base_url: str | None = None,
) -> None:
    from toolshift.agents.config import RunConfig, make_model
    from toolshift.agents.loop import EpisodeLimits, run_episode
    from toolshift.agents.policies import oracle
    from toolshift.agents.users import ScriptedUser

    config, shared = None, None
    if baseline not in SCRIPTED:
        config = RunConfig(world=str(worlds.build), model=baseline, max_turns=max_turns, base_url=base_url)
        if baseline != "embedded":  # an API client holds no per-episode state
            shared = make_model(baseline, config, seed=0)
    for p in planned:
        if config is None:
            agent: Any = oracle(p.task, _as_gold(p.calls or []))
        elif shared is not None:
            agent = shared
        else:  # the embedded model samples per turn: seeded by the episode, the same whether resumed or not
            agent = make_model(baseline, config, seed=zlib.crc32(episode_key(baseline, p).encode()))
        source: dict[str, Any] = {"baseline": baseline, "criterion": p.criterion}
        if p.exposed is not None:
            source["exposed_tools"] = sorted(set(p.exposed))
        ep = await run_episode(
            p.task,
            agent,
            ScriptedUser(p.task.public_request, p.task.instruction),
            worlds.opener(p.task.domain, p.version),
            episode_id=episode_key(baseline, p),
            limits=EpisodeLimits(max_turns=max_turns),
            agent_name=baseline,
            source=source,
        )
        ep.ecosystem_version = f"{eco_id}/v{p.version}"
        on_episode(ep)


def run_baseline(
    build: str | Path,
    baseline: Baseline,
    out: str | Path,
    *,
    split: str | None = "test",
    sample: int | None = None,
    seed: int = 0,
    max_turns: int | None = None,
    progress_total: Callable[[int], None] | None = None,
    progress: Callable[[], None] | None = None,
    command: str = "",
    base_url: str | None = None,
) -> Path:
    """Run one baseline on the evolved build, appending its episodes to `out/<baseline>.episodes.jsonl`.

    Resumable: episodes already in the file (by id) are not run again; a file of another ecosystem is refused.
    """
    if baseline not in SCRIPTED:
        from toolshift.agents.config import check_model_spec

        try:
            check_model_spec(baseline)
        except BadInputError:
            raise BadInputError(
                f"unknown agent {baseline!r} (one of {', '.join(BASELINES)})", field="agent"
            ) from None
        if baseline in ("replay", "scripted"):
            raise BadInputError(f"{baseline!r} cannot run as an ecosystem baseline", field="agent")
    if sample is not None and sample < 1:
        raise BadInputError("--sample must be at least 1", field="sample")
    if Path(out).exists() and not Path(out).is_dir():
        raise BadInputError("--out must be a folder, and this is a file", source=str(out), field="out")
    eco = load_ecosystem(build)
    _, records = load_references(build)
    worlds = VersionWorlds(build)
    tasks = {t.id: t for d in eco.domains for t in worlds.tasks(d)}
    planned = plan_baseline(baseline, records, tasks, split=split, sample=sample, seed=seed)
    path = Path(out) / f"{baseline.replace(':', '_').replace('/', '_')}.episodes.jsonl"
    turns = max_turns or (40 if baseline in SCRIPTED else 10 if baseline == "embedded" else 30)
    # What changes an episode besides its task and version: a file holds episodes of one setting only.
    setting = {"max_turns": turns, "base_url": base_url if baseline.startswith("openai:") else None}
    meta = {"ecosystem": eco.id, "build": eco.build, "baseline": baseline, "command": command, **setting}
    done: set[str] = set()
    if path.exists():
        header = read_header(path).meta
        recorded = header.get("ecosystem")
        if recorded != eco.id:
            raise BadInputError(
                f"holds episodes of ecosystem {recorded!r}, not {eco.id!r}; choose another --out",
                source=str(path),
            )
        for name, value in setting.items():
            if name in header and header[name] != value:
                raise BadInputError(
                    f"holds episodes recorded with {name} {header[name]!r}, not {value!r}; "
                    "choose another --out",
                    source=str(path),
                    field=name,
                )
        done = {ep.id for ep in iter_episodes(path, skip_bad=True)}
    else:
        Path(out).mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta=meta)
    todo = [p for p in planned if episode_key(baseline, p) not in done]
    if progress_total:
        progress_total(len(todo))
    with EpisodeWriter(path, meta=meta, append=True) as writer:

        def keep(ep: Episode) -> None:
            writer.write(ep)
            if progress:
                progress()

        asyncio.run(
            _run_all(todo, baseline, worlds, eco.id, max_turns=turns, on_episode=keep, base_url=base_url)
        )
    return path
