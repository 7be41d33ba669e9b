"""`toolshift gateway ...`: serve the gateway (flags or `--config gateway.yaml`), check its backends."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from toolshift import terminal
from toolshift.errors import BadInputError, report_file_errors
from toolshift.gateway.liveflows import DOMAINS as DEFAULT_LIVE_DOMAINS

app = typer.Typer(
    no_args_is_help=True, help="An MCP gateway in front of MCP servers: record, version, flows."
)
err = terminal.console(stderr=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="A gateway YAML (toolshift.gateway/1).")]
WorldOpt = Annotated[
    list[str] | None, typer.Option("--world", help="A toolshift domain to front (NAME=DOMAIN or DOMAIN).")
]
CommandOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--command", help="An MCP server command to front over stdio (NAME='cmd args' or 'cmd args')."
    ),
]
UrlOpt = Annotated[
    list[str] | None, typer.Option("--url", help="A streamable-HTTP MCP server (NAME=URL or URL).")
]


def _named(value: str, default: str) -> tuple[str, str]:
    head, sep, rest = value.partition("=")
    if sep and head.replace("-", "").replace("_", "").isalnum() and "/" not in head and " " not in head:
        return head, rest
    return default, value


def config_from_flags(
    config: Path | None,
    *,
    world: list[str] | None = None,
    command: list[str] | None = None,
    url: list[str] | None = None,
    build: Path | None = None,
    domain: str | None = None,
    version: int | None = None,
    record: Path | None = None,
    agent: str | None = None,
    flow: Path | None = None,
    catalog: Path | None = None,
    steward: Path | None = None,
    watch: Path | None = None,
    watch_library: Path | None = None,
    decider: str | None = None,
    threshold: float | None = None,
    transport: str | None = None,
    host: str | None = None,
    port: int | None = None,
    idle_timeout: float | None = None,
    call_timeout: float | None = None,
) -> Any:
    """A `GatewayConfig` from a file, with flags layered over it (or from flags alone)."""
    from pydantic import ValidationError

    from toolshift.gateway.config import GatewayConfig, load_config

    raw: dict[str, Any] = load_config(config).model_dump(mode="json", exclude_unset=True) if config else {}
    backends = list(raw.get("backends", []))
    for value in world or []:
        name, target = _named(value, f"world{len(backends) + 1}" if backends else Path(value).stem)
        backends.append({"name": name, "world": target})
    for value in command or []:
        name, target = _named(value, f"server{len(backends) + 1}")
        backends.append({"name": name, "command": shlex.split(target)})
    for value in url or []:
        name, target = _named(value, f"remote{len(backends) + 1}")
        backends.append({"name": name, "url": target})
    if build is not None:
        backends.append(
            {"name": domain or "build", "build": str(build), "domain": domain, "version": version or 1}
        )
    raw["backends"] = backends
    middleware = list(raw.get("middleware", []))
    if record is not None:
        raw["record"] = {**raw.get("record", {}), "out": str(record)}
        if agent:
            raw["record"]["agent"] = agent
        if "record" not in middleware:
            middleware.insert(0, "record")
    if flow is not None or catalog is not None:
        if flow is None or catalog is None:
            raise BadInputError("--flow and --catalog go together", field="flow")
        raw["flows"] = {**raw.get("flows", {}), "flow": str(flow), "catalog": str(catalog)}
        if "flows" not in middleware:
            middleware.append("flows")
    if raw.get("flows") is not None:
        if decider:
            raw["flows"]["decider"] = decider
        if threshold is not None:
            raw["flows"]["threshold"] = threshold
    if steward is not None:
        raw["steward"] = {"library": str(steward)}
        if "steward" not in middleware:
            middleware.insert(0, "steward")
    if watch_library is not None and watch is None:
        raise BadInputError("--watch-library needs --watch LOG", field="watch")
    if watch is not None:
        raw["watch"] = {**raw.get("watch", {}), "log": str(watch)}
        if watch_library is not None:
            raw["watch"]["library"] = str(watch_library)
        if "watch" not in middleware:
            middleware.append("watch")
    raw["middleware"] = middleware
    for key, value in (
        ("transport", transport),
        ("host", host),
        ("port", port),
        ("call_timeout", call_timeout),
    ):
        if value is not None:
            raw[key] = value
    if idle_timeout is not None:
        raw["idle_timeout"] = idle_timeout or None
    try:
        return GatewayConfig.model_validate(raw)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(config) if config else "command line") from exc


@app.command("serve")
def serve(
    config: ConfigOpt = None,
    world: WorldOpt = None,
    command: CommandOpt = None,
    url: UrlOpt = None,
    build: Annotated[
        Path | None, typer.Option(help="Version middleware: a bench build with versions.")
    ] = None,
    domain: Annotated[str | None, typer.Option(help="The build's domain to serve.")] = None,
    version: Annotated[int | None, typer.Option(help="The ecosystem version to expose.")] = None,
    record: Annotated[Path | None, typer.Option(help="Record episodes into this folder.")] = None,
    agent: Annotated[str | None, typer.Option(help="The agent name written into recorded episodes.")] = None,
    flow: Annotated[Path | None, typer.Option(help="Serve this flow's lookups live.")] = None,
    catalog: Annotated[Path | None, typer.Option(help="The tool catalog the flow was learned for.")] = None,
    steward: Annotated[
        Path | None, typer.Option(help="Steward middleware: supply tools and skills from this library.")
    ] = None,
    watch: Annotated[
        Path | None, typer.Option(help="Watch middleware: log every catalog version the backend serves here.")
    ] = None,
    watch_library: Annotated[
        Path | None,
        typer.Option(help="With --watch: the Steward library re-checked (and maintained) on each."),
    ] = None,
    decider: Annotated[str | None, typer.Option(help="reach or next-step.")] = None,
    threshold: Annotated[float | None, typer.Option(help="The decider's θ.")] = None,
    transport: Annotated[str | None, typer.Option(help="stdio or http.")] = None,
    host: Annotated[str | None, typer.Option(help="HTTP host (beyond loopback needs a token).")] = None,
    port: Annotated[int | None, typer.Option(help="HTTP port.")] = None,
    idle_timeout: Annotated[
        float | None, typer.Option(help="Seconds before an idle session closes; 0: never.")
    ] = None,
    call_timeout: Annotated[float | None, typer.Option(help="Seconds a backend has to answer.")] = None,
) -> None:
    """Serve the gateway over stdio or streamable HTTP; the backends are reached once before serving."""
    import anyio

    from toolshift.gateway.build import build_gateway, prepare
    from toolshift.gateway.server import GatewayServer, check_binding

    cfg = config_from_flags(
        config, world=world, command=command, url=url, build=build, domain=domain, version=version,
        record=record, agent=agent, flow=flow, catalog=catalog, steward=steward, watch=watch,
        watch_library=watch_library, decider=decider, threshold=threshold,
        transport=transport, host=host, port=port, idle_timeout=idle_timeout, call_timeout=call_timeout,
    )  # fmt: skip
    if cfg.transport == "http":
        check_binding(cfg.host, cfg.token(), cfg.token_env)
    gateway = build_gateway(cfg)
    anyio.run(prepare, gateway)
    server = GatewayServer(gateway)
    chain = " → ".join([*cfg.middleware, "backend"])
    if cfg.transport == "stdio":
        anyio.run(server.run_stdio)
    else:
        err.print(
            f"toolshift gateway: {chain}; {len(cfg.backends)} backend(s) at http://{cfg.host}:{cfg.port}/mcp "
            f"(/health, /metrics)"
        )
        server.run_http(host=cfg.host, port=cfg.port, token=cfg.token())
    for m in gateway.middleware:
        flush = getattr(m, "flush_close", None)
        if flush is not None:
            flush()


@app.command("check")
def check(
    config: ConfigOpt = None,
    world: WorldOpt = None,
    command: CommandOpt = None,
    url: UrlOpt = None,
) -> None:
    """Reach every backend once, list each (reachable with its tool count, or why not), then what the gateway
    would expose; exit 1 if any is unreachable."""
    import anyio

    from toolshift.gateway.backends import BackendUnreachable
    from toolshift.gateway.build import build_gateway, prepare

    cfg = config_from_flags(config, world=world, command=command, url=url)
    gateway = build_gateway(cfg)
    results = anyio.run(gateway.probe_each)
    out = terminal.console()
    for name, tools, why in results:
        backend = gateway.backends[name]
        if tools is None:
            out.print(f"[red]✗[/] {why}", highlight=False, soft_wrap=True)
        else:
            out.print(
                f"[green]✓[/] {backend.describe()}: reachable, {len(tools)} tools",
                highlight=False,
                soft_wrap=True,
            )
    down = [name for name, tools, _ in results if tools is None]
    if down:
        raise BackendUnreachable(f"{len(down)} of {len(results)} backend(s) unreachable: {', '.join(down)}")
    anyio.run(prepare, gateway)  # tool names route uniquely; a flow fits the backend's catalog
    tools = anyio.run(gateway.probe)
    out.print(f"{len(cfg.backends)} backend(s) reachable; {len(tools)} tools: "
              + ", ".join(t.name for t in tools[:12]) + (" …" if len(tools) > 12 else ""))  # fmt: skip


@app.command("report")
def report(
    out: Annotated[Path, typer.Option(help="The results page to write.")] = Path(
        "docs/results/flows-live.md"
    ),
    work: Annotated[Path, typer.Option(help="Work folder (build, runs, flows; reused).")] = Path(
        ".cache/flows-live"
    ),
    model: Annotated[
        list[str] | None, typer.Option("--model", help="Live models (default: embedded); openai:<m> too.")
    ] = None,
    per_domain: Annotated[int, typer.Option(help="Tasks synthesised per domain.")] = 30,
    live_tasks: Annotated[int, typer.Option(help="Test tasks per domain run live, flows off and on.")] = 4,
    max_turns: Annotated[int, typer.Option(help="Turn limit of a live episode.")] = 12,
    domains: Annotated[
        str, typer.Option(help="Comma-separated bench domains (default: payroll,it_assets,procurement).")
    ] = ",".join(DEFAULT_LIVE_DOMAINS),
    build: Annotated[
        Path | None,
        typer.Option(
            help="An existing bench build to take the domains' tasks from (default: build them in WORK)."
        ),
    ] = None,
) -> None:
    """docs/results/flows-live.md: trace vs environment replay, and live runs with flows off and on."""
    from toolshift.gateway.liveflows import write_report

    if build is not None and not (build / "manifest.json").is_file():
        raise BadInputError("not a benchmark build (no manifest.json)", source=str(build))
    chosen = tuple(d.strip() for d in domains.split(",") if d.strip())
    from toolshift.bench.domains import bench_domain_names

    known = set(bench_domain_names())
    for d in chosen:
        if d not in known:
            raise BadInputError(f"unknown bench domain {d!r}", source="--domains")
    if build is not None:
        for d in chosen:
            if not (build / "domains" / d / "tasks.jsonl").is_file():
                raise BadInputError(f"the build has no tasks of domain {d!r}", source=str(build))
    args = [f"--out {out}", f"--work {work}"] + ([f"--build {build}"] if build else [])
    args += [f"--domains {','.join(chosen)}"] if chosen != DEFAULT_LIVE_DOMAINS else []
    args += [f"--model {m}" for m in model or []]
    args += [f"--live-tasks {live_tasks}"] if live_tasks != 4 else []
    path = write_report(
        out,
        work,
        models=model or ["embedded"],
        per_domain=per_domain,
        live_tasks=live_tasks,
        max_turns=max_turns,
        build=build,
        command="toolshift gateway report " + " ".join(args),
        domains=chosen,
    )
    err.print(f"wrote {path}")


report_file_errors(app)
