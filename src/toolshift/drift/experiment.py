"""The real-drift experiment's runs: the oracle, Steward's libraries across real upgrades, the instruments, a model.

Layout of the run folder (resumable; every episode file is appended to and never redone by id):

    RUN/history.json                           the catalog history (`toolshift.drift-history/1`)
    RUN/suite-<server>.json                    tasks, Δgold, per-station cases (`toolshift.drift-suite/1`)
    RUN/oracle/<server>.episodes.jsonl         the reference path replayed through the agent loop (PathReplay),
                                               every `ok` case, train and test tasks; its train episodes are
                                               Steward's training trajectories
    RUN/libraries/<server>/<kind>-<n>.sqlite   incremental (initialised on the first station, then maintained
                                               station by station) and full rebuild, after station n (1-based);
                                               frozen = the incremental library of the first station
                                               with a training trajectory
    RUN/follow/<server>-<kind>.episodes.jsonl  the skill-following instrument with that library, test tasks
    RUN/model/<server>-<model>.episodes.jsonl  a model (`--model`) on the version's own tools, test tasks

Steward's maintainer sees only each station's catalog (its `tools/list`) and successful training episodes, with
templates on (D364). Station n is catalog version n to Steward.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.drift.capabilities import resolve
from toolshift.drift.history import History
from toolshift.drift.install import Installed, install, load_pins
from toolshift.drift.replay import PathReplay, real_world
from toolshift.drift.suite import Suite
from toolshift.steward.catalog import Catalog
from toolshift.terminal import ProgressHook
from toolshift.traces.episode import Episode

KINDS = ("frozen", "full", "incremental")
LIMITS = {"max_turns": 40, "result_chars": 100_000}


@dataclass
class ServerRun:
    """One server's part of a run: its suite, its stations' catalogs as Steward sees them, its folder."""

    run: Path
    history: History
    suite: Suite

    @property
    def server(self) -> str:
        return self.suite.server

    def listing(self, version: str) -> Any:
        return self.history.servers[self.server].at(version)

    def catalog(self, version: str) -> Catalog:
        from toolshift.steward.check import catalog_from_tools

        n = self.suite.stations.index(version) + 1
        return catalog_from_tools(self.server, self.listing(version).tools, n)

    def ok(self, version: str, split: str | None = None) -> list[Any]:
        """The suite's tasks that run as intended on `version` (of `split`)."""
        good = {c.task for c in self.suite.cases if c.version == version and c.status == "ok"}
        return [
            t.task for t in self.suite.tasks if t.task.id in good and (split is None or t.task.split == split)
        ]

    def first_learned(self) -> str:
        """The first station with a successful training trajectory: where the frozen library is learned (a
        server's oldest versions may run no task at all: `mcp-server-git` 0.2.0 is another program)."""
        return next((v for v in self.suite.stations if training(self, v)), self.suite.stations[0])

    def library(self, kind: str, version: str) -> Path:
        at = self.first_learned() if kind == "frozen" else version
        n = self.suite.stations.index(at) + 1
        return (
            self.run / "libraries" / self.server / f"{'incremental' if kind == 'frozen' else kind}-{n}.sqlite"
        )


Job = tuple[str, Any, str, Callable[[], Any], dict[str, Any]]
"""(episode id, task, version, agent factory, source)."""


def run_jobs(
    sr: ServerRun,
    path: Path,
    jobs: list[Job],
    label: str,
    progress: ProgressHook | None = None,
    concurrency: int = 2,
) -> Path:
    """Run the jobs not yet in `path` (each a fresh sandbox and server), appending each episode as it ends."""
    from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

    meta = {"drift": sr.server, "run": label}
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta=meta)
    done = {e.id for e in iter_episodes(path, skip_bad=True)}
    todo = [j for j in jobs if j[0] not in done]
    if progress:
        progress(label, len(todo))
    pins = load_pins()
    insts: dict[str, Installed] = {}
    for _, _, version, _, _ in todo:
        if version not in insts:
            insts[version] = install(sr.server, version, pins=pins)

    async def go(writer: Any) -> None:
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(job: Job) -> None:
            async with gate:
                ep = await episode(job, insts[job[2]])
                writer.write(ep)
                if progress:
                    progress(label, None)

        await asyncio.gather(*(one(j) for j in todo))

    with EpisodeWriter(path, meta=meta, append=True) as writer:
        asyncio.run(go(writer))
    return path


async def episode(job: Job, inst: Installed) -> Episode:
    from toolshift.agents.loop import EpisodeLimits, run_episode
    from toolshift.agents.users import ScriptedUser

    eid, task, _, factory, source = job
    agent = factory()
    ep = await run_episode(
        task,
        agent,
        ScriptedUser(task.public_request, task.instruction),
        real_world(inst),
        episode_id=eid,
        limits=EpisodeLimits(**LIMITS),
        agent_name=agent.name,
        source=dict(source),
    )
    ep.ecosystem_version = f"{sr_key(inst)}"
    if hasattr(agent, "failure"):
        ep.source["failure"] = agent.failure
        ep.source["plan"] = getattr(agent, "plan_id", None)
        ep.source["supplied"] = list(getattr(agent, "exposed", []))
    return ep


