"""`toolshift bench`: list domains, build validated task sets, inspect graphs and build statistics.

Other bench modules add their commands to this `app` (`@app.command(...)` in their own module,
imported at the bottom of this file).
"""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolshift import terminal
from toolshift.errors import BadInputError, ToolshiftError
from toolshift.fileio import write_text_atomic

app = typer.Typer(
    help="The ecosystem benchmark: domains, dependency graphs, validated tasks.", no_args_is_help=True
)
console = terminal.console()


@app.command("domains")
def domains_cmd(
    world: bool = typer.Option(False, "--world", help="Also list the built-in world domains (clinic, ...)."),
) -> None:
    """List the benchmark domains with entity, tool and seeded-row counts."""
    from toolshift.bench.domains import bench_domain_names, catalog_collisions, domain_info
    from toolshift.world.state.registry import world_domains

    names = bench_domain_names() + (world_domains() if world else [])
    infos = [domain_info(n) for n in names]
    table = Table(title=f"{len(infos)} domains")
    for col in ("domain", "prefix", "entities", "relations", "actions", "tools", "rows"):
        table.add_column(
            col, justify="right" if col in ("entities", "relations", "actions", "tools", "rows") else "left"
        )
    for i in infos:
        table.add_row(
            i.name, i.prefix, str(i.entities), str(i.relations), str(i.actions), str(i.tools), str(i.rows)
        )
    table.add_section()
    table.add_row(
        "total", "", str(sum(i.entities for i in infos)), str(sum(i.relations for i in infos)),
        str(sum(i.actions for i in infos)), str(sum(i.tools for i in infos)), str(sum(i.rows for i in infos)),
    )  # fmt: skip
    console.print(table)
    clashes = catalog_collisions(infos)
    if clashes:
        shown = "; ".join(f"{n} ({', '.join(ds)})" for n, ds in sorted(clashes.items())[:5])
        raise BadInputError(f"{len(clashes)} tool names are defined by more than one domain: {shown}")


@app.command("build")
def build_cmd(
    out: Path = typer.Option(..., "--out", help="Build directory (created; reruns resume per domain)."),
    domains: str = typer.Option(
        "", "--domains", help="Comma-separated domain names (default: all bench domains)."
    ),
    seed: int = typer.Option(0, "--seed", help="Synthesis seed: tasks and the split are a function of it."),
    per_domain: int = typer.Option(40, "--per-domain", min=1, help="Tasks to make per domain."),
    force: bool = typer.Option(False, "--force", help="Rebuild domains even when their marker matches."),
    model: str = typer.Option(
        "",
        "--model",
        help="Paraphrase each task's intent with this model (embedded, openai:<name>, anthropic:<name>); "
        "a paraphrase that drops any fact is refused and the template kept.",
    ),
) -> None:
    """Synthesise and validate tasks for each domain; write spec, graph, tasks and report per domain."""
    from toolshift.bench.build import build_domain, check_rebuild, write_manifest
    from toolshift.bench.domains import resolve_domains

    rewrite = None
    if model:
        from toolshift.agents.config import check_model_spec
        from toolshift.bench.instructions import model_rewriter

        check_model_spec(model)
        if model in ("oracle", "replay", "scripted"):
            raise BadInputError(f"{model!r} is not a language model", field="--model")
        rewrite = model_rewriter(model, seed=seed)
    names = resolve_domains(domains or None)
    check_rebuild(out, names, seed, per_domain)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = []
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        overall = progress.add_task("domains", total=len(names))
        for name in names:
            current = progress.add_task(f"  {name}", total=per_domain)
            try:
                rep = build_domain(
                    out, name, seed=seed, per_domain=per_domain, force=force, rewrite=rewrite, model=model,
                    progress=lambda n, c=current: progress.update(c, completed=n),
                )  # fmt: skip
                progress.update(current, completed=rep.made)
                results.append((name, rep.status, rep.made, rep.message))
            except ToolshiftError as exc:
                results.append((name, "failed", 0, str(exc)))
            progress.remove_task(current)
            progress.advance(overall)
    manifest = write_manifest(out, names, seed, per_domain)
    elapsed = time.perf_counter() - started
    table = Table(title=f"bench build → {out}")
    for col in ("domain", "status", "tasks", "train", "test", "tools"):
        table.add_column(col, justify="left" if col in ("domain", "status") else "right")
    by = {e.name: e for e in manifest.domains}
    for name, status, made, _ in results:
        e = by.get(name)
        style = {"ok": "green", "short": "yellow"}.get(status, "red")
        table.add_row(
            name, f"[{style}]{status}[/]", str(made), str(e.train if e else 0), str(e.test if e else 0),
            str(e.tools if e else 0),
        )  # fmt: skip
    table.add_section()
    table.add_row(
        "total",
        "",
        str(manifest.total_tasks),
        str(manifest.train),
        str(manifest.test),
        str(manifest.total_tools),
    )
    console.print(table)
    for name, status, _, message in results:
        if status != "ok":
            console.print(f"[yellow]{name}[/]: {status}: {message}", highlight=False)
    console.print(f"{manifest.total_tasks} tasks over {len(manifest.domains)} domains in {elapsed:.1f} s")
    failed = [n for n, s, _, _ in results if s == "failed"]
    if failed:
        raise ToolshiftError(f"{len(failed)} domain(s) failed: {', '.join(failed)}")


