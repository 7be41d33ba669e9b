"""`toolshift steward`: build, maintain, export, import, show, serve and evaluate skill libraries."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from toolshift import terminal
from toolshift.agents.executor import EXECUTOR_HELP, RAY_ADDRESS_HELP
from toolshift.errors import BadInputError

app = typer.Typer(
    help="Steward: a skill library kept in step with the tool catalog, and its supply.", no_args_is_help=True
)
console = terminal.console()


def _bar() -> Progress:
    return terminal.progress_bar(console)


_progress = terminal.progress_hook


def _episodes(ctx, files: list[Path]):
    """The episodes of `files`, refusing any of a task outside the train split (D141)."""
    from toolshift.traces.store import iter_episodes

    splits = {r.task_id: r.split for r in ctx.records if r.split}
    out = []
    for f in files:
        for e in iter_episodes(f, unique=True):
            task = ctx.tasks.get(e.task_id)
            split = (task.split if task is not None else None) or splits.get(e.task_id)
            if split != "train":
                why = f"a {split}-split task" if split else "not a train task of this build"
                raise BadInputError(
                    f"episode {e.id}: task {e.task_id} is {why}; Steward learns from train-split episodes only",
                    source=str(f),
                )
            out.append(e)
    return out


def _work_line(w) -> str:
    ops = ", ".join(f"{k} {v}" for k, v in sorted(w.by_op.items()))
    episodes = "episode" if w.episodes == 1 else "episodes"
    return (
        f"v{w.catalog_version} {w.mode}: {w.episodes} successful {episodes}, {w.distilled} distilled, "
        f"{w.edits} edit{'' if w.edits == 1 else 's'}{f' ({ops})' if ops else ''}, {w.seconds:.2f} CPU s, "
        f"{w.tokens} tokens"
        + (f" ({w.tokens / w.episodes / 1000:.2f}K per task)" if w.tokens and w.episodes else "")
    )


def _writer(model: str | None, catalog):
    """The `--model` reviser (None: model-free distillation)."""
    if model is None:
        return None
    from toolshift.agents.config import RunConfig, make_model
    from toolshift.steward.writer import ModelWriter

    _check_model(model)
    config = RunConfig(world="steward", model=model)
    return ModelWriter(make_model(model, config, seed=0), catalog)


def _check_model(model: str | None) -> None:
    """Refuse, before any work, a `--model` that is not a chat model."""
    if model is None:
        return
    from toolshift.agents.config import check_model_spec

    check_model_spec(model, "model")
    if model in ("oracle", "replay") or model.partition(":")[0] in ("python", "harness"):
        raise BadInputError(
            f"--model needs a chat model (embedded, openai:<m>, anthropic:<m>), not {model!r}", field="model"
        )


MODEL_HELP = (
    "A model of `toolshift run` (embedded, openai:<m>, anthropic:<m>) that writes each skill's instructions."
)


@app.command("build")
def build_cmd(
    build: Annotated[
        Path, typer.Argument(help="An evolved bench build (toolshift bench evolve + reference).")
    ],
    out: Annotated[Path, typer.Option(help="The library file to create (SQLite).")],
    version: Annotated[int, typer.Option(help="Ecosystem version to initialise on.")] = 1,
    episodes: Annotated[
        list[Path] | None,
        typer.Option(help="Training episodes (default: FactReplay runs of the train split)."),
    ] = None,
    runs: Annotated[Path, typer.Option(help="Where default training episodes are recorded.")] = Path(
        "runs/steward"
    ),
    train_sample: Annotated[int | None, typer.Option(help="Use only this many training tasks.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing library file.")] = False,
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
) -> None:
    """Initialise a library on one version from validated successful training trajectories."""
    _check_model(model)
    from toolshift.steward.catalog import version_catalog
    from toolshift.steward.experiment import context, training_episodes
    from toolshift.steward.library import Library
    from toolshift.steward.maintain import Maintainer

    ctx = context(build, runs)
    if not 1 <= version <= ctx.versions:
        raise BadInputError(f"the ecosystem has versions 1..{ctx.versions}", field="version")
    if not episodes:
        with _bar() as bar:
            episodes = [training_episodes(ctx, version, _progress(bar), train_sample)]
    tmp = out.with_name(out.name + ".build")
    if out.exists() and not force:
        raise BadInputError("a library already exists here (--force replaces it)", source=str(out))
    eps = _episodes(ctx, episodes)  # refused before any file is written
    catalog = version_catalog(build, version, ctx.worlds)
    writer = _writer(model, catalog)
    lib = Library.create(tmp, name=out.stem, replace_existing=True)
    work = Maintainer(lib, reviser=writer).initialise(catalog, eps)
    lib.close()
    tmp.replace(out)
    console.print(_work_line(work))
    console.print(f"wrote {out}")


@app.command("maintain")
def maintain_cmd(
    library: Annotated[Path, typer.Argument(help="A library made by `steward build`.")],
    build: Annotated[Path, typer.Option(help="The evolved bench build.")],
    version: Annotated[int, typer.Option(help="The catalog version to maintain the library onto.")],
    episodes: Annotated[
        list[Path] | None, typer.Option(help="That version's successful training episodes.")
    ] = None,
    runs: Annotated[Path, typer.Option(help="Where default training episodes are recorded.")] = Path(
        "runs/steward"
    ),
    train_sample: Annotated[int | None, typer.Option(help="Use only this many training tasks.")] = None,
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
) -> None:
    """Incremental maintenance onto a later version: local edits from its episodes and catalog only."""
    _check_model(model)
    from toolshift.steward.catalog import version_catalog
    from toolshift.steward.experiment import context, training_episodes
    from toolshift.steward.library import Library
    from toolshift.steward.maintain import Maintainer

    lib = Library.open(library)
    if version <= lib.catalog_version:
        raise BadInputError(f"the library is already at version {lib.catalog_version}", field="version")
    ctx = context(build, runs)
    if not episodes:
        with _bar() as bar:
            episodes = [training_episodes(ctx, version, _progress(bar), train_sample)]
    catalog = version_catalog(build, version, ctx.worlds)
    work = Maintainer(lib, reviser=_writer(model, catalog)).maintain(catalog, _episodes(ctx, episodes))
    lib.close()
    console.print(_work_line(work))


@app.command("show")
def show_cmd(
    library: Annotated[Path, typer.Argument(help="A library file.")],
    as_json: Annotated[bool, typer.Option("--json", help=terminal.JSON_HELP)] = False,
) -> None:
    """Skills per level and state, edits per operation, work per version."""
    from collections import Counter
    from dataclasses import asdict

    from toolshift.steward.library import LEVELS, Library

    with Library.open(library) as lib:
        levels = {}
        for level in (*LEVELS, "foreign"):
            active, inactive = len(lib.skills(level, active=True)), len(lib.skills(level, active=False))
            if level != "foreign" or active + inactive:
                levels[level] = {"active": active, "inactive": inactive}
        edits = lib.edits()
        ops = Counter(e.op for e in edits)
        work = lib.work()
        for w in work:  # the work table keeps counts only: the operations come from the edit log
            w.by_op = dict(Counter(e.op for e in edits if e.catalog_version == w.catalog_version))
        if as_json:
            terminal.print_json({"library": str(library), "catalog_version": lib.catalog_version,
                                 "skills": levels, "edits": dict(sorted(ops.items())),
                                 "work": [asdict(w) for w in work]})  # fmt: skip
            return
        table = Table(title=f"{library} (catalog version {lib.catalog_version})")
        for col in ("level", "active", "inactive"):
            table.add_column(col, justify="left" if col == "level" else "right")
        for level, n in levels.items():
            table.add_row(level, str(n["active"]), str(n["inactive"]))
        console.print(table)
        console.print("edits: " + (", ".join(f"{k} {v}" for k, v in sorted(ops.items())) or "none"))
        for w in work:
            console.print(_work_line(w))


@app.command("check")
def check_cmd(
    library: Annotated[Path, typer.Argument(help="A library file.")],
    catalog: Annotated[
        Path,
        typer.Option(
            help='The new catalog: an MCP tools/list result as JSON ({"tools": [...]}, or the list).'
        ),
    ],
    domain: Annotated[
        str | None,
        typer.Option(help="The skills' domain the catalog serves (default: the library's only one)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=terminal.JSON_HELP)] = False,
) -> None:
    """Which skills a new catalog breaks, rebinds or leaves as they are, before it is deployed (nothing is
    written). Exits 1 when an active skill breaks."""
    from collections import Counter

    from toolshift.fileio import read_json
    from toolshift.steward.check import catalog_from_tools, check_library
    from toolshift.steward.library import Library

    raw = read_json(catalog, what="tool catalog")
    tools = raw.get("tools") if isinstance(raw, dict) else raw
    if not isinstance(tools, list) or not all(
        isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools
    ):
        raise BadInputError("not an MCP tools/list result (a list of tools, each with a name)", source=str(catalog),
                            field="tools")  # fmt: skip
    with Library.open(library) as lib:
        domains = sorted({s.domain for s in lib.skills() if s.level != "foreign"})
        if domain is None:
            if len(domains) != 1:
                raise BadInputError(
                    f"the library holds {len(domains)} domains: name one with --domain", field="domain"
                )
            domain = domains[0]
        elif domain not in domains:
            raise BadInputError(
                f"the library has no skills of domain {domain!r}", source=str(library), field="domain"
            )
        checks = check_library(lib, catalog_from_tools(domain, tools), domain)
    counts = Counter(c.status for c in checks)
    if as_json:
        terminal.print_json({"library": str(library), "catalog": str(catalog), "domain": domain,
                             "counts": dict(sorted(counts.items())), "skills": [c.as_dict() for c in checks]})  # fmt: skip
    else:
        table = Table(title=f"{library} against {catalog} ({domain})")
        for col in ("skill", "level", "status", "why"):
            table.add_column(col)
        for c in checks:
            if c.status != "ok":
                table.add_row(c.skill, c.level, c.status, "; ".join(c.reasons))
        console.print(table)
        console.print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no skills")
    if counts.get("broken"):
        raise typer.Exit(1)


@app.command("sign")
def sign_cmd(library: Annotated[Path, typer.Argument(help="A library file you trust.")]) -> None:
    """Sign a library with the key file TOOLSHIFT_STEWARD_KEY names (HMAC-SHA256; its checksum and schema are
    checked first). With the key set, only libraries signed with it open (docs/formats.md)."""
    from toolshift.steward.library import KEY_ENV, sign_library

    sign_library(library)
    console.print(f"signed {library} with the key {KEY_ENV} names")


@app.command("export")
def export_cmd(
    library: Annotated[Path, typer.Argument(help="A library file.")],
    out: Annotated[Path, typer.Option(help="Folder for one Agent Skills folder (SKILL.md) per skill.")],
    include_inactive: Annotated[
        bool, typer.Option(help="Also write inactive skills, each marked inactive in its body.")
    ] = False,
) -> None:
    """Write every active skill as an Agent Skills folder (inactive ones only on request, marked; D142)."""
    from toolshift.steward.library import Library
    from toolshift.steward.skillmd import export_skills

    with Library.open(library) as lib:
        skills = lib.skills() if include_inactive else lib.skills(active=True)
        left = len(lib.skills()) - len(skills)
        paths = export_skills(skills, out, library_version=lib.catalog_version or None)
    console.print(f"wrote {len(paths)} skills to {out}" + (f" ({left} inactive left out)" if left else ""))


@app.command("import")
def import_cmd(
    skills: Annotated[Path, typer.Argument(help="A folder of Agent Skills folders.")],
    out: Annotated[Path, typer.Option(help="The library file to create.")],
) -> None:
    """Read Agent Skills folders into a new library (each an `add` edit); invalid ones are refused by field."""
    from toolshift.steward.library import Library
    from toolshift.steward.skillmd import import_library

    read, version = import_library(skills)
    tmp = out.with_name(out.name + ".build")
    if out.exists():
        raise BadInputError("a library already exists here", source=str(out))
    lib = Library.create(tmp, name=out.stem, replace_existing=True)
    with lib.transaction():
        for s in read:
            lib.edit("add", s, s.catalog_version, {"imported_from": str(skills)}, as_is=True)
        lib.set_meta("catalog_version", str(version))
    lib.close()
    tmp.replace(out)
    foreign = sum(s.level == "foreign" for s in read)
    console.print(
        f"imported {len(read)} skills into {out} at catalog version {version}"
        + (f" ({foreign} foreign, kept as written)" if foreign else "")
    )


@app.command("serve")
def serve_cmd(
    build: Annotated[Path, typer.Argument(help="An evolved bench build.")],
    domain: Annotated[str, typer.Argument(help="A domain of the build.")],
    library: Annotated[Path, typer.Option(help="The library to supply from.")],
    version: Annotated[int, typer.Option(help="Ecosystem version to serve.")] = 1,
    transport: Annotated[str, typer.Option(help="stdio or http.")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8765,
) -> None:
    """Serve a version's world of one domain behind Steward's supply over MCP."""
    import anyio

    from toolshift.steward.serve import StewardServer, domain_supply

    if transport not in ("stdio", "http"):
        raise BadInputError(f"unknown transport {transport!r} (stdio or http)", field="transport")
    world, supply = domain_supply(build, domain, version, library)
    server = StewardServer(world, supply, name=f"toolshift-steward-{domain}-v{version}")
    if transport == "stdio":
        anyio.run(server.run_stdio)
        return
    terminal.console(stderr=True).print(
        f"serving [bold]{domain}[/] v{version} behind Steward ({len(supply.plans)} plans) at http://{host}:{port}/mcp"
    )
    server.run_http(host=host, port=port)


@app.command("eval")
def eval_cmd(
    ctx_: typer.Context,
    build: Annotated[Path, typer.Argument(help="An evolved, referenced bench build.")],
    run: Annotated[Path, typer.Option(help="Folder for episodes, libraries and results (resumable).")] = Path(
        "runs/steward"
    ),
    train_sample: Annotated[
        int | None, typer.Option(help="Training tasks used per version (default: all).")
    ] = None,
    sample: Annotated[int | None, typer.Option(help="Test tasks run per version (default: all).")] = None,
    markdown: Annotated[
        Path | None, typer.Option(help="Write docs/results/steward.md here, PNGs beside it.")
    ] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 1000,
    model: Annotated[
        str | None,
        typer.Option(
            help="Part 3: this model (embedded, openai:<m>, ...) behind Steward and on its domain tools."
        ),
    ] = None,
    model_sample: Annotated[int, typer.Option(help="Part 3: test tasks per version for the model.")] = 2,
    max_turns: Annotated[int, typer.Option(help="Part 3: turn limit per model episode.")] = 8,
    workers: Annotated[
        int,
        typer.Option(
            help="Part 3: local processes to run the model's episodes in (the same episodes as one)."
        ),
    ] = 1,
    executor: Annotated[str, typer.Option(help=EXECUTOR_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
    model_rows: Annotated[
        str,
        typer.Option(
            help="Part 3's rows, comma-separated: plan (the handoff, incremental library), ask (left to ask), "
            "plan-full, plan-frozen (the handoff with those libraries), domain (its domain's tools)."
        ),
    ] = "plan,ask,domain",
    dense: Annotated[
        bool, typer.Option(help="Part 1: dense and hybrid retrieval rows beside BM25 (the embeddings extra).")
    ] = False,
    note: Annotated[
        str,
        typer.Option(
            help="Part 3: a paragraph placed under its tables (what the episodes cannot say themselves; the "
            "command line carries it, so the page is still made by one command)."
        ),
    ] = "",
    dev: Annotated[
        int | None,
        typer.Option(
            help="Instead of parts 1-3: the instrument on this many training tasks outside --train-sample "
            "(RUN/dev/), strict SR per version and failures by kind; with --model, part 3's rows on "
            "--model-sample of them."
        ),
    ] = None,
) -> None:
    """The experiment: supply quality (part 1) and the skill-following instrument with frozen, full-rebuild
    and incremental libraries (part 2), per version; tables and a PNG per metric. With --dev N, the
    instrument on N held-out training tasks instead (for reading failures without the test split)."""
    from toolshift.bench.ecosystem.cli import _command
    from toolshift.steward.experiment import build_libraries, context, follow, held_out
    from toolshift.steward.quality import supply_quality
    from toolshift.steward.report import evaluate_follow, frozen_v1, write_report

    if model:  # refused before any work, not after the libraries are built
        _check_model(model)
    from toolshift.agents.executor import Executor, NodeBars

    chosen = Executor.choose(executor, workers, ray_address)
    from toolshift.steward.model_agent import MODEL_ROWS

    rows = [r.strip() for r in model_rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in MODEL_ROWS]
    if unknown or not rows:
        raise BadInputError(
            f"unknown --model-rows {', '.join(unknown) or '(none)'} (of {', '.join(MODEL_ROWS)})",
            field="model-rows",
        )
    ctx = context(build, run)
    ctx.executor = chosen
    if dev is not None:
        from toolshift.steward.dev import dev_summary, dev_table, write_dev

        tasks = held_out(ctx, train_sample, dev)
        with _bar() as bar:
            update = _progress(bar)
            ctx.nodes = NodeBars(bar) if chosen.is_ray else None
            build_libraries(ctx, update, train_sample)
            paths = follow(ctx, ("incremental", "full"), update, dev=tasks)
            if model:  # part 3's rows on the first --model-sample held-out tasks (D196)
                import random

                from toolshift.steward.model_agent import model_dev

                few = set(random.Random(2).sample(sorted(tasks), min(model_sample, len(tasks))))
                paths += model_dev(ctx, model, few, max_turns=max_turns, workers=workers)
        summary = dev_summary(ctx, paths)
        console.print(dev_table(summary))
        console.print(f"results → {write_dev(ctx, summary, _command(ctx_))}")
        return
    with _bar() as bar:
        update = _progress(bar)
        ctx.nodes = NodeBars(bar) if chosen.is_ray else None
        work = build_libraries(ctx, update, train_sample)
        paths = follow(ctx, progress=update, sample=sample)
        paths.append(frozen_v1(ctx, sample))
        model_paths: list[Path] = []
        if model:
            from toolshift.steward.model_agent import model_rows as run_rows

            model_paths = run_rows(
                ctx, model, rows, sample=model_sample, max_turns=max_turns, workers=workers,
                command=_command(ctx_),
            )  # fmt: skip
        job = bar.add_task("supply quality", total=None)
        quality = supply_quality(
            ctx, sample=sample, resamples=resamples, progress=lambda: bar.advance(job), dense_rows=dense
        )
    scores = evaluate_follow(ctx, paths, resamples)
    models = evaluate_follow(ctx, model_paths, resamples, paired=True) if model_paths else {}
    command = _command(ctx_)
    results = write_report(
        ctx, quality, scores, work, command, markdown, train_sample=train_sample, sample=sample,
        models=models, model_sample=model_sample if model else None, note=note,
    )  # fmt: skip
    console.print(f"results → {results}" + (f", {markdown}" if markdown else ""))