def sr_key(inst: Installed) -> str:
    return f"{inst.spec.key}/{inst.version}"


def oracle(sr: ServerRun, progress: ProgressHook | None = None, concurrency: int = 2) -> Path:
    """The reference path of every `ok` case through the agent loop (train and test tasks)."""
    jobs: list[Job] = []
    for v in sr.suite.stations:
        listing = sr.listing(v)
        for st in sr.suite.tasks:
            if st.task.id not in {t.id for t in sr.ok(v)}:
                continue
            steps = resolve(sr.server, [(c, dict(p)) for c, p in st.program], listing).steps
            facts = list(st.task.instruction.facts)
            jobs.append((f"oracle:{st.task.id}:{v}", st.task, v, lambda f=facts, s=steps: PathReplay(f, s),
                         {"baseline": "drift-oracle", "split": st.task.split}))  # fmt: skip
    return run_jobs(sr, sr.run / "oracle" / f"{sr.server}.episodes.jsonl", jobs, f"{sr.server} oracle", progress,
                    concurrency)  # fmt: skip


def training(sr: ServerRun, version: str) -> list[Episode]:
    """The station's successful training trajectories: the oracle's episodes of train tasks there."""
    from toolshift.traces.store import iter_episodes

    path = sr.run / "oracle" / f"{sr.server}.episodes.jsonl"
    train = {t.id for t in sr.ok(version, "train")}
    return [
        e
        for e in iter_episodes(path)
        if e.id.endswith(f":{version}") and e.task_id in train and e.outcome and e.outcome.success
    ]


def build_libraries(
    sr: ServerRun, progress: ProgressHook | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """Incremental and full-rebuild libraries per station; work per station and kind."""
    from collections import Counter

    from toolshift.fileio import atomic_path
    from toolshift.steward.library import Library, copy_library
    from toolshift.steward.maintain import Maintainer, rebuild

    work: dict[str, dict[str, dict[str, Any]]] = {"incremental": {}, "full": {}}
    for k, v in enumerate(sr.suite.stations):
        eps, cat = training(sr, v), sr.catalog(v)
        inc = sr.library("incremental", v)
        inc.parent.mkdir(parents=True, exist_ok=True)
        if not inc.exists():
            with atomic_path(inc) as tmp:
                tmp.unlink()
                if k == 0:
                    lib = Library.create(tmp, name=f"{sr.server}-incremental")
                    Maintainer(lib, templates=True).initialise(cat, eps)
                else:
                    lib = copy_library(sr.library("incremental", sr.suite.stations[k - 1]), tmp)
                    Maintainer(lib, templates=True).maintain(cat, eps)
                lib.close()
        full = sr.library("full", v)
        if not full.exists():
            with atomic_path(full) as tmp:
                tmp.unlink()
                lib, _ = rebuild(tmp, cat, eps, templates=True)
                lib.close()
        for kind, path in (("incremental", inc), ("full", full)):
            with Library.open(path) as lib:
                w = next(x for x in lib.work() if x.catalog_version == k + 1)
                edits = [e for e in lib.edits() if e.catalog_version == k + 1]
                work[kind][v] = {
                    "episodes": w.episodes, "distilled": w.distilled, "edits": w.edits, "seconds": w.seconds,
                    "skills": {lvl: len(lib.skills(lvl)) for lvl in ("planning", "atomic", "tool")},
                    "active": len(lib.skills(active=True)),
                    "by_op": dict(Counter(edit_kind(e) for e in edits)),
                    "breaks": [break_reason(lib, e) for e in edits if e.op == "deactivate" or "renamed" in e.evidence],
                }  # fmt: skip
        if progress:
            progress(f"{sr.server} libraries", None)
    return work


def edit_kind(edit: Any) -> str:
    if "deprecated" in edit.evidence:
        return "rebind (deprecated)"
    if "renamed" in edit.evidence or "rebound" in edit.evidence:
        return "rename"
    return str(edit.op)


def break_reason(lib: Any, edit: Any) -> dict[str, Any]:
    """What an incremental edit at an upgrade did to a skill, and why (from its evidence)."""
    skill = lib.get(edit.skill_id)
    ev = edit.evidence
    if edit.op == "deactivate":
        why = [f"{t} is gone" for t in ev.get("missing_tools", [])] + list(ev.get("schema_conflicts", []))
        why += [f"stale binding {b}" for b in ev.get("stale_bindings", [])]
        action = "deactivated"
    else:
        why = [f"{a} → {b}" for a, b in ev.get("renamed", {}).items()]
        action = (
            "rebound to the successor of a deprecated tool" if "deprecated" in ev else "rebound by renames"
        )
    return {"skill": edit.skill_id, "level": skill.level if skill else "?", "action": action, "why": why}


def follow(sr: ServerRun, kinds: tuple[str, ...] = KINDS, progress: ProgressHook | None = None,
           concurrency: int = 2) -> list[Path]:  # fmt: skip
    """The skill-following instrument on every station's test tasks, with each library."""
    from toolshift.steward.instruments import SkillFollower
    from toolshift.steward.library import Library
    from toolshift.steward.supply import Supply

    paths = []
    for kind in kinds:
        jobs: list[Job] = []
        first = sr.suite.stations.index(sr.first_learned())
        for v in sr.suite.stations:
            if kind == "frozen" and sr.suite.stations.index(v) < first:
                continue  # no library was learned yet there
            with Library.open(sr.library(kind, v)) as lib:
                supply = Supply(lib, sr.catalog(v))
            for task in sr.ok(v, "test"):
                jobs.append((f"steward-{kind}:{task.id}:{v}", task, v, lambda s=supply: SkillFollower(s),
                             {"baseline": f"steward-{kind}"}))  # fmt: skip
        path = sr.run / "follow" / f"{sr.server}-{kind}.episodes.jsonl"
        paths.append(run_jobs(sr, path, jobs, f"{sr.server} {kind}", progress, concurrency))
    return paths


def tool_set_stations(sr: ServerRun) -> list[str]:
    """The stations where the set of tool names changes, with the first and the newest: where a model is run."""
    out, last = [], None
    for v in sr.suite.stations:
        names = tuple(sorted(sr.listing(v).names()))
        if names != last:
            out.append(v)
            last = names
    if sr.suite.stations and sr.suite.stations[-1] not in out:
        out.append(sr.suite.stations[-1])
    return out


@dataclass(frozen=True)
class ModelRow:
    """What a model row's episodes depend on besides their task and version (picklable, for workers)."""

    run: str
    server: str
    model: str
    max_turns: int


def model_path(run: Path, server: str, model: str) -> Path:
    return run / "model" / f"{server}-{model.replace(':', '_').replace('/', '_')}.episodes.jsonl"


def model_row(sr: ServerRun, model: str, *, max_turns: int = 8, workers: int = 1,
              progress: ProgressHook | None = None) -> Path:  # fmt: skip
    """`model` through toolshift's agent loop on the version's own tools, test tasks, tool-set stations."""
    from toolshift.agents.config import check_model_spec
    from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

    check_model_spec(model, "model")
    path = model_path(sr.run, sr.server, model)
    meta = {"drift": sr.server, "run": model, "max_turns": max_turns}
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta=meta)
    done = {e.id for e in iter_episodes(path, skip_bad=True)}
    todo = [
        (t.id, v)
        for v in tool_set_stations(sr)
        for t in sr.ok(v, "test")
        if f"{model}:{t.id}:{v}" not in done
    ]
    if progress:
        progress(f"{sr.server} {model}", len(todo))
    row = ModelRow(str(sr.run), sr.server, model, max_turns)

    def emit(ep: Episode) -> None:
        writer.write(ep)
        if progress:
            progress(f"{sr.server} {model}", None)

    with EpisodeWriter(path, meta=meta, append=True) as writer:
        if workers > 1 and len(todo) > 1:
            from toolshift.agents.workers import run_in_workers, split_shares

            shares = [(row, tuple(part)) for part in split_shares(todo, workers)]
            run_in_workers(_model_share, shares, lambda text: emit(Episode.model_validate_json(text)))
        else:
            asyncio.run(_model_episodes(sr, row, todo, emit))
    return path


