"""`toolshift drift`: pin, install and list real MCP servers' published versions; run the real-drift experiment."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from toolshift import terminal
from toolshift.errors import BadInputError, report_file_errors

app = typer.Typer(
    no_args_is_help=True,
    help="Real drift: real MCP servers' published histories as an evolving ecosystem, Steward kept in step.",
)
console = terminal.console()

TEST_VERSIONS: dict[str, tuple[str, ...]] = {
    "filesystem": ("0.6.2", "2026.8.31"),
    "git": ("0.6.2", "2026.10.19"),
    "memory": ("2026.8.31",),
    "sqlite": ("2025.4.25",),
}
"""The versions `make test` installs (`toolshift drift install --tests`): what tests/drift runs on."""


def _bar() -> Progress:
    return terminal.progress_bar(console)


_hook = terminal.progress_hook


def _servers(names: list[str] | None, default: tuple[str, ...]) -> list[str]:
    from toolshift.drift.servers import SERVERS

    names = names or list(default)
    bad = [n for n in names if n not in SERVERS]
    if bad:
        raise BadInputError(f"unknown server {bad[0]!r} (known: {', '.join(SERVERS)})", field="server")
    return names


@app.command("pin")
def pin_cmd(
    server: Annotated[list[str] | None, typer.Option(help="Servers to pin (default: all).")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Where to write the pins (default: the package's pins.json).")
    ] = None,
) -> None:
    """Ask each registry once for every version's integrity hash and dependencies (toolshift.drift-pins/1)."""
    from toolshift.drift.install import PINS_PATH
    from toolshift.drift.pin import pin_all
    from toolshift.drift.servers import SERVERS
    from toolshift.fileio import write_text_atomic

    keys = _servers(server, tuple(SERVERS))
    with _bar() as bar:
        job = bar.add_task("pinning", total=sum(len(SERVERS[k].versions) for k in keys))
        pins = pin_all(keys, progress=lambda _: bar.advance(job))
    path = out or PINS_PATH
    write_text_atomic(path, json.dumps(pins.model_dump(), indent=1) + "\n")
    console.print(f"pins → {path}")


