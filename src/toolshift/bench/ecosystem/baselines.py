"""Baselines that give the metrics meaning without a model, plus any model, run over MCP on any version and setting.

* `oracle` follows the current version's reference path (one episode per criterion when the
  step- and cost-optimal paths differ): SR and SPE must come out at 100%. In the standard setting
  it fetches each tool by searching its exact name, so its exposed set is exactly the path's tools.
* `frozen-v1` replays the v1 reference path by tool names and arguments on every version (in the
  standard setting it searches each v1 name first), and stops at the first call that fails: its
  procedure has no step for that (`FrozenProcedure`). It loses success where its tools were retired
  or changed, and efficiency where better paths appeared; it can never beat a previous optimum.
* `embedded`, `openai:<m>`, `anthropic:<m>`: a model agent of `toolshift.agents`.

Every episode goes through the real agent loop (`toolshift.agents.loop.run_episode`): an MCP client
of a fresh session of that version and setting (`server.EcosystemServer`) over the in-memory
transport, with any user simulator (`scripted`, `embedded`, `openai:<m>`, `anthropic:<m>`). Episodes
record `ecosystem_version = "<ecosystem id>/v<n>"` and `source.setting`, so `toolshift bench eval`
scores them and refuses foreign runs.
"""

from __future__ import annotations

import asyncio
import json
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.agents.assets import Asset
from toolshift.agents.chat import ModelReply, ToolDef
from toolshift.agents.config import resolve_endpoints
from toolshift.agents.executor import Executor, Job, Lost, NodeProgress, lost_episode
from toolshift.agents.policies import ScriptedCall, ScriptedPolicy
from toolshift.bench.ecosystem.paths import ReferenceRecord, load_references
from toolshift.bench.ecosystem.server import Served, opener
from toolshift.bench.ecosystem.settings import (
    SEARCH_TOOL,
    EcosystemVersion,
    VersionWorlds,
    check_setting,
    exposure_for,
)
from toolshift.bench.ecosystem.store import EcosystemManifest, load_ecosystem
from toolshift.errors import BadInputError
from toolshift.models import GoldCall, Task
from toolshift.traces.episode import Episode
from toolshift.traces.store import EpisodeWriter, iter_episodes, read_header, write_episodes

Baseline = str
"""`oracle`, `frozen-v1`, `embedded`, or a model of `toolshift.agents` (`openai:<name>`, `anthropic:<name>`)."""
SCRIPTED: tuple[str, ...] = ("oracle", "frozen-v1")
BASELINES: tuple[str, ...] = ("oracle", "frozen-v1", "embedded", "openai:<model>", "anthropic:<model>")


STUCK_TEXT = "I cannot go on with your request: a step of my procedure failed."


def call_failed(content: str | None) -> bool:
    """Did a tool result (as the agent reads it) report a failure? Refusals by the harness start with
    `error:`; a world's errors are a `{code, message}` object."""
    text = (content or "").strip()
    if text.startswith("error:"):
        return True
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(body, dict) and set(body) == {"code", "message"}


class FrozenProcedure(ScriptedPolicy):
    """frozen-v1: a fixed list of calls; at the first call that fails it says it cannot go on, then ends.

    Without this it would call on past a failed lookup with the ids it memorised from v1, and be
    credited with a shorter, cheaper path than any the version offers.
    """

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        last = messages[-1] if messages else {}
        if not self._told_done and last.get("role") == "tool" and call_failed(last.get("content")):
            self._next = len(self.calls)
            self._told_done = True
            return ModelReply(text=STUCK_TEXT, prompt_tokens=0, completion_tokens=0, cost=0.0)
        return await super().complete(messages, tools)


def _as_gold(calls: list[tuple[str, dict[str, Any]]]) -> list[GoldCall]:
    return [GoldCall(tool=name, arguments=args) for name, args in calls]


@dataclass(frozen=True)
class PlannedEpisode:
    task: Task
    version: int
    criterion: str
    """`step`, `cost`, or `both` (the two reference paths are the same calls)."""
    calls: list[tuple[str, dict[str, Any]]] | None
    reference: ReferenceRecord


