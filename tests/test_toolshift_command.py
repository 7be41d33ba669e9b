"""The top-level CLI: usage errors and bad input end in a short message and exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys

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
    from pathlib import Path

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
