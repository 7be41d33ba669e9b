"""`toolshift world ...`: list, compile, inspect, call and serve worlds."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from toolshift import terminal
from toolshift.errors import BadInputError, ToolshiftError, report_file_errors
from toolshift.fileio import loads_json
from toolshift.world.limits import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS

app = typer.Typer(no_args_is_help=True, help="Stateful tool worlds: compile, serve over MCP, call.")
console = terminal.console()

DomainArg = Annotated[str, typer.Argument(help="A built-in domain name or a path to a domain spec YAML.")]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Re-seed the world (default: the spec's seed).")]


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def _short(value: Any, width: int = 70) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def changes_table(changes: list[Any], title: str = "State diff") -> Table:
    """A rich table of RowChanges."""
    table = Table(title=title, show_lines=False)
    for col in ("table", "key", "field", "op", "before", "after"):
        table.add_column(col, overflow="fold")
    for c in changes:
        table.add_row(c.table, c.key, c.field, c.op, _short(c.before, 30), _short(c.after, 30))
    return table


def _world(domain: str, seed: int | None = None) -> Any:
    """A fresh world of a domain spec or of another benchmark (`bfcl:<id>`, `agentdojo:<suite>.<task>`)."""
    from toolshift.world.external import is_external, open_world

    if is_external(domain):
        if seed is not None:
            raise BadInputError("other benchmarks' worlds have their own fixed state", field="--seed")
        return open_world(domain)
    from toolshift.world.state.registry import load_domain
    from toolshift.world.state.world import World

    return World(load_domain(domain, seed=seed))


@app.command("domains")
def domains(
    world_only: Annotated[
        bool, typer.Option("--world-only", help="Only the hand-written world domains.")
    ] = False,
) -> None:
    """Table of built-in domains with entity, tool and row counts."""
    from toolshift.world.language.datasets import DataUnavailable
    from toolshift.world.state.registry import builtin_domains, load_domain

    table = Table(title="Built-in domains")
    for col in ("domain", "entities", "tools", "rows", "from"):
        table.add_column(col, justify="left" if col in ("domain", "from") else "right")
    unavailable: list[tuple[str, str]] = []
    for name, path in builtin_domains().items():
        origin = path.parent.parent.name
        if world_only and origin != "world":
            continue
        try:
            d = load_domain(name)
        except DataUnavailable as exc:  # an imported world whose data is not on this machine
            table.add_row(name, "–", "–", "–", f"{origin} [yellow](unavailable)[/]")
            unavailable.append((name, str(exc)))
            continue
        table.add_row(
            name, str(len(d.spec.entities)), str(len(d.tools)), str(sum(d.row_counts().values())), origin
        )
    console.print(table)
    for name, why in unavailable:
        console.print(
            f"[yellow]{escape(name)}[/] unavailable: {escape(why)}", highlight=False, soft_wrap=True
        )
    from toolshift.world.external import family_status

    external = Table(title="Other benchmarks' worlds (one per task; their own checks judge)")
    for col in ("family", "worlds", "available", "names", "about"):
        external.add_column(col, overflow="fold")
    names = {"bfcl": "bfcl:<entry id>", "agentdojo": "agentdojo:<suite>.<user task>"}
    for f in family_status():
        external.add_row(
            *map(
                escape,
                (
                    f.family,
                    "—" if f.worlds is None else str(f.worlds),
                    "yes" if f.available else f"no (extra {f.extra})",
                    names[f.family],
                    f"{f.title}; {f.note}",
                ),
            ),
        )
    console.print(external)


@app.command("compile")
def compile_cmd(
    domain: DomainArg,
    out: Annotated[Path, typer.Option("--out", help="The SQLite file to write.")],
    seed: SeedOpt = None,
) -> None:
    """Compile a domain spec into a seeded SQLite database file."""
    from toolshift.world.state.registry import load_domain
    from toolshift.world.state.world import World

    if out.is_dir():
        raise BadInputError("is a folder; give the SQLite file to write", source=str(out), field="--out")
    world = World(load_domain(domain, seed=seed))
    world.save(out)
    counts = world.row_counts()
    console.print(
        f"wrote [bold]{out}[/]: {len(counts)} tables, {sum(counts.values())} rows, "
        f"{len(world.tools)} tools (seed {world.domain.spec.seed})"
    )


@app.command("tools")
def tools_cmd(domain: DomainArg) -> None:
    """Table of a world's tools: name, effect, parameters (* = required)."""
    d = _world(domain)
    table = Table(title=f"{d.domain.spec.title}: {len(d.tools)} tools")
    table.add_column("tool")
    table.add_column("effect")
    table.add_column("params", overflow="fold")
    for t in d.tools:
        req = set(t.required)
        params = ", ".join(p + ("*" if p in req else "") for p in t.params)
        effect = t.effect + (" (destructive)" if t.destructive else "")
        table.add_row(t.name, effect, params)
    console.print(table)