def with_searches(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """A scripted path for the standard setting: fetch each tool by its exact name before its first call."""
    out: list[tuple[str, dict[str, Any]]] = []
    fetched: set[str] = set()
    for name, args in calls:
        if name not in fetched:
            fetched.add(name)
            out.append((SEARCH_TOOL, {"query": name, "k": 1}))
        out.append((name, args))
    return out


def plan_baseline(
    baseline: Baseline,
    records: list[ReferenceRecord],
    tasks: dict[str, Task],
    *,
    split: str | None = "test",
    sample: int | None = None,
    seed: int = 0,
    versions: tuple[int, ...] | None = None,
) -> list[PlannedEpisode]:
    """What a baseline runs: which task × version episodes (`versions`: only these), and for scripted ones, which
    calls. The sample is drawn over tasks before the versions are chosen, so a task sampled is one of every run."""
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
    if versions is not None:
        chosen = [r for r in chosen if r.version in versions]
    out: list[PlannedEpisode] = []
    for r in chosen:
        task = tasks[r.task_id]
        assert r.step is not None and r.cost is not None
        if baseline == "oracle":
            if r.step.calls == r.cost.calls:
                out.append(PlannedEpisode(task, r.version, "both", r.step.calls, r))
            else:
                out.append(PlannedEpisode(task, r.version, "step", r.step.calls, r))
                out.append(PlannedEpisode(task, r.version, "cost", r.cost.calls, r))
        elif baseline == "frozen-v1":
            v1 = by.get((r.task_id, 1))
            if v1 is None or v1.step is None:
                continue
            out.append(PlannedEpisode(task, r.version, "both", v1.step.calls, r))
        elif baseline.endswith("@oracle"):  # an outside agent driven by the oracle: the step-optimal path
            out.append(PlannedEpisode(task, r.version, "both", r.step.calls, r))
        else:
            out.append(PlannedEpisode(task, r.version, "both", None, r))
    return out


def episode_key(baseline: str, p: PlannedEpisode) -> str:
    return f"{baseline}:{p.task.id}:v{p.version}:{p.criterion}"


@dataclass
class RunSetting:
    """What changes an episode besides its task and version (a baseline file holds one of these)."""

    setting: str = "standard"
    user: str = "scripted"
    max_turns: int = 40
    base_url: str | None = None


class VersionCatalogs:
    """The whole catalog of the version being run, built once (the standard setting needs it)."""

    def __init__(self, worlds: VersionWorlds, domains: list[str]) -> None:
        self.worlds, self.domains = worlds, domains
        self._eco: EcosystemVersion | None = None

    def __call__(self, version: int) -> EcosystemVersion:
        if self._eco is None or self._eco.version != version:
            self._eco = EcosystemVersion(self.worlds, self.domains, version)
        return self._eco


@dataclass
class _Opened:
    """A baseline run opened in a process (the driver's or a worker's): its planned episodes by key, the
    worlds of the build, and the model client an API agent shares across episodes."""

    baseline: str
    eco_id: str
    worlds: VersionWorlds
    versions: VersionCatalogs
    run: RunSetting
    planned: dict[str, PlannedEpisode]
    config: Any
    shared: Any


def _open(spec: _BaselineSpec) -> _Opened:
    """`Job.open`: plan the run again from the build (the same seeded sample) in this process."""
    from toolshift.agents.config import RunConfig, make_model

    eco, worlds, planned = _plan_run(
        spec.build.local(), spec.baseline, spec.split, spec.sample, spec.seed, spec.versions
    )
    run, baseline = spec.run, spec.baseline
    config = RunConfig(
        world=str(worlds.build),
        model=baseline if baseline not in SCRIPTED else "oracle",
        user=run.user,
        max_turns=run.max_turns,
        base_url=run.base_url,
    )
    shared = None
    if baseline.partition(":")[0] in ("openai", "anthropic"):  # an API client holds no per-episode state
        shared = make_model(baseline, config, seed=0)
    return _Opened(
        baseline, eco.id, worlds, VersionCatalogs(worlds, list(eco.domains)), run,
        {episode_key(baseline, p): p for p in planned}, config, shared,
    )  # fmt: skip


def _run_one(opened: _Opened, key: str) -> str:
    """`Job.run`: the planned episode `key`, as JSON."""
    from toolshift.agents.config import make_model, make_user
    from toolshift.agents.policies import oracle

    p, baseline, run = opened.planned[key], opened.baseline, opened.run
    seed = zlib.crc32(key.encode())
    if baseline in SCRIPTED:
        calls = p.calls or []
        script = with_searches(calls) if run.setting == "standard" else calls
        if baseline == "frozen-v1":
            agent: Any = FrozenProcedure("frozen-v1", [ScriptedCall(n, a) for n, a in script])
        else:
            agent = oracle(p.task, _as_gold(script))
    elif opened.shared is not None:
        agent = opened.shared
    else:  # the embedded model samples per turn (an outside agent is one per episode): seeded by the episode
        task = p.task
        if baseline.endswith("@oracle"):  # an outside agent driven by the oracle follows this version's path
            calls = p.calls or []
            script = with_searches(calls) if run.setting == "standard" else calls
            task = p.task.model_copy(update={"gold_path": _as_gold(script)})
        agent = make_model(baseline, opened.config, seed=seed, task=task)
    # a model user is seeded by the episode too (make_user adds one to the seed it derives)
    user = make_user(opened.config.model_copy(update={"seed": seed}), p.task, 0)
    ep = asyncio.run(
        run_planned(p, agent, user, opened.worlds, opened.eco_id, opened.versions, run, baseline)
    )
    return ep.model_dump_json()


async def run_planned(
    p: PlannedEpisode,
    agent: Any,
    user: Any,
    worlds: VersionWorlds,
    eco_id: str,
    versions: VersionCatalogs,
    run: RunSetting,
    baseline: str,
    skills: Any = None,
) -> Episode:
    """One planned episode with this agent and user, served as the run's setting serves it (bench/ runs
    one agent against another on the same episodes through this). `skills`: a `SkillShelf` of Agent Skills
    offered to the agent (`toolshift.agents.skills`; the skill methods' rows)."""
    from toolshift.agents.loop import EpisodeLimits, run_episode

    eco = versions(p.version) if run.setting == "standard" else None
    exposure = exposure_for(
        run.setting,
        version=eco,
        catalog=None if eco else worlds.catalog(p.task.domain, p.version),
        task=p.task,
        reference=p.reference,
    )
    served = Served(eco_id, p.version, run.setting, exposure.domain, exposure.task)
    return await run_episode(
        p.task,
        agent,
        user,
        opener(worlds, served, exposure, eco),
        episode_id=episode_key(baseline, p),
        limits=EpisodeLimits(max_turns=run.max_turns),
        agent_name=baseline,
        source={"baseline": baseline, "criterion": p.criterion},
        skills=skills,
    )


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
    setting: str = "standard",
    user: str = "scripted",
    workers: int = 1,
    executor: Executor | None = None,
    nodes: NodeProgress | None = None,
    versions: tuple[int, ...] | None = None,
) -> Path:
    """Run one baseline on the evolved build in one setting with one user simulator, appending its episodes
    to `out/<baseline>[.<setting>][.user-<user>].episodes.jsonl`.

    Resumable: episodes already in the file (by id) are not run again; a file of another ecosystem or
    another setting is refused. The episodes run where `executor` says (`toolshift.agents.executor`: this
    process, `workers` local processes, or a Ray cluster, the build shipped to each node once); this
    process alone writes them, the same episodes to the same file whichever runs them. `nodes` gets each
    node's counts as they change.
    """
    from toolshift.agents.config import check_model_spec

    check_setting(setting)
    check_model_spec(user, role="user")
    if baseline not in SCRIPTED:
        try:
            check_model_spec(baseline, role="model")
        except BadInputError:
            raise BadInputError(
                f"unknown agent {baseline!r} (one of {', '.join(BASELINES)})", field="agent"
            ) from None
        if baseline in ("replay", "scripted"):
            raise BadInputError(f"{baseline!r} cannot run as an ecosystem baseline", field="agent")
    if sample is not None and sample < 1:
        raise BadInputError("--sample must be at least 1", field="sample")
    executor = executor or Executor.choose("local", workers)
    if Path(out).exists() and not Path(out).is_dir():
        raise BadInputError("--out must be a folder, and this is a file", source=str(out), field="out")
    eco, _, planned = _plan_run(build, baseline, split, sample, seed, versions)
    path = Path(out) / baseline_file(baseline, setting, user)
    turns = max_turns or (40 if baseline in SCRIPTED else 10 if baseline == "embedded" else 30)
    # The endpoint as `toolshift run` resolves it (--base-url, TOOLSHIFT_BASE_URL, OPENAI_BASE_URL), so the
    # same file against another endpoint is refused as another setting instead of mixing results (D24).
    url = resolve_endpoints(baseline, user, base_url)["base_url"]
    run = RunSetting(setting=setting, user=user, max_turns=turns, base_url=url)
    # What changes an episode besides its task and version: a file holds episodes of one setting only.
    fixed = {"max_turns": turns, "base_url": url, "setting": setting, "user": user}
    meta = {"ecosystem": eco.id, "build": eco.build, "baseline": baseline, "command": command, **fixed}
    done: set[str] = set()
    if path.exists():
        header = read_header(path).meta
        recorded = header.get("ecosystem")
        if recorded != eco.id:
            raise BadInputError(
                f"holds episodes of ecosystem {recorded!r}, not {eco.id!r}; choose another --out",
                source=str(path),
            )
        for name, value in fixed.items():
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
    todo = sorted((p for p in planned if episode_key(baseline, p) not in done), key=lambda p: p.version)
    by_key = {episode_key(baseline, p): p for p in todo}
    if progress_total:
        progress_total(len(todo))
    with EpisodeWriter(path, meta=meta, append=True) as writer:

        def keep(ep: Episode) -> None:
            writer.write(ep)
            if progress:
                progress()

        def lost(key: str, why: Lost) -> None:
            p = by_key[key]
            ep = lost_episode(p.task, episode_id=key, trial=0, agent_name=baseline, lost=why)
            ep.ecosystem_version = f"{eco.id}/v{p.version}"
            ep.source.update({"baseline": baseline, "criterion": p.criterion, "setting": setting})
            keep(ep)

        if todo:  # one version's whole catalog at a time: each process builds each version's catalog once
            spec = _BaselineSpec(executor.asset(build), baseline, split, sample, seed, run, versions)
            executor.run(
                Job(_open, _run_one, spec, name=f"bench {baseline}"), list(by_key), key=str,
                on_result=lambda _key, text: keep(Episode.model_validate_json(text)), on_lost=lost,
                progress=nodes,
            )  # fmt: skip
    return path


