"""The `toolshift` command: one sub-app per capability, errors turned into one-line messages."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
from typing import Annotated

import typer
from rich.markup import escape

from toolshift import terminal
from toolshift.errors import ToolshiftError


def _flags_show_no_type() -> None:
    """Help names an option's value type (`<int>`, `<path>`), never `<bool>` beside a flag, which takes no
    value (typer 0.29 prints one for every flag). Other typer versions, without the hook, are left as they are."""
    import typer.core

    option = getattr(typer.core, "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if option is None or shown is None or getattr(shown, "_toolshift", False):
        return

    def display_type_rich(self: typer.core.TyperOption, ctx: object) -> str | None:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich._toolshift = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _help_fits_the_terminal() -> None:
    """Help as wide as the terminal (rich measures it), or when piped as wide as `terminal.piped_width` says
    (typer's own help console is 80 columns there); a word longer than its column folds onto the next line
    instead of being cut with an ellipsis ("TOOLSHIFT_BASE_UR…" in an 80-column terminal, D322)."""
    import typer.rich_utils as rich_utils

    if rich_utils.MAX_WIDTH is None:
        rich_utils.MAX_WIDTH = terminal.piped_width(sys.stdout)
    make = rich_utils._make_rich_text
    if getattr(make, "_toolshift", False):
        return

    def make_folding(*args: object, **kwargs: object) -> object:
        text = make(*args, **kwargs)  # type: ignore[arg-type]
        if hasattr(text, "overflow"):
            text.overflow = "fold"
        return text

    make_folding._toolshift = True  # type: ignore[attr-defined]
    rich_utils._make_rich_text = make_folding  # type: ignore[assignment]


def _help_width() -> int:
    """The columns help may use: the terminal's, or piped `terminal.piped_width`'s (click wraps usage at 80)."""
    import shutil

    return terminal.piped_width(sys.stdout) or shutil.get_terminal_size().columns


_flags_show_no_type()
_app = typer.Typer(
    context_settings={"max_content_width": _help_width(), "terminal_width": _help_width()},
    name="toolshift",
    help="Tool-using LLM agents in tool ecosystems that keep changing.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
err_console = terminal.console(stderr=True)

# Each capability's sub-app (module, attribute, help) and the top-level commands. They are imported only
# when named: importing every capability costs ≈ 2.4 s of CPU, which `toolshift view` paid before its
# first paint (D110).
SUBAPPS: dict[str, tuple[str, str, str]] = {
    "world": ("toolshift.world.cli", "app", "Stateful tool worlds: compile, serve over MCP, call."),
    "traces": (
        "toolshift.traces.cli",
        "app",
        "Episodes: convert published runs, turn anatomy, split by task.",
    ),
    "flows": (
        "toolshift.flows.cli",
        "app",
        "Flows: learn an agent's lookups, decide them ahead, replay savings.",
    ),
    "agents": ("toolshift.agents.cli", "app", "Agent models, user simulators, scripted policies."),
    "bench": (
        "toolshift.bench.cli",
        "app",
        "Ecosystem benchmark: domains, dependency graphs, validated tasks.",
    ),
    "evolve": (
        "toolshift.evolve.cli",
        "app",
        "Task evolution (TURTLE): tasks tuned to the solver's frontier.",
    ),
    "gateway": (
        "toolshift.gateway.cli",
        "app",
        "An MCP gateway in front of MCP servers: record, version, flows.",
    ),
    "steward": (
        "toolshift.steward.cli",
        "app",
        "Steward: skill libraries kept in step with the catalog, and supply.",
    ),
    "skills": (
        "toolshift.skillmethods.cli",
        "app",
        "Steward against the skill methods seed 000 compares it with (EvoSkill, AutoSkill, Trace2Skill, SkillOpt).",
    ),
    "drift": (
        "toolshift.drift.cli",
        "app",
        "Real drift: real MCP servers' published versions as an evolving ecosystem, Steward kept in step.",
    ),
    "report": (
        "toolshift.report.cli",
        "app",
        "Results pages drawn from several capabilities.\n\n"
        "{toolshift} report runs/ --out report.html: one self-contained HTML page of every result under runs/ "
        "(the html command, which a path as the first word runs).",
    ),
    "model": (
        "toolshift.modelserver.cli",
        "app",
        "A model served over the APIs harnesses speak (chat completions, Responses, Messages).",
    ),
    "harness": (
        "toolshift.harness.cli",
        "app",
        "Agents that own their loop: harness CLIs from spec files, Python agents, agent SDKs.",
    ),
    "frameworks": (
        "toolshift.frameworks.cli",
        "app",
        "toolshift inside inspect_ai and verifiers: the comparison behind docs/results/frameworks.md.",
    ),
}
COMMANDS: dict[str, tuple[str, str, str]] = {
    "view": (
        "toolshift.report.cli",
        "view",
        "A local trajectory viewer over episode files and τ²-bench results.",
    ),
    "run": ("toolshift.agents.cli", "run", "Run tasks × trials of an agent against a world (resumable)."),
    "loop": (
        "toolshift.loop.cli",
        "loop_cmd",
        "The loop: an agent behind the gateway learning from its own recordings, version by version.",
    ),
    "demo": ("toolshift.demo", "run", "The main job on embedded defaults: no API key, no network."),
}
_attached: set[str] = set()


def _help(text: str) -> str:
    """A command's help with `{toolshift}` spelt as a new shell types it (`terminal.toolshift_command`)."""
    return text.replace("{toolshift}", terminal.toolshift_command()) if "{toolshift}" in text else text


def _print_version(value: bool) -> None:
    """`--version`: print the package's version and stop before any sub-app is imported."""
    if value:
        from toolshift import __version__

        print(f"toolshift {__version__}")
        raise typer.Exit()


@_app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Tool-using LLM agents in tool ecosystems that keep changing."""


def _listing() -> typer.Typer:
    """The app as its own help lists it: every sub-app and command by name and help, none of them imported.

    `toolshift --help` (and a bare `toolshift`) need only the names and one line each; importing every
    capability for them took 2–4 s (the `mcp` SDK alone ≈ 1 s, D322). An empty sub-app stands for each group
    and a command without options for each command: only the listing ever sees them, since a first word that
    names one attaches the real one (`main`)."""
    for name, (_, _, help_text) in {**COMMANDS, **SUBAPPS}.items():
        if name in _attached:
            continue
        if name in SUBAPPS:
            _app.add_typer(typer.Typer(help=_help(help_text)), name=name, help=_help(help_text))
        else:
            _app.command(name, help=_help(help_text))(lambda: None)
        _attached.add(name)
    return _app


def _attach(names: list[str] | None = None) -> typer.Typer:
    """Attach the named sub-apps and commands (all of them by default), each once, and return the app."""
    for name in names if names is not None else [*SUBAPPS, *COMMANDS]:
        if name in _attached:
            continue
        if name in SUBAPPS:
            module, attr, help_text = SUBAPPS[name]
            _app.add_typer(getattr(importlib.import_module(module), attr), name=name, help=_help(help_text))
        else:
            module, attr, help_text = COMMANDS[name]
            _app.command(name, help=_help(help_text))(getattr(importlib.import_module(module), attr))
        _attached.add(name)
    return _app


def __getattr__(name: str) -> typer.Typer:
    """`toolshift.cli.app` is the whole app (tests and embedders invoke it with every command)."""
    if name == "app":
        return _attach()
    raise AttributeError(name)


def _command_named(argv: list[str]) -> str | None:
    """The sub-app or command the arguments name (the first word), or None for `--help` and the like."""
    for word in argv:
        if word.startswith("-"):
            return None
        return word if word in SUBAPPS or word in COMMANDS else None
    return None


class Terminated(SystemExit):
    """SIGTERM, raised where the main thread is, so every `finally` and context manager on the way out runs."""


def _terminated(signum: int, frame: object) -> None:
    # Raised wherever the main thread is: inside an event loop that can be mid-way through a cancel scope, and
    # the loop's shutdown then logs the tasks it had to abandon. The one line `main` prints is the report of
    # it, so the asyncio logger is quietened from here on.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    raise Terminated(128 + signum)


def _stopped_by(exc: BaseException, depth: int = 0) -> BaseException | None:
    """The Terminated or KeyboardInterrupt an exception is, or that an exception group (anyio's task groups
    wrap what ends their tasks) holds, or that an error raised while unwinding from it was caused by (a cancel
    scope left in the wrong task, say), else None."""
    if depth > 50:
        return None
    if isinstance(exc, Terminated | KeyboardInterrupt):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _stopped_by(inner, depth + 1)) is not None:
                return found
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None and (found := _stopped_by(linked, depth + 1)) is not None:
            return found
    return None


def _leave(message: str, code: int) -> None:
    """One line, then exit now: a worker thread still blocked (on stdin, say) must not keep the process alive."""
    err_console.print(message)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    """Entry point: run the app, print a ToolshiftError as one line and exit with its code.

    SIGTERM ends the command the way Ctrl-C does, by an exception, so every `finally` and context manager
    runs: temp files of atomic writes are removed, a local Ray cluster is stopped, the gateway's open
    sessions are flushed. Either ends with one line (`terminated` / `interrupted`), wrapped in an exception
    group or not, and the process exits even if a worker thread is still blocked reading.
    """
    signal.signal(signal.SIGTERM, _terminated)
    _help_fits_the_terminal()
    try:
        named = _command_named(sys.argv[1:])
        app = _attach([named]) if named else _listing()
        # Usage lines and examples in help name the command as a new shell types it (`.venv/bin/toolshift` where
        # the PATH does not find it), so what help prints runs as printed (D322).
        code = app(prog_name=terminal.toolshift_command(), standalone_mode=False)
    except ToolshiftError as exc:
        # The message is text, not markup: rich would eat `[bfcl]` in a path or a `pip install` hint.
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except Terminated as exc:
        _leave("terminated", int(exc.code or 143))
    except KeyboardInterrupt:
        _leave("interrupted", 130)
    except BaseExceptionGroup as group:
        stopped = _stopped_by(group)
        if stopped is None:
            raise
        if isinstance(stopped, Terminated):
            _leave("terminated", int(stopped.code or 143))
        _leave("interrupted", 130)
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
