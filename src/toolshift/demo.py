"""`toolshift demo`: the project's main job on embedded defaults (no API key, no network).

Each capability contributes one step; the demo runs them in order and stops at the first failure.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.rule import Rule

from toolshift import terminal

console = terminal.console()


def _steps(out: Path) -> list[tuple[str, object]]:
    from toolshift.agents.demo import run as agents_demo
    from toolshift.bench.ecosystem.demo import run as ecosystem_demo
    from toolshift.evolve.demo import run as evolve_demo
    from toolshift.flows.demo import run as flows_demo
    from toolshift.gateway.demo import run as gateway_demo
    from toolshift.report.demo import run as report_demo
    from toolshift.steward.demo import run as steward_demo
    from toolshift.traces.demo import run as traces_demo
    from toolshift.world.demo import run as world_demo

    return [
        ("World over MCP: reads, writes and the state diff", world_demo),
        ("Traces: a tool catalog over MCP, a τ²-bench run through the episode store and back", traces_demo),
        ("Flows: lookups learned from recorded runs, replayed on held-out ones", flows_demo),
        ("Agent runs: the embedded model and the oracle over MCP, judged by the world diff", agents_demo),
        (
            "Evolving ecosystem (system 1): 3 versions, reference paths, three baselines scored",
            functools.partial(ecosystem_demo, keep=out / "ecosystem"),
        ),
        (
            "Steward (system 1): a skill library learned on v1, rebound and pruned as the catalog changes",
            functools.partial(steward_demo, build=out / "ecosystem" / "build", out=out / "steward"),
        ),
        (
            "Task evolution (system 2): one generation on the clinic world, and what changed in a child",
            functools.partial(evolve_demo, out=out / "evolve"),
        ),
        (
            "Gateway and flows (system 3): sessions recorded, a flow learned from them, lookups served",
            functools.partial(gateway_demo, out=out / "gateway"),
        ),
        ("Report: the demo's runs in one HTML page", functools.partial(report_demo, out=out)),
    ]


def run(
    out: Annotated[
        Path, typer.Option("--out", help="Where the demo keeps its runs and writes its report.")
    ] = Path("demo-out"),
) -> None:
    """Run every demo step in order."""
    for title, step in _steps(out):
        console.print(Rule(f"[bold]{title}"))
        step(console)  # type: ignore[operator]
    console.print(Rule("[bold green]demo finished"))
    console.print(closing_line(), highlight=False, soft_wrap=True)


def closing_line() -> str:
    """The demo's last line: what to run next, spelt so a new shell finds it."""
    command = terminal.toolshift_command()
    if command == "toolshift":
        return "next: toolshift --help"
    where = os.path.abspath(os.path.dirname(command) or ".")
    return f"next: {command} --help (or `export PATH={where}:$PATH` to type a bare `toolshift`)"