def _plan_run(
    build: str | Path,
    baseline: str,
    split: str | None,
    sample: int | None,
    seed: int,
    versions: tuple[int, ...] | None = None,
) -> tuple[EcosystemManifest, VersionWorlds, list[PlannedEpisode]]:
    """The build's ecosystem, its worlds and the run's planned episodes (the parent's and each worker's)."""
    eco = load_ecosystem(build)
    _, records = load_references(build)
    worlds = VersionWorlds(build)
    tasks = {t.id: t for d in eco.domains for t in worlds.tasks(d)}
    return (
        eco,
        worlds,
        plan_baseline(baseline, records, tasks, split=split, sample=sample, seed=seed, versions=versions),
    )


@dataclass(frozen=True)
class _BaselineSpec:
    """What a worker needs to plan a baseline run again: the build (shipped to Ray nodes) and the run's
    settings; each item is an episode's key."""

    build: Asset
    baseline: str
    split: str | None
    sample: int | None
    seed: int
    run: RunSetting
    versions: tuple[int, ...] | None = None


def parse_versions(text: str | None) -> tuple[int, ...] | None:
    """`--versions 1,3` as a tuple of version numbers (None: every version)."""
    if text is None or not text.strip():
        return None
    try:
        found = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise BadInputError(
            f"--versions takes version numbers separated by commas, not {text!r}", field="versions"
        ) from None
    if not found or min(found) < 1:
        raise BadInputError(f"--versions takes versions from 1, not {text!r}", field="versions")
    return found


def baseline_file(baseline: str, setting: str = "standard", user: str = "scripted") -> str:
    """`<agent>[.<setting>][.user-<user>].episodes.jsonl` (':' and '/' as '_')."""
    stem = baseline + ("" if setting == "standard" else f".{setting}")
    stem += "" if user == "scripted" else f".user-{user}"
    return f"{stem.replace(':', '_').replace('/', '_')}.episodes.jsonl"
