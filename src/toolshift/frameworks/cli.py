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
            tick=lambda: progress.advance(bar),
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
