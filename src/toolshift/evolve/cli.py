"""`toolshift evolve`: make seed sets, run and resume task evolution, select the dataset, report."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolshift import terminal
from toolshift.agents.executor import RAY_ADDRESS_HELP
from toolshift.errors import BadInputError, report_file_errors

SOLVER_EXECUTOR_HELP = "local (this process) or ray (the solver's attempts on a Ray cluster: --ray-address)."

app = typer.Typer(
    help="Task evolution (TURTLE): evolve tasks toward the solver's frontier, verified on worlds.",
    no_args_is_help=True,
)
console = terminal.console()


@app.command("seeds")
def seeds_cmd(
    out: Path = typer.Option(..., "--out", help="Seed task file to write (toolshift.tasks/1)."),
    builtin: bool = typer.Option(True, "--builtin/--no-builtin", help="The built-in worlds' short tasks."),
    build: Path = typer.Option(None, "--build", help="A `toolshift bench build` folder to sample."),
    per_domain: int = typer.Option(1, "--per-domain", min=1, help="Tasks sampled per build domain."),
    domains: str = typer.Option(
        "",
        "--domains",
        "--domain",
        help="Comma-separated domains the tasks keep, built-in and build alike (default: all); one domain "
        "makes a task file `toolshift run --world DOMAIN` takes.",
    ),
    calls: str = typer.Option(
        "", "--calls", help="Only build tasks whose ground truth has this many calls, e.g. 1,5-9."
    ),
    world: list[str] = typer.Option(
        [],
        "--world",
        help="Another benchmark's tasks: tau2-airline, tau2-retail, bfcl[:category], "
        "agentdojo[:suite] (repeatable).",
    ),
    per_world: int = typer.Option(4, "--per-world", min=1, help="Tasks sampled per --world."),
    world_calls: str = typer.Option(
        "", "--world-calls", help="Only --world tasks of these ground-truth lengths (default: --calls)."
    ),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Write a seed task set: the built-in worlds' tasks, a sample of a benchmark build, other benchmarks' tasks."""
    from toolshift.evolve.seeds import builtin_world_tasks, parse_calls, sample_build, world_seeds
    from toolshift.taskfile import write_tasks

    wanted = [d.strip() for d in domains.split(",") if d.strip()] or None
    tasks = builtin_world_tasks() if builtin else []
    lengths = parse_calls(calls) if calls else None
    if build is not None:
        tasks += sample_build(build, per_domain, domains=wanted, seed=seed, calls=lengths)
    elif calls and not world:
        raise BadInputError("--calls selects tasks of a --build or a --world", field="calls")
    world_lengths = parse_calls(world_calls) if world_calls else lengths
    for name in world:
        tasks += world_seeds(name, per_world, seed=seed, calls=world_lengths)
    if wanted is not None:
        tasks = [t for t in tasks if t.domain in wanted]
    if not tasks:
        if wanted is not None:
            raise BadInputError(f"no seed task of domain {', '.join(wanted)}", field="domains")
        raise BadInputError("no seed tasks: give --builtin, --build or --world", field="seeds")
    write_tasks(out, tasks)
    n = len({t.domain for t in tasks})
    console.print(f"{len(tasks)} seed tasks over {n} domain{'' if n == 1 else 's'} → {out}")


def _mark(episode) -> str:  # type: ignore[no-untyped-def]
    """✓ strict success, ± success with collateral writes, · failure."""
    if not (episode.outcome and episode.outcome.success):
        return "·"
    return "±" if episode.outcome.info.get("strict_success") is False else "✓"


def _progress_events(progress: Progress):  # type: ignore[no-untyped-def]
    from toolshift.evolve.engine import Events

    state: dict[str, object] = {}
    programs = progress.add_task("programs", total=None, ok="")

    def started(pid: str, attempts: int) -> None:
        state["bar"] = progress.add_task(f"  {pid[:40]}", total=attempts, ok="")
        state["marks"] = ""

    def attempt(pid: str, episode) -> None:  # type: ignore[no-untyped-def]
        bar = state.get("bar")
        if bar is not None:
            state["marks"] = str(state.get("marks", "")) + (_mark(episode))
            progress.update(bar, advance=1, ok=state["marks"])  # type: ignore[arg-type]

    def done(record) -> None:  # type: ignore[no-untyped-def]
        bar = state.pop("bar", None)
        if bar is not None:
            progress.remove_task(bar)  # type: ignore[arg-type]
        c = f"c={record.completion:.1f}" if record.completion is not None else (record.stage or "")
        progress.update(programs, advance=1, ok=f"last {record.id[:32]} {c}")

    return Events(program_started=started, attempt_done=attempt, program_done=done)