@app.command("install")
def install_cmd(
    spec: Annotated[
        list[str] | None, typer.Argument(help="SERVER or SERVER@VERSION (SERVER: every version).")
    ] = None,
    tests: Annotated[bool, typer.Option("--tests", help="The versions the test suite runs on.")] = False,
    workers: Annotated[int, typer.Option(help="Installs run side by side.")] = 3,
) -> None:
    """Install versions into the cache (TOOLSHIFT_DRIFT_CACHE, else .cache/drift); installed ones are kept."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from toolshift.drift.install import install, load_pins
    from toolshift.drift.servers import SERVERS, check_version

    jobs: list[tuple[str, str]] = [(k, v) for k, vs in TEST_VERSIONS.items() for v in vs] if tests else []
    if tests and (shutil.which("npm") is None or shutil.which("node") is None):
        console.print("npm or node not found: the npm servers are left out (their tests will skip)")
        jobs = [(k, v) for k, v in jobs if SERVERS[k].registry != "npm"]
    for item in spec or []:
        key, _, version = item.partition("@")
        _servers([key], ())
        jobs += (
            [(key, check_version(SERVERS[key], version))]
            if version
            else [(key, v) for v in SERVERS[key].versions]
        )
    if not jobs:
        raise BadInputError("name SERVER[@VERSION] or --tests", field="spec")
    pins = load_pins()
    with _bar() as bar, ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        job = bar.add_task("installing", total=len(jobs))

        def one(j: tuple[str, str]) -> Any:
            inst = install(*j, pins=pins)
            bar.advance(job)
            return inst

        done = list(pool.map(one, jobs))
    for inst in done:
        console.print(f"{inst.spec.package}@{inst.version} → {inst.folder}", highlight=False, soft_wrap=True)


@app.command("history")
def history_cmd(
    run: Annotated[Path, typer.Option(help="The run folder (history.json is written there).")] = Path(
        "runs/drift"
    ),
    server: Annotated[list[str] | None, typer.Option(help="Servers to list (default: all).")] = None,
    workers: Annotated[int, typer.Option(help="Versions installed and listed side by side.")] = 3,
) -> None:
    """Install and list every published version; print tools per version and churn per transition."""
    from toolshift.drift.history import build_history
    from toolshift.drift.servers import SERVERS

    keys = _servers(server, tuple(SERVERS))
    with _bar() as bar:
        job = bar.add_task("listing versions", total=sum(len(SERVERS[k].versions) for k in keys))
        history = build_history(
            run / "history.json", keys, progress=lambda _: bar.advance(job), workers=workers
        )
    table = Table(title=f"{run / 'history.json'}")
    for col in ("server", "versions", "listed", "tools (first → last)", "distinct catalogs"):
        table.add_column(col)
    for key in keys:
        h = history.servers[key]
        listed = h.listed()
        span = f"{len(listed[0].tools)} → {len(listed[-1].tools)}" if listed else "–"
        table.add_row(
            key, str(len(h.versions)), str(len(listed)), span, str(len({v.fingerprint for v in listed}))
        )
    console.print(table)


@app.command("run")
def run_cmd(
    run: Annotated[Path, typer.Option(help="The run folder (resumable).")] = Path("runs/drift"),
    model: Annotated[
        list[str] | None,
        typer.Option(help="A model of `toolshift run` (embedded, openai:<m>, …) run per version."),
    ] = None,
    max_turns: Annotated[int, typer.Option(help="The model's turn limit per episode.")] = 8,
    workers: Annotated[int, typer.Option(help="Processes the model's episodes run in.")] = 1,
    concurrency: Annotated[
        int, typer.Option(help="Instrument episodes (each its own server) run at once.")
    ] = 2,
    synthetic: Annotated[
        Path | None, typer.Option(help="A bench build whose ecosystem's churn is shown beside the real one.")
    ] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write docs/results/real-drift.md here.")] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 1000,
) -> None:
    """The whole experiment: histories, task suites, the oracle, Steward's libraries across the real upgrades,
    the skill-following instrument, a model per version, the live upgrade through the gateway, the page."""
    import asyncio

    from toolshift.drift.deploy import watch_upgrades
    from toolshift.drift.experiment import ServerRun, build_libraries, follow, model_row, oracle
    from toolshift.drift.history import build_history
    from toolshift.drift.report import markdown as page
    from toolshift.drift.results import RESULTS_FORMAT, churn, seed_coverage, server_results
    from toolshift.drift.results import synthetic as syn
    from toolshift.drift.servers import SERVERS, TASK_SERVERS
    from toolshift.drift.suite import suite_for
    from toolshift.fileio import write_text_atomic

    models = list(model or [])
    if models:
        from toolshift.agents.config import check_model_spec

        for m in models:
            check_model_spec(m, "model")
    command = "toolshift drift " + " ".join(sys.argv[2:])
    work: dict[str, Any] = {}
    checks: dict[str, Any] = {}
    servers: dict[str, Any] = {}
    with _bar() as bar:
        hook = _hook(bar)
        job = bar.add_task("listing versions", total=sum(len(s.versions) for s in SERVERS.values()))
        history = build_history(run / "history.json", list(SERVERS), progress=lambda _: bar.advance(job))
        runs = []
        for key in TASK_SERVERS:
            suite = suite_for(key, history, run / f"suite-{key}.json", progress=hook)
            runs.append(ServerRun(run, history, suite))
        for sr in runs:
            oracle(sr, hook, concurrency)
            hook(f"{sr.server} libraries", len(sr.suite.stations))
            work[sr.server] = build_libraries(sr, hook)
            follow(sr, progress=hook, concurrency=concurrency)
            checks[sr.server] = _checks(sr)
            for m in models:
                model_row(sr, m, max_turns=max_turns, workers=workers, progress=hook)
            servers[sr.server] = server_results(sr, models, resamples)
        fs = next(sr for sr in runs if sr.server == "filesystem")
        log = asyncio.run(watch_upgrades("filesystem", fs.suite.stations, run / "deploy",
                                         fs.library("frozen", fs.first_learned())))  # fmt: skip
        for entry, station in zip(log["versions"], fs.suite.stations, strict=False):
            entry["station"] = station
    churned = churn(history)
    res = {
        "format": RESULTS_FORMAT,
        "command": command,
        "models": models,
        "history": {
            k: {
                "package": h.package,
                "registry": h.registry,
                "versions": [v.model_dump(mode="json") for v in h.versions],
            }
            for k, h in history.servers.items()
        },
        "churn": churned,
        "coverage": seed_coverage(churned),
        "synthetic": syn(synthetic),
        "servers": servers,
        "work": work,
        "checks": checks,
        "deployment": {"server": "filesystem", "versions": log["versions"]},
    }
    write_text_atomic(run / "results.json", json.dumps(res, indent=1, sort_keys=True) + "\n")
    if markdown is not None:
        write_text_atomic(markdown, page(res, command))
    console.print(f"results → {run / 'results.json'}" + (f", {markdown}" if markdown else ""))


def _checks(sr: Any) -> dict[str, Any]:
    """`steward check` of the frozen (first-station) library against every later station's catalog."""
    from collections import Counter

    from toolshift.steward.check import check_library
    from toolshift.steward.library import Library

    out: dict[str, Any] = {}
    first = sr.first_learned()
    with Library.open(sr.library("frozen", first)) as lib:
        for v in sr.suite.stations[sr.suite.stations.index(first) + 1 :]:
            found = check_library(lib, sr.catalog(v), sr.server)
            out[v] = {
                "counts": dict(sorted(Counter(c.status for c in found).items())),
                "broken": sorted({r for c in found if c.status == "broken" for r in c.reasons}),
            }
    return out


report_file_errors(app)
