"""Flows learned from many agents' published runs, replayed on agents and benchmarks they never saw (seed 003).

The runs are ../shared/data/published-runs (PROVENANCE.md there): τ²-bench simulations of many agents, τ-bench v1
runs, AgentDojo's utility runs and small BFCL files; with them τ-bench's GPT-4o airline trials and WorkBench's
runs. `toolshift flows report-many` converts them in memory (nothing is written but the page), then:

- the read-only ceiling per benchmark and domain, beside the seed's (and AgentDojo's read as JSON, as before D340);
- across agents within τ²-bench and within each AgentDojo suite: leave one agent out, the flow and θ chosen by
  cross-validation over the other agents only (`toolshift.flows.agentfolds`, nested), replayed on the one;
- τ²-bench → τ-bench: the flow and θ chosen over τ²-bench's agents, learned on all of them, replayed on τ-bench's
  runs (another harness, a year apart): τ-bench's episodes are served against τ²'s catalog, whose tools are
  τ-bench's with one more read (`get_flight_status`, `get_item_details`);
- a threshold per decision and per-site calibration, chosen by cross-validation over agents
  (`perdecision.choose_rule(by="agent")`), replayed on τ-bench the same way.

Nothing is chosen on a replayed target: every choice is made on the source agents' runs, before the replay.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from toolshift.flows.agentfolds import AgentCrossval, Cell, NestedPick, Options, choose_options, nested_pick
from toolshift.flows.ceiling import TurnAnatomy, anatomy
from toolshift.flows.decide import DECIDERS, Decider
from toolshift.flows.replay import EpisodeReplay, ReplayResult, replay
from toolshift.flows.timeline import Catalog, Timeline, timelines
from toolshift.traces.conversion import Conversion
from toolshift.traces.episode import Episode

RUNS = "published-runs"
TAUBENCH_GPT4O = "tau-bench/gpt-4o-airline.trials-0-1.json"
WORKBENCH = "workbench/results"
TAU2_DOMAINS = ("airline", "retail", "telecom")
"""τ²-bench domains with three or more agents (telecom-workflow has one): cross-validated over agents."""
TRANSFER = ("airline", "retail")
"""τ²-bench → τ-bench: the domains both benchmarks have."""
SEED_THETA = 0.3
"""The seed's replays' θ: both deciders are also replayed there, beside the chosen rules."""


@dataclass
class Runs:
    """One benchmark domain's converted runs."""

    benchmark: str
    domain: str
    catalog: Catalog
    episodes: list[Episode]
    timelines: list[Timeline]
    files: int
    notes: list[str] = field(default_factory=list)

    @property
    def agents(self) -> list[str]:
        return sorted({t.agent for t in self.timelines})


def _group(conv: Conversion, benchmark: str, files: int) -> dict[str, Runs]:
    """The conversion's episodes by domain, each with its catalog and timelines."""
    by_domain: dict[str, list[Episode]] = defaultdict(list)
    for episode in conv.episodes:
        by_domain[episode.domain].append(episode)
    out = {}
    for domain, episodes in sorted(by_domain.items()):
        catalog = Catalog.of(conv.catalogs[domain])
        out[domain] = Runs(
            benchmark, domain, catalog, episodes, timelines(episodes, catalog), files, list(conv.notes)
        )
    return out


Job = tuple[str, Callable[[Path], Conversion], list[Path]]
"""(benchmark, converter, files)."""


def default_jobs(data: Path) -> list[Job]:
    """Every published run's file, with its converter: the page's inputs."""
    from toolshift.traces.agentdojo import convert_agentdojo
    from toolshift.traces.bfcl import bfcl_files, convert_bfcl
    from toolshift.traces.tau2 import convert_tau2, tau2_files
    from toolshift.traces.taubench import convert_taubench_v1
    from toolshift.traces.workbench import convert_workbench_csv, workbench_files

    root = data / RUNS
    return [
        ("τ²-bench", convert_tau2, tau2_files(root / "tau2")),
        (
            "τ-bench",
            convert_taubench_v1,
            [*sorted((root / "taubench").rglob("*.json")), data / TAUBENCH_GPT4O],
        ),
        ("AgentDojo", convert_agentdojo, sorted((root / "agentdojo").rglob("*.json"))),
        ("BFCL", lambda p: convert_bfcl(p, skip_bad=True), bfcl_files(root / "bfcl")),
        ("WorkBench", convert_workbench_csv, workbench_files(data / WORKBENCH)),
    ]


