"""The README: its links resolve (files and the anchors of docs/usage.md) and its commands and flags exist."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_resolves():
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, target


def test_the_setup_and_one_screen_of_what_it_does_come_first():
    assert README.index("make demo") < README.index("## What it does") < README.index("## Docs")
    assert len(README.splitlines()) <= 120


def test_every_command_and_flag_in_what_it_does_exists():
    from toolshift.cli import app

    block = README.split("## What it does", 1)[1].split("```", 2)[1]
    group = typer.main.get_command(app)
    runner = CliRunner()
    checked = 0
    for line in block.splitlines():
        for part in line.split("#", 1)[0].split("&&"):
            words = part.split()
            if not words or words[0] != "toolshift":
                continue
            path, command = [], group
            for word in words[1:]:
                sub = getattr(command, "commands", {}).get(word)
                if sub is None:
                    break
                path.append(word)
                command = sub
            assert path, part
            if getattr(command, "commands", None) and "html" in command.commands:
                path.append("html")  # `toolshift report RUNS` is `toolshift report html RUNS`
            shown = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "250"})
            assert shown.exit_code == 0, (part, shown.output)
            for flag in re.findall(r"(--[a-z][a-z-]*)", part):
                assert flag in shown.output, (part, flag)
            checked += 1
    assert checked >= 8
