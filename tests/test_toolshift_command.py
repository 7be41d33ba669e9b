"""The top-level CLI: usage errors and bad input end in a short message and exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _toolshift(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, timeout=900
    )


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--world", "clinic"),  # missing --tasks
        ("world", "tools"),  # missing DOMAIN
        ("bench", "evolve", "x", "--versions", "abc"),  # not an integer
        ("no-such-command",),
    ],
)
def test_usage_errors_exit_2_without_a_traceback(args):
    done = _toolshift(*args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "Usage" in done.stderr or "Error" in done.stderr


def test_help_exits_0():
    done = _toolshift("--help")
    assert done.returncode == 0 and "world" in done.stdout


def test_bad_input_is_one_line_naming_the_thing(tmp_path):
    spec = tmp_path / "broken.yaml"
    spec.write_text("name: [unclosed\n")
    done = _toolshift("world", "tools", str(spec))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "broken.yaml" in done.stderr


def test_version_prints_the_package_version():
    import tomllib

    from toolshift import __version__

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert __version__ == pyproject["project"]["version"]
    done = _toolshift("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"toolshift {__version__}"


def test_error_messages_keep_square_brackets(tmp_path):
    """Rich must not read `[bfcl]` in a message (a path, a `pip install 'toolshift[bfcl]'` hint) as markup."""
    done = _toolshift("world", "tools", str(tmp_path / "no[bfcl].yaml"))
    assert done.returncode == 2
    assert "no[bfcl].yaml" in done.stderr


def test_tables_keep_extras_in_square_brackets():
    done = _toolshift("agents", "models")
    assert done.returncode == 0, done.stderr
    assert "toolshift[anthropic]" in done.stdout


def _commands(group, path=()):
    for name, sub in sorted(group.commands.items()):
        if getattr(sub, "commands", None):
            yield from _commands(sub, (*path, name))
        else:
            yield (*path, name)


def test_no_help_shows_a_type_beside_a_flag():
    """Every command's help: a flag takes no value, so no `<bool>`; an option still names its type."""
    import typer
    from typer.testing import CliRunner

    from toolshift.cli import app

    runner = CliRunner()
    commands = [(), *_commands(typer.main.get_command(app))]
    assert ("world", "call") in commands and ("steward", "show") in commands and len(commands) > 40
    for path in commands:
        shown = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).output
        assert "<bool>" not in shown, (path, shown)
    seed = runner.invoke(app, ["world", "call", "--help"], env={"COLUMNS": "200"}).output
    assert "<int>" in seed and "--json" in seed


@pytest.mark.parametrize(
    "command",
    [
        ("agents", "results"),
        ("world", "domains"),
        ("world", "tools"),
        ("world", "call"),
        ("bench", "stats"),
        ("steward", "show"),
        ("traces", "stats"),
    ],
)
def test_json_is_one_flag_everywhere(command):
    """D159: `--json` is a flag printing one JSON document on stdout; files are `--json-out PATH`."""
    from typer.testing import CliRunner

    from toolshift.cli import app

    shown = " ".join(CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output.split())
    assert "--json " in shown and "--json <path>" not in shown, shown
    for writes in (("flows", "replay"), ("bench", "eval")):
        text = CliRunner().invoke(app, [*writes, "--help"], env={"COLUMNS": "200"}).output
        assert "--json-out" in text and "--json " not in text.replace("--json-out", "")


LISTING = """
import sys
sys.argv = ["toolshift", *sys.argv[1:]]
from toolshift import cli
try:
    cli.main()
except SystemExit:
    pass
mine = sorted(m for m in sys.modules if m.startswith("toolshift") or m == "mcp" or m.startswith("mcp."))
print("MODULES", " ".join(mine))
"""


@pytest.mark.parametrize("args", [("--help",), ()])
def test_the_root_help_lists_every_command_without_importing_one(args):
    """D322: `toolshift --help` (and a bare `toolshift`) import no capability (the `mcp` SDK cost ≈ 1 s of it)."""
    done = subprocess.run([sys.executable, "-c", LISTING, *args], capture_output=True, text=True, timeout=300)
    modules = done.stdout.split("MODULES")[-1].split()
    assert set(modules) <= {"toolshift", "toolshift.cli", "toolshift.terminal", "toolshift.errors"}, modules
    from toolshift.cli import COMMANDS, SUBAPPS

    for name, (_, _, help_text) in {**COMMANDS, **SUBAPPS}.items():
        assert name in done.stdout and help_text.split("\n")[0][:40] in " ".join(done.stdout.split())


def test_help_takes_the_width_it_is_given_and_folds_what_does_not_fit():
    """Piped, help is as wide as $COLUMNS (160 without it), never typer's 80; at 80 columns a long word folds
    onto the next line, never cut with an ellipsis (D322)."""
    wide = subprocess.run([sys.executable, "-m", "toolshift", "run", "--help"], capture_output=True, text=True,
                          timeout=300, env={**_env(), "COLUMNS": "200"})  # fmt: skip
    assert max(len(line) for line in wide.stdout.splitlines()) == 200
    default = subprocess.run([sys.executable, "-m", "toolshift", "run", "--help"], capture_output=True,
                             text=True, timeout=300, env=_env())  # fmt: skip
    assert max(len(line) for line in default.stdout.splitlines()) == 160
    narrow = subprocess.run([sys.executable, "-m", "toolshift", "run", "--help"], capture_output=True,
                            text=True, timeout=300, env={**_env(), "COLUMNS": "80"})  # fmt: skip
    assert "…" not in narrow.stdout and "TOOLSHIFT_BASE_UR" in narrow.stdout
    text = "".join(line.strip("│ ") for line in narrow.stdout.splitlines())
    assert "TOOLSHIFT_BASE_URL" in text.replace(" ", "")


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERMINAL_WIDTH")}


def test_report_help_shows_the_documented_command_as_a_new_shell_types_it(tmp_path):
    """Help's examples and usage name `toolshift` as this shell would run it: the script's path where the PATH
    does not find it (D322)."""
    script = Path(sys.executable).parent / "toolshift"
    done = subprocess.run([str(script), "report", "--help"], capture_output=True, text=True, timeout=300,
                          env={**_env(), "PATH": "/usr/bin:/bin", "COLUMNS": "250"}, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{script} report runs/ --out report.html" in done.stdout
    assert f"Usage: {script} report [OPTIONS] RUNS... --out report.html | COMMAND" in done.stdout  # one line
    on_path = subprocess.run(["toolshift", "report", "--help"], capture_output=True, text=True, timeout=300,
                             env={**_env(), "PATH": f"{script.parent}:/usr/bin:/bin", "COLUMNS": "250"})  # fmt: skip
    assert " toolshift report runs/ --out report.html" in on_path.stdout


@pytest.mark.parametrize("command", [("view",), ("report",), ("report", "html")])
def test_view_and_report_errors_are_one_line_and_nothing_else(command, tmp_path):
    done = _toolshift(*command, str(tmp_path / "nowhere"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: {tmp_path / 'nowhere'}: no such file or folder\n"
