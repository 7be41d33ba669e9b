"""`toolshift frameworks`: toolshift inside inspect_ai (and the comparison behind docs/results/frameworks.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer

from toolshift import terminal

app = typer.Typer(help="toolshift inside inspect_ai and verifiers.", no_args_is_help=True)
console = terminal.console()


@app.command("compare")
def compare_cmd(
    build: Path = typer.Argument(..., help="A Δτ-Bench build (toolshift bench build / evolve / reference)."),
    version: int = typer.Option(3, "--version", min=1),
    setting: str = typer.Option("domain-tools", "--setting"),
    sample: int = typer.Option(
        40, "--sample", min=1, help="Test tasks, the seeded sample bench baseline takes."
    ),
    seed: int = typer.Option(0, "--seed"),
    max_turns: int = typer.Option(10, "--max-turns", min=1),
    out: Path = typer.Option(Path("runs/frameworks"), "--out", help="Episodes and inspect logs (resumable)."),
    markdown: Path = typer.Option(None, "--markdown", help="Write the results page here."),
    no_run: bool = typer.Option(
        False, "--no-run", help="Run nothing: the page of the episodes --out holds (it says what is missing)."
    ),
) -> None:
    """The same Δτ-Bench test tasks through inspect's react() (the real `inspect eval`, the embedded model over the
    OpenAI API) and through toolshift's own loop (the embedded model in process): SR with intervals, wall times."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from toolshift.fileio import write_text_atomic
    from toolshift.frameworks.compare import compare, load_average, page

    command = "toolshift frameworks " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task("episodes (inspect, then toolshift)", total=2 * sample)
        found, sides, start = compare(
            build, version=version, setting=setting, sample=sample, seed=seed, max_turns=max_turns, out=out,
            tick=lambda: progress.advance(bar), run=not no_run,
        )  # fmt: skip
    from toolshift.bench.ecosystem.store import load_ecosystem

    header = {
        "ecosystem": load_ecosystem(build).id, "version": version, "setting": setting, "sample": sample,
        "seed": seed, "max_turns": max_turns, "load": f"{start} and {load_average()}",
    }  # fmt: skip
    text = page(found, sides, command, header)
    if markdown is not None:
        write_text_atomic(markdown, text)
        console.print(f"wrote {markdown}")
    else:
        console.print(text, markup=False)


@app.command("serve")
def serve_cmd(
    build: Path = typer.Option(
        None, "--build", help="A Δτ-Bench build: its test tasks at --version and --setting."
    ),
    version: int = typer.Option(1, "--version", min=1),
    setting: str = typer.Option("standard", "--setting"),
    sample: int = typer.Option(
        None, "--sample", min=1, help="Δτ-Bench: the seeded sample bench baseline takes."
    ),
    seed: int = typer.Option(0, "--seed"),
    tau2: str = typer.Option(None, "--tau2", help="τ²-bench's airline or retail tasks instead."),
    world: str = typer.Option(None, "--world", help="A world `toolshift run --world` takes (with --tasks)."),
    tasks: Path = typer.Option(None, "--tasks", help="A task file on --world."),
    limit: int = typer.Option(None, "--limit", min=1),
    user: str = typer.Option("scripted", "--user"),
    max_turns: int = typer.Option(30, "--max-turns", min=1),
    port: int = typer.Option(8766, "--port", min=1, max=65535),
    oracle: bool = typer.Option(False, "--oracle", help="Also serve the oracle as a model at /oracle/v1."),
    out: Path = typer.Option(None, "--out", help="Append each finished episode to this episodes file."),
) -> None:
    """Serve live episodes over HTTP on loopback (GET /instances, POST /episodes, /episodes/ID/reply, /finish):
    a framework in its own Python environment (a verifiers environment) drives toolshift's episodes through it."""
    import uvicorn

    from toolshift.errors import BadInputError
    from toolshift.frameworks import instances
    from toolshift.frameworks.service import EpisodeService

    common = {"user": user, "max_turns": max_turns}
    if build is not None:
        found = instances.delta_tau(
            build, version=version, setting=setting, sample=sample, seed=seed, **common
        )
    elif tau2 is not None:
        found = instances.tau2(tau2, limit=limit, **common)
    elif world is not None and tasks is not None:
        found = instances.task_file(world, tasks, limit=limit, **common)
    else:
        raise BadInputError("name the tasks: --build, --tau2, or --world with --tasks", field="build")
    console.print(f"serving {len(found)} task instances at http://127.0.0.1:{port}")
    if oracle:
        console.print(
            f"the oracle as a model: OpenAI base URL http://127.0.0.1:{port}/oracle/v1 (any API key)"
        )
    uvicorn.run(
        EpisodeService(found, oracle=oracle, out=out).app(), host="127.0.0.1", port=port, log_level="warning"
    )