def _run(store, max_steps: int | None, executor: str = "local", ray_address: str | None = None) -> None:  # type: ignore[no-untyped-def]
    from toolshift.agents.executor import Executor, NodeBars
    from toolshift.evolve.engine import Engine
    from toolshift.evolve.select import select

    chosen = Executor.choose(executor, 1, ray_address)

    config = store.config()
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[ok]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        engine = Engine(store, config, events=_progress_events(progress), executor=chosen,
                        nodes=NodeBars(progress, ok="") if chosen.is_ray else None)  # fmt: skip
        records = engine.run(max_steps=max_steps)
    checkpoint = store.checkpoint()
    if checkpoint is not None and checkpoint.steps_done >= checkpoint.steps_total:
        selection = select(store, records)
        console.print(f"final dataset: {selection.kept} tasks → {store.folder / 'final'}")
    _summary(records)


def _summary(records) -> None:  # type: ignore[no-untyped-def]
    from toolshift.evolve.store import generation_stats

    table = Table(title="generations", header_style="bold")
    for col in (
        "generation",
        "programs",
        "evaluated",
        "rejected",
        "feasible",
        "c in [0.3, 0.7]",
        "tokens",
        "cost",
        "seconds",
    ):
        table.add_column(col, justify="right")
    for g in generation_stats(records):
        tokens = sum(c.prompt_tokens + c.completion_tokens for c in g.costs.values())
        costs = [c.cost for c in g.costs.values() if c.cost is not None]
        seconds = sum(c.seconds for c in g.costs.values())
        table.add_row(
            str(g.generation), str(g.programs), str(g.evaluated), str(g.rejected), str(g.feasible), str(g.in_band),
            f"{tokens:,}", f"${sum(costs):.4f}" if costs else "–", f"{seconds:.0f}",
        )  # fmt: skip
    console.print(table)


@app.command("run")
def run_cmd(
    seeds: Path = typer.Option(
        ..., "--seeds", help="Seed tasks (toolshift.tasks/1, e.g. from `evolve seeds`)."
    ),
    out: Path = typer.Option(..., "--out", help="Run folder (created; re-running resumes)."),
    generations: int = typer.Option(3, "--generations", min=0, help="Children per seed lineage."),
    solver: str = typer.Option(
        "embedded", "--solver", help="embedded | openai:<m> | anthropic:<m> | noisy-oracle:<q>"
    ),
    user: str = typer.Option(
        "scripted", "--user", help="User simulator: scripted | embedded | openai:<m> | ..."
    ),
    attempts: int = typer.Option(10, "--attempts", min=1, help="Solver attempts per task (N)."),
    max_turns: int = typer.Option(8, "--max-turns", min=1),
    episode_timeout: float = typer.Option(600.0, "--episode-timeout", help="Hard limit per attempt (s)."),
    proposer: str = typer.Option(
        "structural", "--proposer", help="structural | embedded | openai:<m> | anthropic:<m>"
    ),
    moves: str = typer.Option(
        "coarse",
        "--moves",
        help="Structural proposer: coarse (its operators) | fine (fine moves first, D207)",
    ),
    feedback: str = typer.Option("rules", "--feedback", help="rules | a model for the failure summaries"),
    judge: str = typer.Option("rules", "--judge", help="rules | a model for the trivial-failure filter"),
    labeler: str = typer.Option("rules", "--labeler", help="rules | a model for features and failure modes"),
    model_timeout: float = typer.Option(
        300.0, "--model-timeout", help="Hard limit per proposer/judge call (s)."
    ),
    temperature: float = typer.Option(None, "--temperature", help="Solver sampling temperature."),
    partial_credit: bool = typer.Option(
        False, "--partial-credit", help="Score failed attempts by Δgold share."
    ),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint for every model."),
    seed: int = typer.Option(0, "--seed"),
    max_steps: int = typer.Option(
        None, "--max-steps", min=0, help="Stop after this many steps (resume later)."
    ),
    executor: str = typer.Option("local", "--executor", help=SOLVER_EXECUTOR_HELP),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
) -> None:
    """Evolve the seed tasks; every evaluated program is checkpointed, and re-running resumes."""
    from pydantic import ValidationError

    from toolshift.evolve.solver import SolverConfig
    from toolshift.evolve.store import EvolveConfig, RunStore
    from toolshift.taskfile import read_tasks

    try:
        config = EvolveConfig(
            seed=seed, generations=generations, proposer=proposer, moves=moves, feedback=feedback, judge=judge,
            labeler=labeler, model_timeout=model_timeout, base_url=base_url,
            solver=SolverConfig(
                model=solver, user=user, attempts=attempts, max_turns=max_turns, episode_timeout=episode_timeout,
                temperature=temperature, partial_credit=partial_credit, base_url=base_url, seed=seed,
            ),
        )  # fmt: skip
    except ValidationError as exc:
        raise BadInputError.from_validation(exc) from None
    store = RunStore(out)
    tasks = read_tasks(seeds)
    if store.exists():
        if store.config() != config:
            raise BadInputError(
                "this run folder holds another configuration: use `toolshift evolve resume` or a new --out",
                source=str(store.config_path),
            )
        if [t.fingerprint() for t in store.seeds()] != [t.fingerprint() for t in tasks]:
            raise BadInputError(
                "this run folder was started from other seed tasks", source=str(seeds), field="seeds"
            )
        console.print(f"resuming {out}")
    else:
        if out.exists() and not out.is_dir():
            raise BadInputError("--out must be a folder, and this is a file", source=str(out), field="out")
        store.create(config, tasks)
    _run(store, max_steps, executor, ray_address)


