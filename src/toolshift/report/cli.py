"""The `toolshift report` commands and `toolshift view`: the HTML report of a set of results, and the viewer.

`toolshift report RUNS... --out report.html` is `toolshift report html`: the page is the group's
default command, so other report commands can sit beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from toolshift import terminal
from toolshift.errors import BadInputError, report_file_errors


class _DefaultToHtml(TyperGroup):
    """Arguments that do not start with a command name go to `html` (`toolshift report RUNS --out F`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["html", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_DefaultToHtml,
    no_args_is_help=True,
    help="Results pages drawn from several capabilities.",
    subcommand_metavar="RUNS... --out report.html | COMMAND [ARGS]...",
)
console = terminal.console()

RunsArg = Annotated[
    list[Path],
    typer.Argument(
        help="Result files or folders: episode stores, τ²-bench results, catalogs, flows, builds."
    ),
]
CacheOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache", help="Where episode indexes are kept (default $TOOLSHIFT_VIEW_CACHE or a temp folder)."
    ),
]


def _progress() -> Any:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    # Drawn on a terminal only: piped, a transient bar leaves a blank line behind it, even before an error.
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                    transient=True, disable=not console.is_terminal)  # fmt: skip


@app.command()
def html(
    runs: RunsArg,
    out: Annotated[Path, typer.Option("--out", help="The HTML file to write.")] = Path("report.html"),
    threshold: Annotated[float, typer.Option("--threshold", help="θ of the flows' deciders.")] = 0.3,
    flow_tasks: Annotated[
        str, typer.Option("--flow-tasks", help="Tasks a given flow is replayed on: all, train or test.")
    ] = "test",
    resamples: Annotated[int, typer.Option("--resamples", min=10, help="Bootstrap resamples.")] = 1000,
    title: Annotated[str, typer.Option("--title", help="The page's title.")] = "toolshift report",
    cache: CacheOpt = None,
) -> None:
    """One self-contained HTML page: runs, benchmark versions and drift, flows' ceilings and savings, bad files."""
    from toolshift.report.build import build_report
    from toolshift.report.sections import Options

    if flow_tasks not in ("all", "train", "test"):
        raise BadInputError(f"--flow-tasks is all, train or test, not {flow_tasks!r}", field="flow-tasks")
    options = Options(threshold=threshold, flow_tasks=flow_tasks, resamples=resamples)
    with _progress() as bar:
        task = bar.add_task("reading the inputs", total=None)
        report = build_report(runs, out, options=options, cache=cache, title=title,
                              progress=lambda m: bar.update(task, description=m))  # fmt: skip
    bad = report.inputs.bad
    console.print(
        f"wrote {report.path} ({report.bytes / 1024:.0f} KiB; sections: {', '.join(report.sections)})"
        + (f"; {len(bad)} file(s) with problems named in it" if bad else ""),
        soft_wrap=True,
    )
    for f in bad:
        for p in f.problems()[:3]:
            console.print(f"  [yellow]{p}[/]", highlight=False, soft_wrap=True)


