"""`toolshift traces`: convert published runs to episodes, print turn anatomy, split by task, export to τ²-bench."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from toolshift import terminal
from toolshift.errors import BadInputError, report_file_errors
from toolshift.fileio import read_text, write_text_atomic
from toolshift.models import Effect
from toolshift.traces.anatomy import GROUP_KEYS, Anatomy, anatomy, total
from toolshift.traces.catalog import catalog_path, load_catalog
from toolshift.traces.conversion import Conversion
from toolshift.traces.episode import Episode
from toolshift.traces.store import ReadReport, iter_episodes

app = typer.Typer(no_args_is_help=True, help="Episodes: convert published runs, anatomy, split, export.")
console = terminal.console()

CONVERTERS = ("taubench-v1", "workbench", "tau2", "bfcl", "agentdojo", "inspect")


def _convert(kind: str, inputs: list[Path], domain: str | None, skip_bad: bool) -> Conversion:
    from rich.progress import track

    from toolshift.traces.agentdojo import agentdojo_files, convert_agentdojo
    from toolshift.traces.bfcl import bfcl_files, convert_bfcl
    from toolshift.traces.inspect_log import convert_inspect, inspect_files
    from toolshift.traces.tau2 import convert_tau2, tau2_files
    from toolshift.traces.taubench import convert_taubench_v1
    from toolshift.traces.workbench import convert_workbench_csv, workbench_files

    if kind not in CONVERTERS:
        raise BadInputError(
            f"unknown converter {kind!r}; choose one of {', '.join(CONVERTERS)}", field="KIND"
        )
    if kind == "workbench":
        inputs = [f for path in inputs for f in workbench_files(path)]
    elif kind == "bfcl":
        inputs = [f for path in inputs for f in bfcl_files(path)]
    elif kind == "agentdojo":
        inputs = [f for path in inputs for f in agentdojo_files(path)]
    elif kind == "tau2":
        inputs = [f for path in inputs for f in tau2_files(path)]
    elif kind == "inspect":
        inputs = [f for path in inputs for f in inspect_files(path)]
    total_conv = Conversion(converter=kind)
    for path in track(inputs, description=f"converting {kind}", console=console, transient=True):
        if kind == "taubench-v1":
            total_conv.extend(convert_taubench_v1(path, domain=domain, skip_bad=skip_bad))
        elif kind == "workbench":
            total_conv.extend(convert_workbench_csv(path, skip_bad=skip_bad))
        elif kind == "bfcl":
            total_conv.extend(convert_bfcl(path, skip_bad=skip_bad))
        elif kind == "agentdojo":
            total_conv.extend(convert_agentdojo(path, skip_bad=skip_bad))
        elif kind == "inspect":
            total_conv.extend(convert_inspect(path, skip_bad=skip_bad))
        else:
            total_conv.extend(convert_tau2(path, skip_bad=skip_bad, domain=domain))
    total_conv.note_unknown_tools()
    return total_conv


@app.command("convert")
def convert(
    kind: Annotated[str, typer.Argument(help="taubench-v1 | workbench | tau2 | bfcl | agentdojo | inspect")],
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="Files or folders (tau2: a results file or folder, a leaderboard submission, a folder of runs; "
            "inspect: a log or a log folder)."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", help="Folder for <domain>.episodes.jsonl and <domain>.catalog.json.")
    ],
    domain: Annotated[
        str | None,
        typer.Option(
            help="taubench-v1, and tau2's bare simulation lists: the domain, if the file name lacks it."
        ),
    ] = None,
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="Skip malformed records and count them.")
    ] = False,
) -> None:
    """Convert published runs into episode files and tool catalogs, and print what was kept and skipped."""
    conv = _convert(kind, inputs, domain, skip_bad)
    written = conv.write(out)
    table = Table(title=f"{kind}: {conv.records} records")
    table.add_column("outcome")
    table.add_column("records", justify="right")
    table.add_row("[green]kept", str(conv.kept))
    for reason, n in conv.skipped.most_common():
        table.add_row(f"skipped: {reason}", str(n))
    console.print(table)
    if conv.unknown_tools:
        console.print(
            f"[yellow]calls to tools no catalog lists:[/] {sum(conv.unknown_tools.values())} "
            f"({', '.join(sorted(conv.unknown_tools))})"
        )
    if conv.malformed_calls:
        console.print(
            f"[yellow]malformed calls kept:[/] {conv.malformed_calls} (arguments not a JSON object, or no name: "
            'kept as {"_raw": text}, flagged `malformed`, counted as neither read nor write)'
        )
    for note in conv.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    for path in written:
        console.print(f"wrote {path}")


class _Effects:
    """Tool effects per domain: `--catalog` files first, else `<domain>.catalog.json` beside the episodes."""

    def __init__(self, catalogs: list[Path]) -> None:
        self.given: dict[str, dict[str, Effect]] = {}
        for path in catalogs:
            cat = load_catalog(path)
            self.given.setdefault(cat.domain, {}).update(cat.effects())
        self.found: dict[tuple[Path, str], dict[str, Effect]] = {}
        self.missing: set[str] = set()

    def for_episode(self, episode: Episode, folder: Path) -> dict[str, Effect]:
        if episode.domain in self.given:
            return self.given[episode.domain]
        key = (folder, episode.domain)
        if key not in self.found:
            path = catalog_path(folder, episode.domain)
            if path.exists():
                self.found[key] = load_catalog(path).effects()
            else:
                self.found[key] = {}
                self.missing.add(episode.domain)
        return self.found[key]


@app.command("stats")
def stats(
    files: Annotated[list[Path], typer.Argument(help="Episode files (*.episodes.jsonl).")],
    catalog: Annotated[
        list[Path] | None,
        typer.Option("--catalog", help="Catalog file(s); default: <domain>.catalog.json beside each file."),
    ] = None,
    by: Annotated[
        str, typer.Option(help="Group by these, comma-separated: domain, agent, model, harness.")
    ] = "domain,agent",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="Skip malformed episode lines and count them.")
    ] = False,
) -> None:
    """Turn anatomy per group: episodes, tasks, turns, replies %, write turns %, read-only turns %."""
    keys = tuple(k.strip() for k in by.split(",") if k.strip())
    wrong = [k for k in keys if k not in GROUP_KEYS]
    if wrong or not keys:
        raise BadInputError(
            f"cannot group by {wrong or by!r}; choose from {', '.join(GROUP_KEYS)}", field="--by"
        )
    effects = _Effects(catalog or [])
    report = ReadReport()
    current: dict[str, Path] = {}

    def episodes() -> Iterator[Episode]:
        for path in files:
            current["folder"] = path.parent
            yield from iter_episodes(path, skip_bad=skip_bad, report=report, unique=True)

    groups = anatomy(episodes(), lambda e: effects.for_episode(e, current["folder"]), by=keys)
    overall = total(groups)
    if as_json:
        payload = {
            "group_by": list(keys),
            "groups": [{**dict(zip(keys, key, strict=True)), **g.as_dict()} for key, g in groups.items()],
            "total": overall.as_dict(),
            "missing_catalogs": sorted(effects.missing),
            "skipped_lines": dict(report.skipped),
            "torn_last_lines": report.torn,
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    console.print(anatomy_table(groups, keys, overall))
    if overall.unknown_tools:
        console.print(
            f"[yellow]unknown tools:[/] {sum(overall.unknown_tools.values())} calls to "
            f"{len(overall.unknown_tools)} names not in the catalog: {', '.join(sorted(overall.unknown_tools))}"
        )
    if effects.missing:
        console.print(f"[yellow]no catalog found for:[/] {', '.join(sorted(effects.missing))}")
    if report.skipped:
        console.print(f"[yellow]skipped {sum(report.skipped.values())} bad lines:[/] {dict(report.skipped)}")
    if report.torn:
        console.print(f"[yellow]left out {report.torn} torn last line(s):[/] an append a kill interrupted")


def anatomy_table(groups: dict[tuple[str, ...], Anatomy], keys: tuple[str, ...], overall: Anatomy) -> Table:
    table = Table(title="Turn anatomy")
    for name in keys:
        table.add_column(name)
    for col in ("episodes", "tasks", "turns", "replies", "writes", "reads", "neither", "unknown"):
        table.add_column(col, justify="right")

    def row(label: tuple[str, ...], g: Anatomy) -> list[str]:
        return [
            *label,
            str(g.episodes),
            str(len(g.tasks)),
            f"{g.turns:,}",
            f"{g.share('reply'):.1f}%",
            f"{g.share('write'):.1f}%",
            f"{g.share('read'):.1f}%",
            f"{g.share('neither'):.1f}%",
            f"{g.share('unknown'):.1f}%",
        ]

    for key, g in groups.items():
        table.add_row(*row(key, g))
    if len(groups) > 1:
        table.add_row(*row(("all",) + ("",) * (len(keys) - 1), overall), style="bold")
    return table


@app.command("split")
def split(
    files: Annotated[list[Path], typer.Argument(help="Episode files (*.episodes.jsonl).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for <stem>.train.jsonl and <stem>.test.jsonl.")],
) -> None:
    """Split episodes by task: 0-based positions 2, 5, 7, 9 of every ten tasks (natural id order) are held out."""
    from toolshift.traces.split import HELD_OUT_POSITIONS, split_by_domain
    from toolshift.traces.store import EPISODES_SUFFIX, EpisodeWriter

    table = Table(title=f"Split by task (held-out positions {sorted(HELD_OUT_POSITIONS)} of each ten)")
    for col in ("file", "train episodes", "test episodes", "train tasks", "test tasks"):
        table.add_column(col, justify="right" if col != "file" else "left")
    for path in files:
        assignment = split_by_domain(iter_episodes(path, unique=True))
        stem = path.name.removesuffix(".gz").removesuffix(EPISODES_SUFFIX).removesuffix(".jsonl")
        meta = {"split_of": path.name}
        with (
            EpisodeWriter(out / f"{stem}.train{EPISODES_SUFFIX}", meta=meta | {"split": "train"}) as train,
            EpisodeWriter(out / f"{stem}.test{EPISODES_SUFFIX}", meta=meta | {"split": "test"}) as test,
        ):
            for episode in iter_episodes(path, unique=True):
                (test if assignment[(episode.domain, episode.task_id)] == "test" else train).write(episode)
        n_test = sum(1 for s in assignment.values() if s == "test")
        table.add_row(
            path.name, str(train.count), str(test.count), str(len(assignment) - n_test), str(n_test)
        )
    console.print(table)


@app.command("export-tau2")
def export_tau2(
    files: Annotated[list[Path], typer.Argument(help="Episode files (*.episodes.jsonl) of one domain.")],
    out: Annotated[
        Path, typer.Option("--out", help="results.json file (json layout) or folder (dir layout).")
    ],
    layout: Annotated[
        str, typer.Option(help="json (one file) or dir (results.json + simulations/).")
    ] = "json",
    policy: Annotated[
        Path | None, typer.Option(help="Policy markdown to put in info.environment_info.")
    ] = None,
    tasks: Annotated[
        Path | None,
        typer.Option(help="The task file the run used (toolshift.tasks/1), for Results.tasks."),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option(min=1, help="The run's step limit; default: the run's max_turns or the converter's."),
    ] = None,
    max_errors: Annotated[
        int | None, typer.Option(min=1, help="The run's error limit; default: the step limit.")
    ] = None,
) -> None:
    """Write episodes as a τ²-bench Results document that τ²-bench loads and scores (docs/formats.md)."""
    from toolshift.taskfile import read_tasks
    from toolshift.traces.store import read_header
    from toolshift.traces.tau2_tasks import tau2_tasks
    from toolshift.traces.tau2_write import run_from_episodes, write_results

    if layout not in ("json", "dir"):
        raise BadInputError(f"unknown layout {layout!r} (json, dir)", field="--layout")
    episodes: list[Episode] = []
    file_of: dict[str, Path] = {}
    limits: set[int] = set()
    for path in files:
        turns = read_header(path).meta.get("max_turns")
        if isinstance(turns, int) and not isinstance(turns, bool):
            limits.add(turns)
        for episode in iter_episodes(path, unique=True):
            episodes.append(episode)
            file_of.setdefault(episode.id, path)
    domains = {e.domain for e in episodes}
    if len(domains) > 1:
        raise BadInputError(f"a τ²-bench Results holds one domain; these files hold {sorted(domains)}")
    try:
        policy_text = read_text(policy, what="policy") if policy else ""
    except BadInputError as exc:
        raise BadInputError(exc.detail, source=exc.source, field="--policy") from None
    given = {t.id: t for t in read_tasks(tasks)} if tasks is not None else None
    try:
        run = run_from_episodes(
            episodes,
            policy=policy_text,
            tasks=tau2_tasks(episodes, given),
            max_steps=max_steps or (max(limits) if limits else None),
            max_errors=max_errors,
        )
        path = write_results(run, out, layout=layout)  # type: ignore[arg-type]
    except BadInputError as exc:
        if exc.source is not None or exc.record not in file_of:
            raise
        raise BadInputError(
            exc.detail, source=str(file_of[str(exc.record)]), record=exc.record, field=exc.field
        ) from None
    console.print(f"wrote {len(episodes)} simulations of {len(run.tasks)} tasks to {path}")


@app.command("export-inspect")
def export_inspect_cmd(
    files: Annotated[list[Path], typer.Argument(help="Episode files (*.episodes.jsonl).")],
    out: Annotated[Path, typer.Option("--out", help="The inspect log to write (.eval or .json).")],
    task: Annotated[str, typer.Option(help="The task name the log gives.")] = "toolshift/episodes",
) -> None:
    """Write episodes as an inspect_ai log that `inspect view` opens (one sample per episode; extra `inspect`)."""
    from toolshift.traces.inspect_log import export_inspect

    episodes = [episode for path in files for episode in iter_episodes(path, unique=True)]
    if not episodes:
        raise BadInputError("no episodes in these files", source=", ".join(str(f) for f in files))
    path = export_inspect(episodes, out, task=task)
    console.print(f"wrote {len(episodes)} episodes as samples to {path}")


@app.command("anatomy-report")
def anatomy_report(
    shared_data: Annotated[
        Path, typer.Argument(help="The shared data folder (holds tau-bench/ and workbench/).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Markdown file to write.")] = Path(
        "docs/results/anatomy.md"
    ),
) -> None:
    """Write the turn-anatomy tables of the published τ-bench airline and WorkBench runs."""
    from toolshift.traces.anatomy_report import anatomy_markdown

    text = anatomy_markdown(shared_data)
    write_text_atomic(out, text)
    console.print(f"wrote {out}")


@app.command("catalog-mcp")
def catalog_mcp(
    url: Annotated[
        str, typer.Argument(help="The MCP server's streamable-HTTP URL (e.g. http://127.0.0.1:8765/mcp).")
    ],
    domain: Annotated[str, typer.Option(help="The domain the catalog is for.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for <domain>.catalog.json.")],
    neither: Annotated[
        list[str] | None, typer.Option(help="Harness tools that touch no world (repeatable).")
    ] = None,
) -> None:
    """Write a domain's tool catalog from a live MCP server's tools/list (readOnlyHint → read)."""
    import anyio

    from toolshift.traces.catalog import save_catalog
    from toolshift.traces.mcp_catalog import catalog_from_mcp_server

    catalog = anyio.run(lambda: catalog_from_mcp_server(url, domain, neither=neither or []))
    path = save_catalog(catalog, catalog_path(out, domain))
    table = Table(title=f"{domain}: {len(catalog.tools)} tools")
    for col in ("tool", "effect", "origin", "note"):
        table.add_column(col)
    for tool in catalog.tools:
        table.add_row(tool.name, tool.effect, tool.origin, tool.note)
    console.print(table)
    console.print(f"wrote {path}")


@app.command("catalog-world")
def catalog_world(
    domain: Annotated[
        str, typer.Argument(help="A toolshift world domain: built-in name or a spec YAML path.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for <domain>.catalog.json.")],
) -> None:
    """Write a toolshift world's tool catalog (its tools' MCP annotations), e.g. beside agent-run episodes."""
    import anyio

    from toolshift.traces.catalog import save_catalog
    from toolshift.traces.mcp_catalog import catalog_of_world

    catalog = anyio.run(lambda: catalog_of_world(domain))
    path = save_catalog(catalog, catalog_path(out, catalog.domain))
    effects = list(catalog.effects().values())
    console.print(f"wrote {path}: {effects.count('read')} read, {effects.count('write')} write")


report_file_errors(app)
