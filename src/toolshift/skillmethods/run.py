"""`toolshift skills eval BUILD --methods …`: Steward and the four skill methods on the same versions, resumable.

The protocol, the same for every method (D401): each version v has a training pool (`--train-sample` train tasks,
the same ids every version, seeded) whose episodes are the pool's step-optimal reference paths replayed by
Steward's `FactReplay` instrument on v (what Steward maintains from; every method gets them), and a validation
split (`--val` other train tasks, seeded, outside the pool) that a method may roll the agent out on. At v1 every
method starts empty (Steward initialises); at v ≥ 2 it continues from its v−1 library with v's pool only. The
library after v's maintenance is what the agent is given on v's test tasks (`--sample` per version, the same
tasks for every method and version). The agent is the model on its task's domain tools (the No Skill row:
`bench baseline --setting domain-tools`), given each rival's library as Agent Skills (`toolshift.agents.skills`);
Steward's row is its own handoff (`steward eval`'s `plan` row). Maintenance tokens: every model call a method
makes (its ledger) plus the agent's tokens in every rollout it runs (training and validation), per version.

Layout of RUN: `train/`, `libraries/`, `model/` as `steward eval` makes them (its Steward and No Skill rows
are the same files, so `steward eval`'s kept episodes restore into this folder), and per rival
`methods/<name>/` with `calls.jsonl` (the ledger), `rollouts.episodes.jsonl`, `library-v<n>/` (the library
after version n, as SKILL.md folders) and `v<n>.json` (that version's maintenance: tokens, calls, rollouts,
skills), and its test episodes in `model/<name>-<model>.episodes.jsonl`.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.agents.assets import Asset
from toolshift.agents.executor import Executor
from toolshift.errors import BadInputError
from toolshift.fileio import write_text_atomic
from toolshift.skillmethods import autoskill, evoskill, skillopt, trace2skill
from toolshift.skillmethods.calls import Ledger, MethodModel
from toolshift.skillmethods.common import Pool, Rollouts, Step, agent_tokens, load_library, save_library
from toolshift.terminal import ProgressHook
from toolshift.traces.episode import Episode

METHODS = ("steward", "no-skill", "evoskill", "autoskill", "trace2skill", "skillopt")
RIVALS: dict[str, Callable[[Step, list[Any]], list[Any]]] = {
    "evoskill": evoskill.maintain,
    "autoskill": autoskill.maintain,
    "trace2skill": trace2skill.maintain,
    "skillopt": skillopt.maintain,
}

PRELOAD = {"trace2skill": "domain", "skillopt": "all"}
"""How each method's repository gives the agent its skill: Trace2Skill's agent runs "with the current skill
preloaded" (here the task's domain's skill), SkillOpt's skill is the target's prompt; EvoSkill's harnesses and
AutoSkill's retrieval give skills on demand (listed, read through `read_skill`). D403."""


@dataclass(frozen=True)
class Spec:
    """What a comparison run's episodes and libraries depend on (picklable, for worker processes)."""

    build: str
    run: str
    model: str
    sample: int
    train_sample: int
    val: int
    max_turns: int = 8
    base_url: str | None = None
    workers: int = 1
    command: str = ""
    versions: int = 0
    """Versions run, from v1 (0: all the build's)."""
    executor: str = "local"
    ray_address: str | None = None


def check_methods(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in names if m not in METHODS]
    if bad or not names:
        raise BadInputError(
            f"unknown method {bad[0] if bad else text!r}: use {','.join(METHODS)}", field="methods"
        )
    return names


def row_label(method: str, model: str) -> str:
    """A rival's test row: `<method>-<model>` (as `steward-plan-<model>`)."""
    return f"{method}-{model.replace(':', '_').replace('/', '_')}"


# --- episodes: the agent with a library, on the domain tools ------------------------------------------------


def _planned(ctx: Any, task_id: str, v: int) -> Any:
    from toolshift.bench.ecosystem.baselines import PlannedEpisode

    ref = next(r for r in ctx.records if r.task_id == task_id and r.version == v)
    return PlannedEpisode(ctx.tasks[task_id], v, "both", None, ref)


@dataclass(frozen=True)
class _Item:
    """One episode to run: its row (the baseline label), task, version and the library given (None: none)."""

    label: str
    task_id: str
    version: int
    library: Asset | None
    preload: str = ""
    """How the method deploys its library (`PRELOAD`): "" on demand, "all" or "domain" preloaded."""


@dataclass(frozen=True)
class _Opened:
    ctx: Any
    spec: Spec


def _open(job: tuple[Spec, Asset]) -> _Opened:
    """A worker's context: the build opened once (on a Ray node, its shipped copy)."""
    from toolshift.steward.experiment import context

    spec, build = job
    return _Opened(context(build.local(), spec.run), spec)


