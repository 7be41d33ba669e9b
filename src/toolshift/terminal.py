"""The rich consoles every command prints through (the terminal's width, or a wide one when piped) and `--json`'s printer."""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

PIPED_WIDTH = 160

ProgressHook = Callable[[str, int | None], None]
"""A long run's report of progress to its command: (a label, the total it counts to or None), called once
per step; the command draws it as a rich bar. The run itself never imports rich for this."""


def piped_width(stream: object) -> int | None:
    """None (rich measures the terminal) on a terminal; else `$COLUMNS` when it is a number, else 160.

    Rich cuts output that is not a terminal to 80 columns, so `make demo > log` read "succe…" in a table.
    """
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr), as wide as `piped_width` says."""
    return Console(stderr=stderr, width=piped_width(sys.stderr if stderr else sys.stdout))


JSON_HELP = "Print the result as one JSON document on stdout, and nothing else there (D159)."
"""The one `--json` rule: a flag, never a path; a command that also keeps its JSON in a file says `--json-out`."""


def finite_or_null(value: Any) -> tuple[Any, int]:
    """`value` with every `NaN` or infinity made null, and how many were: what a command prints as JSON is
    strict JSON (a parser refuses `NaN`), and the count says something was not a number (D307)."""
    count = 0

    def walk(v: Any) -> Any:
        nonlocal count
        if isinstance(v, float) and not math.isfinite(v):
            count += 1
            return None
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value), count


def print_json(value: object) -> None:
    """`value` as indented strict JSON on stdout, not through rich (no highlighting, no wrapping at any width).
    A `NaN` or infinity is printed as null, and a note on stderr counts them (D307): never `NaN`, which
    strict JSON parsers refuse."""
    strict, nulls = finite_or_null(value)
    sys.stdout.write(json.dumps(strict, ensure_ascii=False, indent=2, default=str, allow_nan=False) + "\n")
    sys.stdout.flush()
    if nulls:
        sys.stderr.write(f"note: {nulls} value(s) that were not numbers (NaN, infinity) printed as null\n")


def toolshift_command() -> str:
    """How to type `toolshift` in a new shell: the bare name when the PATH finds this install's script, else the
    script's path (relative to the working folder when under it, as `.venv/bin/toolshift`). Help and the demo
    print commands with it, so what they print runs as printed (D322)."""
    script = Path(sys.executable).parent / "toolshift"
    found = shutil.which("toolshift")
    if found is not None and Path(found).resolve() == script.resolve():
        return "toolshift"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def progress_bar(on: Console, *, transient: bool = True) -> Any:
    """The bar every long command shows: description, bar, done of total, time elapsed (rich, imported here so
    that help never loads it)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=on, transient=transient,
    )  # fmt: skip


def progress_hook(bar: Any) -> ProgressHook:
    """A `ProgressHook` on a bar: `(label, total)` opens a job's line, `(label, None)` advances it by one."""
    jobs: dict[str, Any] = {}

    def update(label: str, total: int | None) -> None:
        if total is not None:
            jobs[label] = bar.add_task(label, total=total)
        elif label in jobs:
            bar.advance(jobs[label])

    return update
