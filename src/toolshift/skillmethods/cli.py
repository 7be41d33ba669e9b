"""`toolshift skills eval BUILD --run RUN --methods …`: Steward against the skill methods, resumable, and its page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from toolshift import terminal
from toolshift.agents.executor import EXECUTOR_HELP, RAY_ADDRESS_HELP
from toolshift.errors import BadInputError

app = typer.Typer(no_args_is_help=True, add_completion=False)
console = terminal.console(stderr=True)


@app.command("eval")
def eval_cmd(
    build: Annotated[Path, typer.Argument(help="An evolved bench build with reference paths.")],
    run: Annotated[Path, typer.Option(help="The run folder (resumed when it exists).")],
    model: Annotated[
        str, typer.Option(help="The agent and every method's model: embedded, openai:<m>, anthropic:<m>.")
    ] = "embedded",
    methods: Annotated[
        str,
        typer.Option(help="Comma-separated: steward, no-skill, evoskill, autoskill, trace2skill, skillopt."),
    ] = ("steward,no-skill,evoskill,autoskill,trace2skill,skillopt"),
    sample: Annotated[
        int, typer.Option(min=1, help="Test tasks per version (the same for every method).")
    ] = 84,
    train_sample: Annotated[int, typer.Option(min=1, help="Training pool: train tasks per version.")] = 84,
    val: Annotated[
        int, typer.Option(min=1, help="Validation split: other train tasks a method may roll out on.")
    ] = 12,
    max_turns: Annotated[int, typer.Option(min=1, help="Turn limit of an agent episode.")] = 8,
    versions: Annotated[
        int, typer.Option(min=0, help="Run v1..vN only (0: all; No Skill's row runs all).")
    ] = 0,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint of an openai: model.")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Processes the episodes run in (one per core).")] = 1,
    executor: Annotated[str, typer.Option(help=EXECUTOR_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write the results page here.")] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples of the intervals.")] = 1000,
    score_only: Annotated[
        bool,
        typer.Option(
            help="Run nothing: write the page from the episodes the run folder holds (a stopped run)."
        ),
    ] = False,
) -> None:
    """Maintain each method's library version by version from the same training pool and evaluate the agent with
    it on the same test tasks; Steward's handoff and No Skill beside them. Writes RUN/results.json (and the page)."""
    from toolshift.agents.config import check_model_spec
    from toolshift.skillmethods.report import write_page
    from toolshift.skillmethods.run import Spec, check_methods, run_files, run_methods

    check_model_spec(model, role="model")
    names = check_methods(methods)
    if not (build / "manifest.json").is_file():
        raise BadInputError("not a benchmark build (no manifest.json)", source=str(build))
    args = [f"toolshift skills eval {build}", f"--run {run}", f"--model {model}"]
    args += (
        [f"--methods {methods}"]
        if methods != "steward,no-skill,evoskill,autoskill,trace2skill,skillopt"
        else []
    )
    args += [
        f"--sample {sample}",
        f"--train-sample {train_sample}",
        f"--val {val}",
        f"--max-turns {max_turns}",
    ]
    args += [f"--versions {versions}"] if versions else []
    args += [f"--base-url {base_url}"] if base_url else []
    args += [f"--workers {workers}"] if workers > 1 else []
    args += [f"--executor {executor}"] if executor != "local" else []
    args += [f"--markdown {markdown}"] if markdown else []
    spec = Spec(
        str(build),
        str(run),
        model,
        sample,
        train_sample,
        val,
        max_turns,
        base_url,
        workers,
        " ".join(args),
        versions,
    )
    bar = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    )  # fmt: skip
    jobs: dict[str, int] = {}

    def progress(label: str, total: int | None) -> None:
        if total is not None:
            jobs[label] = bar.add_task(label, total=total)
        elif label in jobs:
            bar.advance(jobs[label])
        else:
            console.print(f"done: {label}")

    if score_only:
        paths = run_files(spec, names)
    else:
        with bar:
            paths = run_methods(spec, names, progress)
    if markdown is not None:
        write_page(spec, names, paths, markdown, resamples)
        console.print(f"wrote {markdown}")