async def _model_episodes(sr: ServerRun, row: ModelRow, todo: list[tuple[str, str]], emit: Any) -> None:
    from toolshift.agents.config import RunConfig, make_model

    config = RunConfig(world=f"drift:{row.server}", model=row.model, max_turns=row.max_turns)
    tasks = {t.task.id: t.task for t in sr.suite.tasks}
    pins = load_pins()
    for task_id, v in todo:
        eid = f"{row.model}:{task_id}:{v}"
        agent = make_model(row.model, config, seed=zlib.crc32(eid.encode()))
        job: Job = (eid, tasks[task_id], v, lambda a=agent: a, {"baseline": row.model})
        from toolshift.agents.loop import EpisodeLimits, run_episode
        from toolshift.agents.users import ScriptedUser

        task = tasks[task_id]
        inst = install(row.server, v, pins=pins)
        ep = await run_episode(
            task, agent, ScriptedUser(task.public_request, task.instruction), real_world(inst),
            episode_id=eid, limits=EpisodeLimits(max_turns=row.max_turns), agent_name=row.model,
            source=dict(job[4]),
        )  # fmt: skip
        ep.ecosystem_version = sr_key(inst)
        emit(ep)


def _model_share(share: tuple[ModelRow, tuple[tuple[str, str], ...]], emit: Any) -> None:
    """Worker side: the server's run opened again, the share's episodes run, each emitted as JSON."""
    from toolshift.drift.history import load_history
    from toolshift.drift.suite import load_suite

    row, todo = share
    run = Path(row.run)
    sr = ServerRun(run, load_history(run / "history.json"), load_suite(run / f"suite-{row.server}.json"))
    asyncio.run(_model_episodes(sr, row, list(todo), lambda ep: emit(ep.model_dump_json())))
