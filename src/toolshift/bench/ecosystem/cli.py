"""The ecosystem commands of `toolshift bench`: evolve, reference, baseline, eval (registered by `register`)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolshift import terminal
from toolshift.agents.executor import EXECUTOR_HELP, RAY_ADDRESS_HELP
from toolshift.errors import BadInputError
from toolshift.fileio import write_bytes_atomic, write_text_atomic

console = terminal.console()

app = typer.Typer(
    help="Evolving ecosystems: versions, reference paths, baselines, metrics.", no_args_is_help=True
)


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def _command(ctx: typer.Context, keep: tuple[str, ...] = ()) -> str:
    """The running command as a user would type it (arguments, options that differ from defaults, and
    the options named in `keep` even at their defaults)."""
    names: list[str] = []
    at: typer.Context | None = ctx
    while at is not None and at.parent is not None:  # the root's name may be "python -m toolshift"
        names.append(at.info_name or "")
        at = at.parent  # type: ignore[assignment]
    parts = ["toolshift", *reversed(names)]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if param.param_type_name == "argument":
            parts += [str(v) for v in (value if isinstance(value, list | tuple) else [value])]
        elif value is not None and (value != param.default or param.name in keep):
            if isinstance(value, bool):
                parts.append(param.opts[0] if value else (param.secondary_opts or param.opts)[0])
            else:
                parts += [param.opts[0], str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def version_table(stats: list) -> Table:  # list[TransitionStats]
    table = Table(title="Ecosystem versions (tools per version; interface churn per transition)")
    for col in (
        "version",
        "tools",
        "implementations",
        "added",
        "retired",
        "modified",
        "accepted",
        "rejected",
        "perturbed",
    ):
        table.add_column(col, justify="right")
    for s in stats:
        table.add_row(
            f"v{s.version}",
            str(s.tools),
            str(s.implementations),
            *(("–",) * 3 if s.version == 1 else (str(s.added), str(s.retired), str(s.modified))),
            str(s.accepted),
            str(s.rejected),
            str(s.perturbed),
        )
    return table


def evolve(
    build: Annotated[Path, typer.Argument(help="A bench build directory (toolshift bench build --out DIR).")],
    versions: Annotated[int, typer.Option(help="Versions in all, v1 included.")] = 6,
    domains: Annotated[str | None, typer.Option(help="Comma-separated domains (default: all).")] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    min_transforms: Annotated[
        int, typer.Option(help="Fewest accepted transformations per domain per version.")
    ] = 8,
    max_transforms: Annotated[
        int, typer.Option(help="Most accepted transformations per domain per version.")
    ] = 12,
    perturb_rate: Annotated[
        float, typer.Option(help="Share of tool descriptions perturbed per version.")
    ] = 0.04,
    cost_model: Annotated[
        str | None,
        typer.Option(
            help="Score implementation costs 1-10 with this model (embedded, openai:<m>, anthropic:<m>; "
            "cached in DIR/ecosystem/cost-scores.json) instead of the declared-work rubric."
        ),
    ] = None,
) -> None:
    """Sample versions v2..vN by checked, capability-preserving transformations; write DIR/ecosystem/."""
    from toolshift.bench.build import load_manifest
    from toolshift.bench.ecosystem.evolve import EvolveConfig
    from toolshift.bench.ecosystem.pipeline import evolve_build

    if versions < 1:
        raise BadInputError("--versions must be at least 1", field="versions")
    if cost_model is not None:
        from toolshift.agents.config import check_model_spec

        check_model_spec(cost_model, role="user")  # a chat model: embedded, openai:<m> or anthropic:<m>
        if cost_model == "scripted":
            raise BadInputError("--cost-model needs a chat model, not 'scripted'", field="cost_model")
    config = EvolveConfig(
        versions=versions,
        seed=seed,
        min_transforms=min_transforms,
        max_transforms=max(min_transforms, max_transforms),
        perturb_rate=perturb_rate,
        cost_model=cost_model,
    )
    names = [d.strip() for d in domains.split(",")] if domains else None
    total = len(names) if names else sum(1 for e in load_manifest(build).domains if e.tasks)
    with _progress() as bar:
        task = bar.add_task("evolving domains", total=total)
        eco = evolve_build(build, config, domains=names, progress=lambda _d: bar.advance(task))
    console.print(version_table(eco.stats))
    reasons = ", ".join(f"{k}: {v}" for k, v in eco.rejected_by_reason.items()) or "none"
    console.print(
        f"ecosystem [bold]{eco.id}[/] ({len(eco.domains)} domains) in {eco.seconds:.1f} s; rejected: {reasons}"
    )


def reference(
    ctx: typer.Context,
    build: Annotated[Path, typer.Argument(help="A bench build directory with an evolved ecosystem.")],
    validate: Annotated[bool, typer.Option(help="Replay every reference path to Δgold.")] = True,
    markdown: Annotated[
        Path | None, typer.Option(help="Also write the per-version table and drift as markdown.")
    ] = None,
) -> None:
    """Step- and cost-optimal reference paths for every task × version; replayed; drift plot."""
    from toolshift.bench.ecosystem.paths import compute_references, drift, plot_drift
    from toolshift.bench.ecosystem.store import ecosystem_dir, load_ecosystem

    eco = load_ecosystem(build)
    with _progress() as bar:
        task = bar.add_task("reference paths", total=len(eco.domains))
        header, records = compute_references(build, validate=validate, progress=lambda _d: bar.advance(task))
    rows = drift(records, eco.config.versions)
    png = plot_drift(rows, ecosystem_dir(build) / "drift.png")
    console.print(
        f"{header.instances} task × version instances: {header.valid} valid, {header.failed_replay} failed replay "
        f"(excluded), {header.no_path} without a path; DP {header.dp_seconds:.2f} s, replay {header.replay_seconds:.1f} s"
    )
    console.print(drift_table(rows))
    console.print(f"drift plot: {png}")
    if markdown:
        from toolshift.bench.ecosystem.report import ecosystem_markdown

        markdown.parent.mkdir(parents=True, exist_ok=True)
        figure = markdown.parent / f"{markdown.stem}_drift.png"
        write_bytes_atomic(figure, png.read_bytes())
        write_text_atomic(
            markdown, ecosystem_markdown(eco, header, rows, figure, _command(ctx), build, records)
        )
        console.print(f"wrote {markdown}")


def drift_table(rows: list[dict]) -> Table:
    table = Table(title="Reference paths per version (mean weight; tasks whose weight fell / stayed / rose)")
    for col in ("version", "mean steps", "steps fell/same/rose", "mean cost", "cost fell/same/rose"):
        table.add_column(col, justify="right")
    from toolshift.bench.ecosystem.report import movement

    for r in rows:
        table.add_row(
            f"v{r['version']}",
            f"{r['mean_step']:.2f}",
            movement(r, "step"),
            f"{r['mean_cost']:.2f}",
            movement(r, "cost"),
        )
    return table


def baseline(
    ctx: typer.Context,
    build: Annotated[Path, typer.Argument(help="A bench build directory with reference paths.")],
    agent: Annotated[
        str, typer.Option(help="oracle, frozen-v1, embedded, openai:<model> or anthropic:<model>.")
    ] = "oracle",
    out: Annotated[Path, typer.Option(help="Folder for <agent>.episodes.jsonl.")] = Path("runs/baselines"),
    split: Annotated[str, typer.Option(help="test, train or all.")] = "test",
    sample: Annotated[
        int | None, typer.Option(help="Run only this many tasks (each on every version).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed for --sample.")] = 0,
    max_turns: Annotated[int | None, typer.Option(help="Turn limit per episode.")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint for openai:<model>.")
    ] = None,
    setting: Annotated[
        str,
        typer.Option(
            help="standard, domain-tools, task-tools, oracle-tools or oracle-path (docs/usage.md, bench)."
        ),
    ] = "standard",
    user: Annotated[
        str, typer.Option(help="User simulator: scripted, embedded, openai:<model> or anthropic:<model>.")
    ] = "scripted",
    workers: Annotated[
        int,
        typer.Option(
            help="Processes to run the episodes in (the embedded model decodes on one core each); "
            "the same episodes and file as one."
        ),
    ] = 1,
    executor: Annotated[str, typer.Option(help=EXECUTOR_HELP)] = "local",
    ray_address: Annotated[str | None, typer.Option(help=RAY_ADDRESS_HELP)] = None,
    versions: Annotated[
        str | None, typer.Option(help="Only these versions, comma-separated (e.g. 1,3); default every one.")
    ] = None,
) -> None:
    """Run a baseline or a model on every version over MCP in one setting and record its episodes (resumable)."""
    from toolshift.agents.executor import Executor, NodeBars
    from toolshift.bench.ecosystem.baselines import parse_versions, run_baseline

    if split not in ("test", "train", "all"):
        raise BadInputError(f"unknown split {split!r} (test, train or all)", field="split")
    chosen = Executor.choose(executor, workers, ray_address)
    with _progress() as bar:
        task = bar.add_task(f"{agent} episodes", total=None)
        path = run_baseline(
            build,
            agent,  # type: ignore[arg-type]
            out,
            split=None if split == "all" else split,
            sample=sample,
            seed=seed,
            max_turns=max_turns,
            progress_total=lambda n: bar.update(task, total=n),
            progress=lambda: bar.advance(task),
            command=_command(ctx, keep=("agent",)),
            base_url=base_url,
            setting=setting,
            user=user,
            executor=chosen,
            nodes=NodeBars(bar) if chosen.is_ray else None,
            versions=parse_versions(versions),
        )
    console.print(f"wrote {path}")


def evaluate(
    ctx: typer.Context,
    runs: Annotated[list[Path], typer.Argument(help="Episode files or folders of *.episodes.jsonl.")],
    build: Annotated[Path, typer.Option(help="The bench build the runs were recorded on.")],
    markdown: Annotated[Path | None, typer.Option(help="Write the tables as markdown here.")] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json-out", help="Also write the metrics as JSON here.")
    ] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 1000,
) -> None:
    """Score recorded episodes: SR, Strict-SR, tool P/R/F1, Step-/Cost-SPE, IDR, DAR and collateral writes
    per version with intervals."""
    from toolshift.bench.ecosystem.evaluate import evaluate as run_eval
    from toolshift.bench.ecosystem.evaluate import results_markdown
    from toolshift.bench.metrics import COUNTS, METRICS, cell

    eco, evals = run_eval(build, runs, resamples=resamples)
    for ev in evals:
        assert ev.summary is not None
        table = Table(title=f"{ev.agent} on {eco.id} (% with 95% bootstrap interval over tasks)")
        table.add_column("version")
        for m in (*METRICS, *COUNTS):
            table.add_column(m, justify="right")
        for v in [*sorted(k for k in ev.summary.by_version if k), 0]:
            row = ev.summary.by_version[v]
            table.add_row("all" if v == 0 else f"v{v}", *(cell(m, row[m], 0) for m in (*METRICS, *COUNTS)))
        console.print(table)
        hurt = ev.collateral()
        if hurt:
            rows = sorted({r for s in hurt for r in s.collateral_rows})
            console.print(
                f"collateral writes in {len(hurt)} of {len(ev.scores)} instances, on {len(rows)} rows: "
                + ", ".join(rows[:8])
                + (" …" if len(rows) > 8 else ""),
                highlight=False,
            )
        if ev.excluded:
            console.print("excluded: " + ", ".join(f"{k}: {v}" for k, v in sorted(ev.excluded.items())))
    if markdown:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(markdown, results_markdown(eco, evals, _command(ctx)))
        console.print(f"wrote {markdown}")
    if json_out:
        body = {
            "ecosystem": eco.id,
            "agents": {
                ev.agent: {
                    ("all" if v == 0 else f"v{v}"): {m: iv.as_dict() for m, iv in row.items()}
                    for v, row in (ev.summary.by_version.items() if ev.summary else [])
                }
                for ev in evals
            },
            "excluded": {ev.agent: dict(ev.excluded) for ev in evals},
            "collateral": {ev.agent: ev.collateral_dicts() for ev in evals},
            "recorded_at": {ev.agent: dict(ev.codes) for ev in evals},
        }
        write_text_atomic(json_out, json.dumps(body, indent=1))


def serve(
    build: Annotated[Path, typer.Argument(help="A bench build directory with an evolved ecosystem.")],
    domain: Annotated[
        str | None, typer.Argument(help="A domain of the build (domain-tools; default: the --task's).")
    ] = None,
    version: Annotated[int, typer.Option(help="Ecosystem version to serve.")] = 1,
    setting: Annotated[
        str,
        typer.Option(
            help="standard (every domain behind search_tools), domain-tools, task-tools, oracle-tools, oracle-path."
        ),
    ] = "standard",
    task: Annotated[
        str | None, typer.Option(help="The task a per-task setting serves (task-tools, oracle-*).")
    ] = None,
    transport: Annotated[str, typer.Option(help="stdio or http (streamable HTTP).")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8765,
) -> None:
    """Serve one ecosystem version in one setting over MCP (a session per connection).

    The server declares its ecosystem version and setting; `toolshift run --world URL` records them in
    every episode, so `toolshift bench eval` can score the run.
    """
    import anyio

    from toolshift.bench.ecosystem.server import EcosystemServer, Served
    from toolshift.bench.ecosystem.settings import (
        PER_TASK,
        EcosystemVersion,
        VersionWorlds,
        check_setting,
        exposure_for,
    )
    from toolshift.bench.ecosystem.store import load_ecosystem

    eco = load_ecosystem(build)
    check_setting(setting)
    if transport not in ("stdio", "http"):
        raise BadInputError(f"unknown transport {transport!r} (stdio or http)", field="transport")
    if not 1 <= version <= eco.config.versions:
        raise BadInputError(
            f"ecosystem {eco.id} has versions 1..{eco.config.versions}, not {version}", field="version"
        )
    worlds = VersionWorlds(build)
    the_task, reference = None, None
    if task is not None:
        by_id = {t.id: t for d in eco.domains for t in worlds.tasks(d)}
        if task not in by_id:
            raise BadInputError(f"task {task!r} is not in this build", source=str(build), field="task")
        the_task = by_id[task]
        domain = domain or the_task.domain
        if setting in ("oracle-tools", "oracle-path"):
            from toolshift.bench.ecosystem.paths import load_references

            _, records = load_references(build)
            reference = next((r for r in records if r.task_id == task and r.version == version), None)
    elif setting in PER_TASK:
        raise BadInputError(f"setting {setting!r} serves one task: give --task", field="task")
    if domain is not None and domain not in eco.domains:
        raise BadInputError(
            f"domain {domain!r} is not in ecosystem {eco.id}", source=str(build), field="domain"
        )
    if setting == "standard" and domain is not None and task is None:
        raise BadInputError(
            "the standard setting serves every domain: drop DOMAIN, or use --setting domain-tools",
            field="domain",
        )
    if setting == "domain-tools" and domain is None:
        raise BadInputError("setting 'domain-tools' needs a DOMAIN (or --task)", field="domain")
    whole = EcosystemVersion(worlds, eco.domains, version) if setting == "standard" else None
    exposure = exposure_for(
        setting,
        version=whole,
        catalog=worlds.catalog(domain, version) if domain and setting != "standard" else None,
        task=the_task,
        reference=reference,
        domain=domain,
    )
    served = Served(eco.id, version, setting, exposure.domain, exposure.task)
    server = EcosystemServer(worlds, served, exposure, eco=whole)
    if transport == "stdio":
        anyio.run(server.run_stdio)
        return
    size = len(whole.tools) if whole else len(exposure.listed)
    terminal.console(stderr=True).print(
        f"serving [bold]{served.ecosystem_version}[/] ({setting}, {size} tools) at http://{host}:{port}/mcp"
    )
    server.run_http(host=host, port=port)


def settings() -> None:
    """The tool-supply settings `baseline --setting` and `serve --setting` take, and what each exposes."""
    from toolshift.bench.ecosystem.settings import SETTING_HELP

    table = Table(title="Settings (the exposed set: every world tool whose definition the agent was given)")
    table.add_column("--setting")
    table.add_column("what the agent is given")
    for name, text in SETTING_HELP.items():
        table.add_row(name, text)
    console.print(table)


def register(target: typer.Typer) -> None:
    """Add the ecosystem commands to another Typer app (the `toolshift bench` app)."""
    target.command("settings")(settings)
    target.command("evolve")(evolve)
    target.command("reference")(reference)
    target.command("baseline")(baseline)
    target.command("eval")(evaluate)
    target.command("serve")(serve)


register(app)