def view(
    runs: RunsArg,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (loopback unless --allow-remote).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (0: any free one).")] = 8800,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote", help="Allow a non-loopback --host: anyone who reaches it reads every episode."
        ),
    ] = False,
    flow: Annotated[
        Path | None, typer.Option("--flow", help="A flow: mark its saved turns and detours.")
    ] = None,
    catalog: Annotated[
        Path | None,
        typer.Option("--catalog", help="The flow's tool catalog (default: one among RUNS for its domain)."),
    ] = None,
    decider: Annotated[str, typer.Option("--decider", help="reach or next-step.")] = "reach",
    threshold: Annotated[float, typer.Option("--threshold", help="θ of the decider.")] = 0.3,
    cache: CacheOpt = None,
    export: Annotated[
        Path | None,
        typer.Option(
            "--export", help="Write the selection as DIR/index.html, a page that opens without a server."
        ),
    ] = None,
    select: Annotated[
        str,
        typer.Option(
            "--select",
            help="With --export: which episodes, in the viewer's address syntax "
            "(agent=gpt-4o&outcome=failure&q=Mia&expr=turns>5&sort=turns&desc=1).",
        ),
    ] = "",
) -> None:
    """Serve a local trajectory viewer: filter episodes, step through messages, calls, results and diffs."""
    from toolshift.report.inputs import discover
    from toolshift.report.view.marks import FlowMarker
    from toolshift.report.view.server import Viewer, check_bind, make_server, url_of

    if export is None:
        check_bind(host, allow_remote)
    elif select:
        from toolshift.report.view.export import parse_select

        parse_select(select)  # a bad selection is named before anything is indexed
    with _progress() as bar:
        task = bar.add_task("indexing", total=None)
        inputs = discover(runs, cache=cache, progress=lambda p: bar.update(task, description=f"indexed {p}"))
    if not inputs.episode_sources():
        named = "; ".join(p for f in inputs.bad for p in f.problems()[:1])
        raise BadInputError("no readable episodes here" + (f" ({named})" if named else ""),
                            source=", ".join(map(str, runs)))  # fmt: skip
    marker = None
    if flow is not None:
        marker = FlowMarker(flow, catalog or _catalog_for(flow, inputs), decider, threshold)
    elif catalog is not None:
        raise BadInputError("--catalog goes with --flow", field="catalog")
    if export is not None:
        from toolshift.report.view.export import export as export_page
        from toolshift.report.view.export import parse_select

        page, n = export_page(Viewer(inputs, marker), parse_select(select), export)
        console.print(f"exported {n} episodes to [bold]{page}[/] (opens without a server)", soft_wrap=True)
        return
    viewer = Viewer(inputs, marker, paths=[Path(r) for r in runs])
    server = make_server(viewer, host, port)
    for f in inputs.bad:
        for p in f.problems()[:3]:
            console.print(f"[yellow]{p}[/]", highlight=False, soft_wrap=True)
    recordings = viewer.runs_info()["recordings"]
    shown = f"{viewer.runs.size - recordings} episodes" + (
        f" and {recordings} gateway recordings" if recordings else ""
    )
    console.print(f"serving {shown} from {len(inputs.episode_sources())} files at [bold]{url_of(server)}[/] "
                  "(Ctrl-C stops; press ? in the page for its keys)", soft_wrap=True)  # fmt: skip
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        server.server_close()


def _catalog_for(flow: Path, inputs: Any) -> Path:
    from toolshift.flows.model import load_flow

    domain = load_flow(flow).domain
    for f in inputs.of("catalog"):
        if f.extra["catalog"].domain == domain:
            return f.path
    raise BadInputError(
        f"no catalog of {domain!r} among the runs: pass --catalog", source=str(flow), field="catalog"
    )


@app.command()
def embedded(
    build: Annotated[Path, typer.Option("--build", help="A benchmark build (toolshift bench build --out).")],
    runs: Annotated[
        Path, typer.Option("--runs", help="Where the episodes go (resumable run folders).")
    ] = Path("runs/embedded"),
    out: Annotated[Path, typer.Option("--out", help="The markdown page to write.")] = Path(
        "docs/results/embedded.md"
    ),
    data: Annotated[
        Path | None, typer.Option("--data", help="The shared data folder (default ../shared/data).")
    ] = None,
    trials: Annotated[int, typer.Option("--trials", min=1, help="Trials per task with the model.")] = 3,
    rule_trials: Annotated[
        int, typer.Option("--rule-trials", min=1, help="Trials per task with the rule.")
    ] = 1,
) -> None:
    """The embedded agent's page: success by gold-path length (model vs rule), reading the request, prompts."""
    from toolshift.flows.results import default_data_dir
    from toolshift.report.embedded import write_report

    if not (build / "manifest.json").is_file():
        raise BadInputError("not a benchmark build (no manifest.json)", source=str(build))
    path = write_report(
        out,
        build,
        runs,
        data or default_data_dir(),
        trials={"embedded": trials, "embedded:recent": rule_trials},
        console=console,
        command=" ".join(
            [f"toolshift report embedded --build {build} --runs {runs} --out {out}"]
            + ([f"--trials {trials}"] if trials != 3 else [])
            + ([f"--rule-trials {rule_trials}"] if rule_trials != 1 else [])
        ),
    )
    console.print(f"wrote {path}")


report_file_errors(app)