@app.command("stats")
def stats_cmd(
    build_dir: Path = typer.Argument(..., help="A directory made by `toolshift bench build`."),
    png: Path = typer.Option(None, "--png", help="Histogram PNG path (default: DIR/stats.png)."),
    markdown_out: Path = typer.Option(None, "--markdown", help="Also write the tables as markdown here."),
    judge: str = typer.Option(
        "",
        "--judge",
        help="Also score each intent's naturalness with this model (embedded, openai:<name>, anthropic:<name>); "
        "scores are cached in DIR/naturalness.json. Without it the rubric is scored by rules.",
    ),
) -> None:
    """Per-domain counts (tools, tasks, splits, path lengths, functions per task), task quality (policy
    conflicts, duplicate Δgold, routed references, reordered creates, naturalness); writes a PNG."""
    from toolshift.bench.stats import (
        build_stats,
        distribution,
        histogram_png,
        markdown,
        quality_rows,
        quality_stats,
    )

    scorer = None
    if judge:
        from toolshift.agents.config import check_model_spec
        from toolshift.bench.naturalness import model_judge

        check_model_spec(judge)
        if judge in ("oracle", "replay", "scripted"):
            raise BadInputError(f"{judge!r} is not a language model", field="--judge")
        scorer = (judge, model_judge(judge))
    stats = build_stats(build_dir)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    ) as bar:
        job = bar.add_task("auditing tasks", total=sum(s.tasks for s in stats))
        quality = quality_stats(build_dir, scorer, progress=lambda: bar.advance(job))
    table = Table(title=f"bench build {build_dir}")
    cols = ("domain", "tools", "tasks", "train", "test", "path mean", "path min–max", "functions/task")
    for col in cols:
        table.add_column(col, justify="left" if col == "domain" else "right")
    for s in stats:
        lo, hi = (min(s.path_lengths), max(s.path_lengths)) if s.path_lengths else (0, 0)
        dist = " ".join(f"{k}:{v}" for k, v in distribution(s.functions).items())
        table.add_row(
            s.name,
            str(s.tools),
            str(s.tasks),
            str(s.train),
            str(s.test),
            f"{s.mean_path:.2f}",
            f"{lo}–{hi}",
            dist,
        )
    table.add_section()
    table.add_row(
        "total", str(sum(s.tools for s in stats)), str(sum(s.tasks for s in stats)),
        str(sum(s.train for s in stats)), str(sum(s.test for s in stats)), "", "", "",
    )  # fmt: skip
    console.print(table)
    qtable = Table(title="task quality")
    for col in ("measure", "value"):
        qtable.add_column(col)
    for measure, value, _ in quality_rows(quality):
        qtable.add_row(measure, value)
    console.print(qtable)
    path = histogram_png(stats, png or build_dir / "stats.png", quality)
    console.print(f"histogram → {path}")
    if markdown_out:
        markdown_out.parent.mkdir(parents=True, exist_ok=True)
        from toolshift.bench.build import load_manifest
        from toolshift.bench.ecosystem.store import build_fingerprint

        m = load_manifest(build_dir)
        png_arg = f" --png {png}" if png else ""
        judge_arg = f" --judge {judge}" if judge else ""
        text = markdown(
            stats,
            f"toolshift bench stats {build_dir} --markdown {markdown_out}{png_arg}{judge_arg}",
            f"toolshift bench build --out {build_dir} --seed {m.seed} --per-domain {m.per_domain}",
            quality,
            build_fingerprint(build_dir),
        )
        if png:
            text += f"\n![functions per task and path length]({png.name})\n"
        write_text_atomic(markdown_out, text)
        console.print(f"markdown → {markdown_out}")


