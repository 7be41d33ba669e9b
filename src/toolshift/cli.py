"""The `toolshift` command: one sub-app per capability, errors turned into one-line messages."""

from __future__ import annotations

import signal
import sys

import typer
from rich.console import Console

from toolshift.errors import ToolshiftError

app = typer.Typer(
    name="toolshift",
    help="Tool-using LLM agents in tool ecosystems that keep changing.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True)


def _attach() -> None:
    """Attach each capability's sub-app. Each sub-app module imports only light dependencies."""
    from toolshift import demo
    from toolshift.agents import cli as agents_cli
    from toolshift.bench.cli import app as bench_app
    from toolshift.evolve.cli import app as evolve_app
    from toolshift.flows.cli import app as flows_app
    from toolshift.gateway.cli import app as gateway_app
    from toolshift.report import cli as report_cli
    from toolshift.traces.cli import app as traces_app
    from toolshift.world.cli import app as world_app

    app.add_typer(world_app, name="world", help="Stateful tool worlds: compile, serve over MCP, call.")
    app.add_typer(
        traces_app, name="traces", help="Episodes: convert published runs, turn anatomy, split by task."
    )
    app.add_typer(
        flows_app, name="flows", help="Flows: learn an agent's lookups, decide them ahead, replay savings."
    )
    app.add_typer(agents_cli.app, name="agents", help="Agent models, user simulators, scripted policies.")
    app.add_typer(
        bench_app, name="bench", help="Ecosystem benchmark: domains, dependency graphs, validated tasks."
    )
    app.add_typer(
        evolve_app, name="evolve", help="Task evolution (TURTLE): tasks tuned to the solver's frontier."
    )
    app.add_typer(
        gateway_app, name="gateway", help="An MCP gateway in front of MCP servers: record, version, flows."
    )
    app.add_typer(report_cli.app, name="report", help="Results pages drawn from several capabilities.")
    app.command("view", help="A local trajectory viewer over episode files and τ²-bench results.")(
        report_cli.view
    )
    app.command("run", help="Run tasks × trials of an agent against a world (resumable).")(agents_cli.run)
    app.command("demo", help="The main job on embedded defaults: no API key, no network.")(demo.run)


_attach()


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    """Entry point: run the app, print a ToolshiftError as one line and exit with its code.

    SIGTERM ends the command the way Ctrl-C does, by an exception, so every `finally` and context manager
    runs: temp files of atomic writes are removed and a local Ray cluster is stopped.
    """
    signal.signal(signal.SIGTERM, _terminated)
    try:
        code = app(standalone_mode=False)
    except ToolshiftError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:  # usage errors (typer vendors click; its errors derive from this)
        show = getattr(exc, "show", None)
        if show is None:
            raise
        show()
        sys.exit(getattr(exc, "exit_code", 2))
    # Outside standalone mode typer returns the code of an exit it caught: Ctrl-C (KeyboardInterrupt) is 130.
    if isinstance(code, int) and not isinstance(code, bool) and code:
        if code == 130:
            err_console.print("interrupted")
        sys.exit(code)