def _run_one(opened: _Opened, item: _Item) -> str:
    """One episode, `LABEL:TASK:vN:both`, as JSON: the model on the domain tools with the item's library."""
    from toolshift.agents.config import RunConfig, make_model, make_user
    from toolshift.agents.skills import SkillShelf
    from toolshift.bench.ecosystem.baselines import RunSetting, VersionCatalogs, episode_key, run_planned

    ctx, spec = opened.ctx, opened.spec
    config = RunConfig(world=spec.build, model=spec.model, max_turns=spec.max_turns, base_url=spec.base_url)
    setting = RunSetting(setting="domain-tools", max_turns=spec.max_turns, base_url=spec.base_url)
    p = _planned(ctx, item.task_id, item.version)
    seed = zlib.crc32(episode_key(item.label, p).encode())
    agent = make_model(spec.model, config, seed=seed)
    user = make_user(config.model_copy(update={"seed": seed}), p.task, 0)
    shelf = None
    if item.library is not None:
        found = SkillShelf.from_folder(item.library.local())
        preload = [
            n for n, sk in found.skills.items()
            if item.preload == "all"
            or (item.preload == "domain" and (sk.front.get("metadata") or {}).get("domain") == p.task.domain)
        ]  # fmt: skip
        shelf = SkillShelf(found.skills.values(), label=Path(item.library.path).name, preload=preload)
    versions = VersionCatalogs(ctx.worlds, sorted({t.domain for t in ctx.tasks.values()}))
    ep = asyncio.run(
        run_planned(p, agent, user, ctx.worlds, ctx.eco_id, versions, setting, item.label, skills=shelf)
    )
    return ep.model_dump_json()


def episodes(
    ctx: Any, spec: Spec, path: Path, jobs: list[tuple[str, str, int, str | None]], meta: dict[str, Any],
    executor: Executor | None = None, preload: str = "",
) -> list[Episode]:  # fmt: skip
    """The jobs' episodes — (row label, task, version, library folder) — those already in `path` by id, the rest
    run where `executor` says (`toolshift.agents.executor`: this process, local workers, or Ray) and appended."""
    from toolshift.agents.executor import Job, Lost, lost_episode
    from toolshift.bench.ecosystem.baselines import episode_key
    from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

    executor = executor or Executor.choose("local", spec.workers)
    have = {e.id: e for e in iter_episodes(path, skip_bad=True)} if path.exists() else {}
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta=meta)
    ids = {j: episode_key(j[0], _planned(ctx, j[1], j[2])) for j in jobs}
    todo = [j for j in jobs if ids[j] not in have]
    if todo:
        libraries = {f: executor.asset(f) for f in {j[3] for j in todo if j[3] is not None}}
        items = [
            _Item(label, t, v, libraries[f] if f is not None else None, preload) for label, t, v, f in todo
        ]
        with EpisodeWriter(path, meta=meta, append=True) as writer:

            def keep(ep: Episode) -> None:
                writer.write(ep)
                have[ep.id] = ep

            def lost(item: _Item, why: Lost) -> None:
                eid = episode_key(item.label, _planned(ctx, item.task_id, item.version))
                ep = lost_episode(
                    ctx.tasks[item.task_id], episode_id=eid, trial=0, agent_name=item.label, lost=why
                )
                ep.ecosystem_version = f"{ctx.eco_id}/v{item.version}"
                ep.source.update({"baseline": item.label, "criterion": "both", "setting": "domain-tools"})
                keep(ep)

            executor.run(
                Job(_open, _run_one, (spec, executor.asset(spec.build)), name=f"skills {items[0].label}"),
                items, key=lambda i: f"{i.label}:{i.task_id}:v{i.version}",
                on_result=lambda _i, text: keep(Episode.model_validate_json(text)), on_lost=lost,
            )  # fmt: skip
    return [have[ids[j]] for j in jobs]


# --- the rivals, version by version ---------------------------------------------------------------------------


def pool(ctx: Any, spec: Spec, v: int, val: list[str], progress: ProgressHook | None) -> Pool:
    from toolshift.steward.experiment import read_episodes, training_episodes

    eps = read_episodes(training_episodes(ctx, v, progress, spec.train_sample))
    refs = {r.task_id: r for r in ctx.refs("train", spec.train_sample) if r.version == v}
    cat = ctx.catalog(v)
    tools: dict[str, dict[str, str]] = {}
    for name, t in cat.tools.items():
        tools.setdefault(t.domain, {})[name] = t.description
    gold = {t: [n for n, _ in r.step.calls] for t, r in refs.items() if r.step is not None}
    here = {r.task_id for r in ctx.records if r.valid and r.version == v}  # a task may lack a valid path at v
    return Pool(v, sorted(refs), eps, [t for t in val if t in here], ctx.tasks, tools, gold)