@app.command("verify")
def verify_cmd(
    build_dir: Path = typer.Argument(..., help="A directory made by `toolshift bench build`."),
    domains: str = typer.Option("", "--domains", help="Comma-separated domains (default: all in the build)."),
) -> None:
    """Re-check a build: every file against the manifest by digest, each domain's task and split counts,
    and every task — its gold path replays to exactly Δgold on a fresh world of the spec it was made
    from, Δgold is non-empty, the path's reads alone do not reach it, and its history matches its content."""
    from toolshift.bench.build import build_world, load_manifest, load_tasks, replay_problems

    m = load_manifest(build_dir)
    entries = {e.name: e for e in m.domains}
    names = [d.strip() for d in domains.split(",") if d.strip()] or list(entries)
    unknown = [n for n in names if n not in entries]
    if unknown:
        raise BadInputError(f"not in this build: {', '.join(unknown)}", field="--domains")
    table = Table(title=f"verify {build_dir}")
    for col in ("domain", "tasks", "problems"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    problems: list[str] = []
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), console=console
    ) as bar:
        job = bar.add_task("domains", total=len(names))
        for name in names:
            tasks = load_tasks(build_dir, domain=name)
            e = entries[name]
            counts = (
                len(tasks),
                sum(t.split == "train" for t in tasks),
                sum(t.split == "test" for t in tasks),
            )
            if counts != (e.tasks, e.train, e.test) or len({t.id for t in tasks}) != len(tasks):
                problems.append(
                    f"{name}: tasks.jsonl holds {counts[0]} tasks ({counts[1]} train, {counts[2]} test, "
                    f"{len({t.id for t in tasks})} ids); the manifest says {e.tasks} ({e.train} train, {e.test} test)"
                )
            world = build_world(build_dir, name)
            found = 0
            for t in tasks:
                issues = replay_problems(world, t)
                if (
                    not t.history
                    or t.history[-1].fingerprint != t.fingerprint()
                    or t.history[-1].version != t.version
                ):
                    issues.append("history does not match the task's content or version")
                found += bool(issues)
                problems += [f"{t.id}: {i}" for i in issues]
            table.add_row(name, str(len(tasks)), f"[{'red' if found else 'green'}]{found}[/]")
            world.close()
            bar.advance(job)
    console.print(table)
    for line in problems[:20]:
        console.print(f"[red]{line}[/]", highlight=False)
    if problems:
        raise ToolshiftError(f"{len(problems)} problem(s) in {build_dir}")
    console.print("every task replays to exactly its expected changes")


@app.command("graph")
def graph_cmd(
    domain: str = typer.Argument(..., help="A domain name or spec path."),
    out: Path = typer.Option(
        Path("."), "--out", help="Directory for <domain>.graph.json and <domain>.graph.png."
    ),
) -> None:
    """Write a domain's tool dependency graph as JSON and PNG."""
    from toolshift.bench.graph import build_graph, graph_summary, render_png, require_usable, signatures
    from toolshift.world.state.registry import load_domain

    d = load_domain(domain)
    graph = build_graph(d.spec, signatures(d.tools, d.spec))
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{d.spec.name}.graph.json"
    png_path = out / f"{d.spec.name}.graph.png"
    graph.save(json_path)
    render_png(graph, png_path)
    s = graph_summary(graph)
    console.print(
        f"{d.spec.name}: {s['tools']} tools, {s['edges']} edges, {s['query_starts']} query starts, "
        f"{s['reachable_writes']}/{s['writes']} writes reachable → {json_path}, {png_path}"
    )
    require_usable(graph)


@app.command("check")
def check_cmd(
    spec: str = typer.Argument(..., help="A domain spec path or name."),
    target: int = typer.Option(20, "--target", help="Tasks to try to make."),
) -> None:
    """Validate one spec end to end: compile, graph, synthesis; fails below 10 tasks."""
    from toolshift.bench.check import check_spec

    check_spec(spec, target=target, console=console)


@app.command("import")
def import_cmd(
    worlds: str = typer.Argument(..., help="Comma-separated imported worlds (tau2-airline, tau2-retail)."),
    out: Path = typer.Option(..., "--out", help="Build directory to write (a world's folder is rewritten)."),
    seed: int = typer.Option(0, "--seed", help="Split seed for tasks their benchmark gives no split."),
) -> None:
    """Write a bench build from imported worlds' own tasks (τ²-bench's), for evolve, reference, run."""
    from toolshift.bench.imported import import_build

    names = [n.strip() for n in worlds.split(",") if n.strip()]
    with console.status("importing") as status:
        manifest, problems = import_build(
            out, names, seed=seed, progress=lambda n: status.update(f"importing {n}")
        )
    table = Table(title=f"bench import → {out}")
    for col in ("domain", "status", "tasks", "train", "test", "tools", "failing gold steps"):
        table.add_column(col, justify="left" if col in ("domain", "status") else "right")
    for e in manifest.domains:
        failing = sum(1 for p in problems.get(e.name, []) if " step " in p)
        table.add_row(e.name, e.status, str(e.tasks), str(e.train), str(e.test), str(e.tools), str(failing))
    console.print(table)
    for name, lines in problems.items():
        for line in lines:
            console.print(f"[yellow]{name}[/]: {line}", highlight=False, soft_wrap=True)


def _attach_extensions() -> None:
    """Commands other bench modules contribute (ecosystem versions, reference paths, metrics)."""
    import importlib

    for module in ("toolshift.bench.ecosystem.cli",):
        try:
            importlib.import_module(module).register(app)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


_attach_extensions()