@app.command("call")
def call_cmd(
    domain: DomainArg,
    tool: Annotated[str, typer.Argument(help="The tool to call.")],
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    seed: SeedOpt = None,
) -> None:
    """Call one tool on a fresh world; print the result or error and the state diff.

    An unknown tool or arguments its schema rejects exit 2; a domain error (a failed precondition) exits 1.
    """
    from toolshift.world.toolerror import ToolError

    parsed = loads_json(args, source="--args")
    if not isinstance(parsed, dict):
        raise BadInputError("must be a JSON object", source="--args")
    world = _world(domain, seed)
    try:
        world.validate(world.tool(tool), parsed)
    except ToolError as exc:
        # The caller's own input: the tool name or its arguments. A domain failure is exit 1 below.
        field = "TOOL" if exc.code == "unknown_tool" else "--args"
        raise BadInputError(exc.message, source=world.domain.spec.name, field=field) from None
    before = world.snapshot()
    result = world.call(tool, parsed)
    style = "green" if result.ok else "red"
    console.print(f"[bold {style}]{'ok' if result.ok else 'error'}[/] {tool}")
    console.print_json(json.dumps(result.payload(), ensure_ascii=False, default=str))
    diff = world.changes_since(before)
    if diff:
        console.print(changes_table(diff))
    else:
        console.print("[dim]no state change[/]")
    if not result.ok and result.error is not None:
        raise ToolshiftError(f"{tool} returned error {result.error['code']!r}")


@app.command("serve")
def serve_cmd(
    domain: DomainArg,
    transport: Annotated[
        Transport, typer.Option("--transport", help="stdio or streamable HTTP.")
    ] = Transport.stdio,
    host: Annotated[
        str, typer.Option("--host", help="HTTP host; beyond loopback needs a token in TOOLSHIFT_WORLD_TOKEN.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 8765,
    shared_state: Annotated[
        bool,
        typer.Option("--shared-state", help="One world for every session (default: a copy per session)."),
    ] = False,
    idle_timeout: Annotated[
        float,
        typer.Option(
            "--idle-timeout",
            help="HTTP: close a session (and drop its world) after this many seconds unused; 0 = never.",
        ),
    ] = DEFAULT_IDLE_TIMEOUT,
    max_sessions: Annotated[
        int,
        typer.Option(
            "--max-sessions", help="HTTP: refuse a new session while this many are live; 0 = no limit."
        ),
    ] = DEFAULT_MAX_SESSIONS,
    seed: SeedOpt = None,
) -> None:
    """Serve a world as an MCP server."""
    import math

    import anyio

    from toolshift.world.mcp.http_guard import require_token
    from toolshift.world.mcp.serve import TOKEN_ENV, WorldServer, world_token
    from toolshift.world.state.registry import load_domain

    if transport != Transport.stdio:
        require_token(host, world_token(), TOKEN_ENV)
    if not (math.isfinite(idle_timeout) and idle_timeout >= 0):
        raise BadInputError("must be a number of seconds, 0 or more", field="--idle-timeout")
    if max_sessions < 0:
        raise BadInputError("must be a number of sessions, 0 or more", field="--max-sessions")
    from toolshift.world.external import is_external

    server = WorldServer(
        _world(domain, seed) if is_external(domain) else load_domain(domain, seed=seed),
        shared_state=shared_state,
        idle_timeout=idle_timeout or None,
        max_sessions=max_sessions or None,
    )
    if transport == Transport.stdio:
        anyio.run(server.run_stdio)
        return
    limits = (
        f"sessions unused for {idle_timeout:g} s are closed" if idle_timeout else "sessions are never closed"
    ) + (f", at most {max_sessions} live" if max_sessions else ", no limit on live sessions")
    terminal.console(stderr=True).print(
        f"serving [bold]{server.base.name}[/] ({len(server.base.tools)} tools) at http://{host}:{port}/mcp"
        + (" with shared state" if shared_state else f", one world per session ({limits})")
    )
    server.run_http(host=host, port=port, token=world_token())


@app.command("tasks")
def tasks_cmd(
    family: Annotated[str, typer.Argument(help="bfcl or agentdojo.")],
    out: Annotated[Path, typer.Option("--out", help="The task file to write (toolshift.tasks/1 JSONL).")],
    subset: Annotated[
        list[str] | None,
        typer.Option(
            "--subset",
            help="BFCL category (base, long_context, miss_func, miss_param) or AgentDojo suite; repeatable.",
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N tasks per subset.")] = None,
) -> None:
    """Write another benchmark's tasks as toolshift tasks: scripted turns, gold path replayed on the world.

    Every task that cannot be exported is listed with its reason (never dropped silently)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from toolshift.taskfile import write_tasks
    from toolshift.world.external import count_tasks, export_tasks

    total = count_tasks(family, subset, limit)
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console,
    ) as progress:  # fmt: skip
        bar = progress.add_task(f"{family} tasks", total=total)
        report = export_tasks(family, subsets=subset, limit=limit, progress=lambda _: progress.advance(bar))
    write_tasks(out, report.tasks)
    console.print(f"wrote [bold]{out}[/]: {len(report.tasks)} tasks, {len(report.failed)} failed")
    for task_id, reason in report.failed:
        console.print(f"[red]not exported[/] {task_id}: {reason}")


report_file_errors(app)