def load_runs(jobs: Sequence[Job], progress: Progress | None = None) -> dict[str, dict[str, Runs]]:
    """The jobs' runs, converted in memory and grouped: benchmark → domain → runs (BFCL's refused entries, the
    AIREV files', are counted by its converter and left out)."""
    task = (
        progress.add_task("converting", total=sum(len(files) for _, _, files in jobs)) if progress else None
    )
    out: dict[str, dict[str, Runs]] = {}
    for benchmark, convert, files in jobs:
        total = Conversion(converter=benchmark)
        for path in files:
            total.extend(convert(path))
            if progress is not None and task is not None:
                progress.advance(task)
        total.note_unknown_tools()
        out[benchmark] = _group(total, benchmark, len(files))
    if progress is not None and task is not None:
        progress.remove_task(task)
    return out


def as_catalog(runs: Runs, catalog: Catalog) -> list[Timeline]:
    """The runs' episodes read against another catalog (τ-bench's served a flow learned on τ²-bench)."""
    return timelines(runs.episodes, catalog)


# --- the studies --------------------------------------------------------------------------------------------


@dataclass
class AgentStudy:
    """Leave one agent out within one benchmark domain: the cross-validation, each decider's choice and nested
    figures, and each agent's replay with the choice made without it (for paired intervals)."""

    runs: Runs
    cv: AgentCrossval
    options: Options
    shares: list[tuple[Options, float]]
    nested: dict[str, NestedPick]
    held_out: dict[str, ReplayResult]
    """Per decider: every agent's episodes replayed with the choice made without it."""
    ceilings: dict[str, int]
    """Ceiling turns by episode id."""
    seconds: float


def study_agents(runs: Runs, progress: Progress | None = None) -> AgentStudy:
    """Cross-validate over `runs`' agents and replay each agent with the choice made without it."""
    start = time.perf_counter()
    verdicts = any(t.success for t in runs.timelines)
    task = progress.add_task(f"{runs.benchmark} {runs.domain}: folds", total=None) if progress else None

    def tick() -> None:
        if progress is not None and task is not None:
            progress.advance(task)

    cv, options, shares = choose_options(runs.timelines, runs.catalog, verdicts=verdicts, progress=tick)
    nested = {d: nested_pick(cv, d) for d in cv.deciders}
    _, per_episode = anatomy(runs.timelines)
    held_out: dict[str, list[EpisodeReplay]] = {d: [] for d in cv.deciders}
    for g, agent in enumerate(cv.agents):
        rest = [t for t in runs.timelines if t.agent != agent]
        held = [t for t in runs.timelines if t.agent == agent]
        flows: dict[Options, Any] = {}
        for d in cv.deciders:
            pick = nested[d].picks[g][1]
            if pick is None:
                held_out[d] += [EpisodeReplay(t.episode_id, t.task_id, t.agent, len(t.turns)) for t in held]
                continue
            if pick.options not in flows:
                flows[pick.options] = pick.options.learn(rest, runs.catalog)
            held_out[d] += replay(held, Decider(flows[pick.options], d, pick.theta)).episodes  # type: ignore[arg-type]
        tick()
    if progress is not None and task is not None:
        progress.remove_task(task)
    return AgentStudy(
        runs, cv, options, shares, nested,
        {d: ReplayResult(d, -1.0, eps, []) for d, eps in held_out.items()},
        {e: a.ceiling for e, a in per_episode.items()},
        time.perf_counter() - start,
    )  # fmt: skip


@dataclass
class Transfer:
    """A flow chosen and learned on one benchmark's agents, replayed on another's runs."""

    source: AgentStudy
    targets: list[Runs]
    timelines: list[Timeline]
    anatomy: TurnAnatomy
    ceilings: dict[str, int]
    chosen: dict[str, ReplayResult]
    """Per decider, at the θ chosen over the source agents (θ 0.3 where none kept within the budget)."""
    at_seed_theta: dict[str, ReplayResult]
    cells: dict[str, Cell | None]
    rules: dict[str, tuple[str, ReplayResult, Any]] = field(default_factory=dict)
    """Per decider: the rule `choose_rule(by="agent")` picks overall, its held-out replay, and the choice."""


