"""`toolshift loop BUILD --model M --out DIR`: run the loop (resumable), score it, and write its page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolshift import terminal
from toolshift.agents.executor import EXECUTOR_HELP, RAY_ADDRESS_HELP
from toolshift.errors import BadInputError

console = terminal.console(stderr=True)


def _versions(text: str | None, available: int) -> list[int]:
    if not text:
        return list(range(1, available + 1))
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BadInputError(
            "--versions is a comma-separated list of version numbers", field="versions"
        ) from None
    if not out or out != sorted(set(out)):
        raise BadInputError("--versions lists versions once each, in increasing order", field="versions")
    return out


def loop_cmd(
    build: Annotated[Path, typer.Argument(help="An evolved bench build with reference paths.")],
    model: Annotated[
        str,
        typer.Option(help="embedded, openai:<m>, anthropic:<m>, or the instrument plan-follower (no model)."),
    ],
    out: Annotated[Path, typer.Option(help="The run folder (resumed when it exists).")],
    versions: Annotated[
        str | None, typer.Option(help="Versions to serve, e.g. 1,2,3 (default: all).")
    ] = None,
    sample: Annotated[int | None, typer.Option(help="Test tasks served per version (default: all).")] = None,
    conditions: Annotated[str, typer.Option(help="Comma-separated: off, steward, flows, evolve, all.")] = (
        "off,steward,flows,evolve,all"
    ),
    max_turns: Annotated[int, typer.Option(help="Turn limit of an episode.")] = 12,
    children: Annotated[int, typer.Option(help="Failed tasks each version's evolution step seeds.")] = 4,
    seed: Annotated[int, typer.Option(help="Sample and model seed.")] = 0,
    max_tokens: Annotated[
        int | None,
        typer.Option(help="Cap on one reply's output tokens (API models; default: toolshift run's)."),
    ] = None,
    page: Annotated[Path | None, typer.Option(help="Also write the results page here (markdown).")] = None,
    with_run: Annotated[
        list[Path] | None,
        typer.Option("--with", help="Another loop run folder whose results the page shows after this run's."),
    ] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples of the intervals.")] = 1000,
    handoff: Annotated[
        bool,
        typer.Option(
            help="With a library, the harness asks steward_plan and hands the plan to the model (D196); "
            "--no-handoff lists Steward's tools for the model to ask."
        ),
    ] = True,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Processes a version's episodes are served in (the same episodes; the embedded model "
            "decodes on one thread, so one worker per core).",
        ),
    ] = 1,
    executor: Annotated[str, typer.Option(help=EXECUTOR_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
) -> None:
    """Serve the build's test tasks version by version through the gateway, learning after each version from
    its recordings; off, each part alone and all on, on the same tasks. Writes OUT/results.json."""
    from toolshift.agents.config import check_model_spec
    from toolshift.agents.executor import Executor, NodeBars
    from toolshift.bench.ecosystem.store import load_ecosystem
    from toolshift.loop.instrument import INSTRUMENT
    from toolshift.loop.results import markdown, plot_differences, write_results
    from toolshift.loop.run import Loop, LoopSpec, test_tasks

    chosen = Executor.choose(executor, workers, ray_address)
    if model != INSTRUMENT:
        check_model_spec(model, role="model")
    if not (build / "manifest.json").is_file():
        raise BadInputError("not a benchmark build (no manifest.json)", source=str(build))
    eco = load_ecosystem(build)
    vs = _versions(versions, eco.config.versions)
    conds = [c.strip() for c in conditions.split(",") if c.strip()]
    tasks = test_tasks(build, vs, sample, seed)
    if not tasks:
        raise BadInputError(
            "no test task has a valid reference path at every version asked", source=str(build)
        )
    spec = LoopSpec(
        build,
        out,
        model,
        vs,
        tasks,
        conds,
        max_turns=max_turns,
        children=children,
        seed=seed,
        max_tokens=max_tokens,
        handoff=handoff,
        workers=workers,
    )
    bar = terminal.progress_bar(console)
    progress = terminal.progress_hook(bar)

    import os

    started = round(os.getloadavg()[0], 2)
    loop = Loop(spec, progress, executor=chosen, nodes=NodeBars(bar) if chosen.is_ray else None)
    with bar:
        loop.run()
    load = {"start": started, "end": round(os.getloadavg()[0], 2), "cores": os.cpu_count()}
    if loop.ran == 0 and (out / "results.json").is_file():
        from toolshift.fileio import read_json

        # nothing was served now: the wall times are the earlier command's, and so is the load beside them
        load = read_json(out / "results.json", what="loop results").get("load")
    args = [str(build), f"--model {model}", f"--out {out}"]
    args += [f"--versions {versions}"] if versions else []
    args += [f"--sample {sample}"] if sample is not None else []
    args += [f"--conditions {conditions}"] if conditions != "off,steward,flows,evolve,all" else []
    args += [f"--max-turns {max_turns}"] if max_turns != 12 else []
    args += [f"--children {children}"] if children != 4 else []
    args += [f"--seed {seed}"] if seed else []
    args += [f"--max-tokens {max_tokens}"] if max_tokens is not None else []
    args += ["--no-handoff"] if not handoff else []
    args += [f"--workers {workers}"] if workers != 1 else []
    args += [f"--executor {executor}"] if executor != "local" else []
    args += [f"--ray-address {ray_address}"] if ray_address else []
    args += [f"--page {page}"] if page else []
    args += [f"--with {w}" for w in with_run or []]
    command = "toolshift loop " + " ".join(args)
    path = write_results(out, command, resamples, load)
    console.print(f"wrote {path}")
    if page is not None:
        from toolshift.fileio import read_json, write_text_atomic

        results = read_json(path, what="loop results")
        others = []
        for other in with_run or []:
            if not (other / "results.json").is_file():
                raise BadInputError("not a finished loop run (no results.json)", source=str(other))
            others.append(read_json(other / "results.json", what="loop results"))
        full = (
            f"toolshift loop {build} --model embedded --out runs/loop-full --sample 84 --max-turns 8 "
            f"--workers 2 --page {page}"
        )
        figure = plot_differences([results, *others], page.with_suffix(".png")).name
        text = (
            markdown(results, preface=PREFACE, others=others, full_command=full, figure=figure) + "\n" + NOTES
        )
        write_text_atomic(page, text)
        console.print(f"wrote {page}")


PREFACE = (
    "An agent deployed behind the gateway (`toolshift.gateway`: the version, record, steward and flows "
    "middleware) serves the same test tasks of an evolved build version by version. After each version, from "
    "the gateway's own recordings of that version and nothing else the benchmark holds, Steward maintains its "
    "library (episodes successful by the benchmark's verdict stand in for a deployment's confirmed "
    "successes), flows are learned anew and served on the next version, and the failed tasks seed task "
    "evolution, whose children the agent solved become more training episodes for Steward. Conditions: "
    "`off` (the agent alone), `steward` (the library learns from the agent's successes), `flows`, `evolve` "
    "(the library learns from solved children only), `all`. Nothing is learned before the first version, so "
    'every condition serves it alike. See docs/usage.md ("The loop") and docs/decisions.md (D240–D247).'
)

NOTES = """## Reading it

- Verdicts are the benchmark's: `Task.verdict` on the world diff the gateway recorded (SR: Δgold ⊆ Δagent;
  strict SR: and no collateral write). Intervals are 95% bootstraps over tasks; *SR minus off* is paired
  (the same tasks, per-task differences), so it is the comparison to read.
- The first version is served once and shared by every condition (nothing is learned before it, D242).
- `plan-follower` is a measuring instrument, not a model: it prefers a plan Steward serves over its own v1
  procedure, so Steward's column measures the plans Steward supplies and its retrieval of renamed tools
  (D245). It ignores the content of results, so a served lookup cannot change its success: the flows'
  figures there are lookups made and used (a later call the gateway answered from one), not turns saved.
- Evolution's children are served to the same agent at the same version (D244); *solved* counts the
  children it solved, which are all that evolution adds to a library.
- Wall seconds are the episodes' own (from the agent loop's start to its end, gateway start-up excluded),
  read beside the load average printed with each run: the machine is shared.
"""
