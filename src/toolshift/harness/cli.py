"""`toolshift harness`: the shipped harness specs, and a spec tried on one clinic task."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from toolshift import terminal

app = typer.Typer(
    help="Agents that own their loop: harness CLIs from spec files, Python agents, agent SDKs.",
    no_args_is_help=True,
)
console = terminal.console()


def _bar():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=terminal.console(stderr=True))  # fmt: skip


@app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON on stdout.")) -> None:
    """The shipped harness specs, what each speaks to its model, and where its program is (or is not)."""
    from toolshift.harness.spec import SHIPPED, find_executable, load_spec

    rows = []
    for name in SHIPPED:
        spec = load_spec(name)
        package = f"{spec.package.manager}:{spec.package.name}@{spec.package.version}" if spec.package else ""
        rows.append({"name": name, "title": spec.title, "package": package, "wire_api": spec.wire_api,
                     "program": find_executable(spec)})  # fmt: skip
    if as_json:
        terminal.print_json(rows)
        return
    table = Table(title=escape("harness specs (--model harness:<name>[@<model>])"), header_style="bold")
    for column in ("name", "title", "package", "wire API", "program"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["name"],
            r["title"],
            escape(r["package"]),
            r["wire_api"],
            r["program"] or "not installed (make harnesses)",
        )
    console.print(table)
    console.print(
        "Python agents: --model python:<module>:<factory>[@<model>] or python:openai-agents (docs/usage.md)"
    )


@app.command("show")
def show(name: str = typer.Argument(..., help="A shipped spec's name, or a spec file's path.")) -> None:
    """A spec as toolshift reads it (checked), with the program it would run."""
    from toolshift.harness.spec import find_executable, load_spec

    spec = load_spec(name)
    print(json.dumps(spec.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False))
    console.print(f"program: {find_executable(spec) or 'not installed'}")


@app.command("try")
def try_cmd(
    agent: str = typer.Argument(..., help="harness:<name>[@<model>] or python:<module>:<factory>[@<model>]"),
    max_turns: int = typer.Option(8, "--max-turns", min=1),
) -> None:
    """One clinic task (cancel an appointment) with the scripted user: the transcript and the verdict. The
    quickest check of a new harness spec (docs/usage.md, "Bring your own agent")."""
    from toolshift.agents.config import RunConfig, check_model_spec, is_outside, make_agent, make_user
    from toolshift.agents.demo import demo_tasks, transcript
    from toolshift.agents.loop import run_episode
    from toolshift.agents.worlds import world_opener
    from toolshift.errors import BadInputError

    check_model_spec(agent, role="model")
    if not is_outside(agent):
        raise BadInputError(
            f"{agent!r} is not an agent that owns its loop (harness:… or python:…)", field="agent"
        )
    task = demo_tasks()[0]
    config = RunConfig(world="clinic", model=agent, max_turns=max_turns)
    made, user, opener = make_agent(config, task, 0), make_user(config, task, 0), world_opener("clinic")
    episode = asyncio.run(
        run_episode(task, made, user, opener, episode_id=f"try:{task.id}", limits=config.limits())
    )
    console.print(transcript(episode))
    outcome = episode.outcome
    console.print(
        f"{episode.harness} with {episode.model}: {episode.termination_reason}, success "
        f"{outcome.success if outcome else None}, {outcome.info.get('turns') if outcome else '?'} turns, "
        f"{episode.duration:.1f} s"
    )


@app.command("compare")
def compare(
    ctx: typer.Context,
    build: Path = typer.Argument(..., help="The Δτ-Bench build (evolved, with reference paths)."),
    tau2: Path = typer.Option(
        None, "--tau2", help="A τ²-bench airline build (bench import, evolve, reference)."
    ),
    agents: str = typer.Option(
        "embedded,harness:codex,harness:qwen-code,python:openai-agents",
        "--agents",
        help="Comma-separated: embedded (toolshift's own loop) and outside agents (harness:…, python:…).",
    ),
    model: str = typer.Option("embedded", "--model", help="The one model every agent runs on."),
    sample: int = typer.Option(40, "--sample", min=1, help="Δτ-Bench test tasks."),
    versions: str = typer.Option("1,3", "--versions", help="Δτ-Bench versions."),
    tau2_sample: int = typer.Option(20, "--tau2-sample", min=1, help="τ²-bench airline test tasks."),
    max_turns: int = typer.Option(8, "--max-turns", min=1),
    out: Path = typer.Option(Path("runs/harnesses"), "--out", help="Run folder (resumable)."),
    page: Path = typer.Option(
        None, "--page", help="Write the results page here (docs/results/harnesses.md)."
    ),
    instrument: bool = typer.Option(
        True, "--instrument/--no-instrument", help="Also the oracle-driven rows."
    ),
    instrument_sample: int = typer.Option(
        10, "--instrument-sample", min=1, help="Δτ-Bench tasks of those rows."
    ),
    workers: int = typer.Option(1, "--workers", min=1, help="Local processes for the episodes."),
    page_only: bool = typer.Option(
        False, "--page-only", help="Write the page from the episodes already run."
    ),
) -> None:
    """Every agent on the same Δτ-Bench and τ²-bench airline tasks with one model; docs/results/harnesses.md."""
    import os

    from toolshift.agents.config import check_model_spec
    from toolshift.agents.executor import Executor
    from toolshift.bench.ecosystem.baselines import parse_versions
    from toolshift.fileio import write_text_atomic
    from toolshift.harness.compare import ComparePlan, Part, collect
    from toolshift.harness.compare_page import render

    names = [a.strip() for a in agents.split(",") if a.strip()]
    for name in names:
        if name != "embedded":
            check_model_spec(f"{name}@{model}", role="model")
    parts = [Part("delta", build, parse_versions(versions), sample)]
    if tau2 is not None:
        parts.append(Part("tau2", tau2, None, tau2_sample))
    words = [w for w in ["toolshift", *sys.argv[1:]] if w != "--page-only"]
    plan = ComparePlan(names, parts, out, model=model, max_turns=max_turns, instrument=instrument,
                       instrument_sample=instrument_sample, command=" ".join(words))  # fmt: skip
    if not page_only:
        runs = plan.runs()
        with _bar() as bar:
            task = bar.add_task("runs", total=len(runs))
            for k, (part, spec, setting) in enumerate(runs):
                bar.update(task, description=f"{spec} on {part.name} ({setting})", completed=k)
                from toolshift.bench.ecosystem.baselines import run_baseline

                run_baseline(
                    part.build,
                    spec,
                    out / part.name,
                    split="test",
                    sample=part.sample,
                    max_turns=plan.turns(spec),
                    setting=setting,
                    versions=part.versions,
                    command=plan.command,
                    executor=Executor.choose("local", workers, None),
                )
            bar.update(task, completed=len(runs))
    parts_data = collect(plan)
    text = render(
        plan, parts_data, load=f"{os.getloadavg()[0]:.1f} (1-minute load when the page was written)"
    )
    if page is not None:
        write_text_atomic(page, text)
        console.print(f"wrote {page}")
    else:
        print(text)