def maintain_rival(
    ctx: Any, spec: Spec, name: str, v: int, val: list[str], progress: ProgressHook | None,
    executor: Executor | None = None,
) -> Path:  # fmt: skip
    """The rival's library after version v (made once; a finished version is read back)."""
    folder = Path(spec.run) / "methods" / name
    lib = folder / f"library-v{v}"
    if (folder / f"v{v}.json").exists():
        return lib
    prev = load_library(folder / f"library-v{v - 1}") if v > 1 else []
    model = MethodModel(spec.model, Ledger(folder / "calls.jsonl"), base_url=spec.base_url)
    model.version = v
    meta = {"ecosystem": ctx.eco_id, "method": name, "command": spec.command}
    rollouts = Rollouts(
        lambda jobs: episodes(ctx, spec, folder / "rollouts.episodes.jsonl",
                              [(f"{name}:{i.split(':')[1]}", t, w, str(f)) for i, t, w, f in jobs], meta, executor,
                              PRELOAD.get(name, "")),
        folder / "scratch", name, v,
    )  # fmt: skip
    step = Step(model, rollouts, pool(ctx, spec, v, val, progress))
    library = RIVALS[name](step, prev)
    save_library(library, lib)
    work = {
        "version": v, "calls": model.ledger.count(v), "call_tokens": model.ledger.tokens(v),
        "rollouts": len(rollouts.spent), "rollout_tokens": agent_tokens(rollouts.spent),
        "skills": len(library), "train_tasks": len(step.pool.train),
    }  # fmt: skip
    write_text_atomic(folder / f"v{v}.json", json.dumps(work, indent=1, sort_keys=True))
    return lib


def test_rival(ctx: Any, spec: Spec, name: str, v: int, lib: Path, executor: Executor | None = None) -> Path:
    label = row_label(name, spec.model)
    path = Path(spec.run) / "model" / f"{label}.episodes.jsonl"
    tests = [r.task_id for r in ctx.refs("test", spec.sample) if r.version == v]
    meta = {"ecosystem": ctx.eco_id, "method": name, "max_turns": spec.max_turns, "command": spec.command}
    episodes(ctx, spec, path, [(label, t, v, str(lib)) for t in tests], meta, executor, PRELOAD.get(name, ""))
    return path


def method_file(spec: Spec, method: str) -> Path:
    """Where a method's test episodes are: Steward's and No Skill's as `steward eval` writes them, a rival's row."""
    from toolshift.steward.model_agent import model_label

    folder = Path(spec.run) / "model"
    if method == "no-skill":
        return folder / f"{spec.model.replace(':', '_').replace('/', '_')}.domain-tools.episodes.jsonl"
    if method == "steward":
        return folder / f"{model_label(spec.model, True, True)}.episodes.jsonl"
    return folder / f"{row_label(method, spec.model)}.episodes.jsonl"


def run_files(spec: Spec, methods: list[str]) -> list[Path]:
    """The test episode files of `methods` in the run folder, those that exist (a stopped run's page)."""
    return [p for m in methods if (p := method_file(spec, m)).exists()]


def run_methods(spec: Spec, methods: list[str], progress: ProgressHook | None = None) -> list[Path]:
    """Every method's rows, resumable; returns the test episode files (the page scores them)."""
    from toolshift.bench.ecosystem.baselines import run_baseline
    from toolshift.steward.experiment import build_libraries, context, held_out
    from toolshift.steward.model_agent import model_steward

    ctx = context(spec.build, spec.run)
    last = spec.versions or ctx.versions
    paths: list[Path] = []
    common = {
        "sample": spec.sample,
        "max_turns": spec.max_turns,
        "workers": spec.workers,
        "command": spec.command,
    }
    executor = Executor.choose(spec.executor, spec.workers, spec.ray_address)
    # No Skill is the benchmark's own baseline, every version at once (steward eval's kept file restores here)
    if "no-skill" in methods:
        paths.append(run_baseline(
            ctx.build, spec.model, ctx.run / "model", split="test", sample=spec.sample, seed=0,
            max_turns=spec.max_turns, setting="domain-tools", command=spec.command, executor=executor,
        ))  # fmt: skip
    rivals = [m for m in methods if m in RIVALS]
    val = sorted(held_out(ctx, spec.train_sample, spec.val)) if rivals else []
    # version by version, every method, so a run stopped part-way compares them all on the versions it reached
    for v in range(1, last + 1):
        for name in methods:
            if name == "steward":
                # Steward's libraries and handoff row up to this version (its row runs in local workers until
                # steward eval's rows take an executor)
                ctx.versions = v
                build_libraries(ctx, progress, spec.train_sample)
                path = model_steward(ctx, spec.model, handoff=True, **common)
            elif name in RIVALS:
                lib = maintain_rival(ctx, spec, name, v, val, progress, executor)
                path = test_rival(ctx, spec, name, v, lib, executor)
            else:
                continue
            if path not in paths:
                paths.append(path)
            if progress:
                progress(f"{name} v{v}", None)
    return paths


__all__ = [
    "METHODS",
    "RIVALS",
    "Spec",
    "check_methods",
    "episodes",
    "maintain_rival",
    "row_label",
    "run_methods",
]