@app.command("resume")
def resume_cmd(
    out: Path = typer.Argument(..., help="A run folder made by `toolshift evolve run`."),
    generations: int = typer.Option(None, "--generations", min=0, help="Extend (or shorten) the run."),
    max_steps: int = typer.Option(None, "--max-steps", min=0, help="Stop after this many steps."),
    executor: str = typer.Option("local", "--executor", help=SOLVER_EXECUTOR_HELP),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
) -> None:
    """Continue an interrupted (or extended) run where its last evaluated program left off."""
    from toolshift.evolve.store import RunStore

    store = RunStore(out)
    store.config()  # a folder that is no run is bad input, named
    if generations is not None:
        store.set_generations(generations)
    _run(store, max_steps, executor, ray_address)


@app.command("select")
def select_cmd(out: Path = typer.Argument(..., help="A run folder.")) -> None:
    """(Re)write the final dataset of a run: highest variance per seed, then the judge."""
    from toolshift.evolve.select import select
    from toolshift.evolve.store import RunStore

    store = RunStore(out)
    store.config()
    selection = select(store)
    console.print(f"final dataset: {selection.kept} tasks → {out / 'final'}")


@app.command("show")
def show_cmd(
    out: Path = typer.Argument(..., help="A run folder."),
    program: str = typer.Option(None, "--program", help="Print one program's record and text."),
) -> None:
    """List a run's programs (lineage, operator, completion, fitness), or show one program."""
    from toolshift.evolve.store import RunStore

    store = RunStore(out)
    store.config()
    records = store.records()
    if program is not None:
        found = next((r for r in records if r.id == program), None)
        if found is None:
            raise BadInputError(f"no program {program!r} in this run", source=str(out), field="program")
        console.print(found.program, markup=False, highlight=False)
        console.print(
            found.model_dump_json(indent=1, exclude={"program", "task"}), markup=False, highlight=False
        )
        return
    table = Table(title=f"{len(records)} programs", header_style="bold")
    width = max((len(r.id) for r in records), default=8)
    table.add_column("program", no_wrap=True, min_width=width)
    for col in ("parent", "made by", "status", "c", "c (SR)", "L", "mean fitness", "failure mode"):
        table.add_column(col, justify="right" if col in ("c", "c (SR)", "L", "mean fitness") else "left")
    for r in records:
        made = r.mutation.operator or r.mutation.proposer
        status = r.status if r.evaluated else f"{r.stage}"
        c = f"{r.completion:.2f}" if r.completion is not None else "–"
        sr = f"{r.sr_completion:.2f}" if r.sr_completion is not None else "–"
        length = f"{r.length:.1f}" if r.length is not None else "–"
        table.add_row(
            r.id, r.parent or "", made, status, c, sr, length, f"{r.mean:.3f}", r.failure_mode or ""
        )
    console.print(table)


@app.command("report")
def report_cmd(
    runs: list[Path] = typer.Argument(..., help="Run folders to report on."),
    out: Path = typer.Option(Path("docs/results/evolve.md"), "--out", help="Markdown file (PNGs beside it)."),
    embeddings: str = typer.Option("auto", "--embeddings", help="auto | minilm | tfidf"),
    title: str = typer.Option("", "--title", help="The page's title after 'Task evolution (TURTLE): '."),
    note: str = typer.Option("", "--note", help="A paragraph under the title (what the runs are)."),
) -> None:
    """Analyses: completion-rate histograms, features, failures, heatmap, embedding map, co-occurrence."""
    from toolshift.evolve.report import write_report

    if embeddings not in ("auto", "minilm", "tfidf"):
        raise BadInputError(f"--embeddings {embeddings!r}: use auto, minilm or tfidf", field="embeddings")
    path = write_report(runs, out, embeddings=embeddings, title=title, note=note)
    console.print(f"report → {path}")


report_file_errors(app)