def transfer(source: AgentStudy, targets: list[Runs], *, rules: bool = True,
             progress: Progress | None = None) -> Transfer:  # fmt: skip
    """Learn the source's chosen flow on every source agent, replay the targets (read against its catalog)."""
    catalog = source.runs.catalog
    served = [t for runs in targets for t in as_catalog(runs, catalog)]
    total, per_episode = anatomy(served)
    flow = source.options.learn(source.runs.timelines, catalog)
    cells = {d: source.cv.choice(d) for d in source.cv.deciders}
    chosen = {
        d: replay(served, Decider(flow, d, cells[d].theta if cells[d] else SEED_THETA))  # type: ignore[arg-type]
        for d in source.cv.deciders
    }
    seed = {d: replay(served, Decider(flow, d, SEED_THETA)) for d in source.cv.deciders}  # type: ignore[arg-type]
    out = Transfer(
        source, targets, served, total, {e: a.ceiling for e, a in per_episode.items()}, chosen, seed, cells
    )
    if rules:
        out.rules = _rules(source, served, progress)
    return out


def _rules(source: AgentStudy, served: list[Timeline], progress: Progress | None) -> dict[str, tuple[str, ReplayResult, Any]]:  # fmt: skip
    """A threshold per decision and per-site calibration, chosen over the source's agents; replayed on `served`."""
    from toolshift.flows.perdecision import choose_rule
    from toolshift.flows.pricing import Price

    o = source.options
    task = progress.add_task(f"{source.runs.domain}: rules over agents", total=None) if progress else None
    choice = choose_rule(
        source.runs.timelines, source.runs.catalog, walk_ranks=o.walk_ranks, walk_prior=o.walk_prior,
        price=Price.parse("0,1,1"), learn_from_all=o.learn_from_all, records=o.records, fallbacks=o.fallbacks,
        ints=o.ints, by="agent", weighting=o.weighting,
        progress=(lambda: progress.advance(task)) if progress is not None and task is not None else None,
    )  # fmt: skip
    if progress is not None and task is not None:
        progress.remove_task(task)
    flow = o.learn(source.runs.timelines, source.runs.catalog)
    out = {}
    for d in DECIDERS:
        family = choice.overall(d) or "θ"
        rule = choice.rule(d, family)
        result = replay(served, Decider(flow, d, rule=rule, intents=choice.vocabulary))  # type: ignore[arg-type]
        out[d] = (family, result, choice)
    return out


@dataclass
class Study:
    """Everything the page shows."""

    runs: dict[str, dict[str, Runs]]
    within: dict[str, AgentStudy]
    """τ²-bench domains and AgentDojo suites, cross-validated over agents (key `benchmark/domain`)."""
    transfers: dict[str, Transfer]
    dojo_json: dict[str, TurnAnatomy]
    """AgentDojo suites' anatomy with results read as JSON only (as before D340)."""
    seconds: float


@dataclass(frozen=True)
class Scope:
    """What the study covers (the page: everything; a test: a slice)."""

    tau2_domains: tuple[str, ...] = TAU2_DOMAINS
    transfer: tuple[str, ...] = TRANSFER
    suites: tuple[str, ...] | None = None
    """AgentDojo suites cross-validated (None: every suite)."""
    rules: bool = True


def run_study(jobs: Sequence[Job], scope: Scope = Scope(), console: Console | None = None) -> Study:
    """Convert the jobs' runs, then every study of the module doc within `scope`."""
    from toolshift import terminal

    console = console or terminal.console()
    start = time.perf_counter()
    with Progress(console=console, transient=True) as progress:
        runs = load_runs(jobs, progress)
        within: dict[str, AgentStudy] = {}
        for domain in scope.tau2_domains:
            within[f"τ²-bench/{domain}"] = study_agents(runs["τ²-bench"][domain], progress)
        for suite, dojo in sorted(runs.get("AgentDojo", {}).items()):
            if scope.suites is None or suite in scope.suites:
                within[f"AgentDojo/{suite}"] = study_agents(dojo, progress)
        transfers = {}
        for domain in scope.transfer:
            targets = [r for d, r in runs["τ-bench"].items() if d.endswith(domain)]
            transfers[domain] = transfer(
                within[f"τ²-bench/{domain}"], targets, rules=scope.rules, progress=progress
            )
    dojo_json = {
        suite: anatomy(timelines(r.episodes, replace(r.catalog, results="json")))[0]
        for suite, r in runs.get("AgentDojo", {}).items()
    }
    return Study(runs, within, transfers, dojo_json, time.perf_counter() - start)


def write_many_report(out: Path, data: Path | None = None, *, console: Console | None = None) -> Path:
    """Run every study and write the page atomically."""
    from toolshift.fileio import write_text_atomic
    from toolshift.flows.many_page import render
    from toolshift.flows.results import default_data_dir

    study = run_study(default_jobs(data or default_data_dir()), console=console)
    return write_text_atomic(out, render(study))
