"""`toolshift report RUNS... --out report.html`: find the results, draw every section they support, write one file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolshift.report.inputs import Inputs, describe_kinds, discover
from toolshift.report.page import page
from toolshift.report.sections import Context, Options, render_all
from toolshift.traces.store import write_text_atomic


@dataclass
class Report:
    path: Path
    inputs: Inputs
    sections: list[str]
    """The ids of the sections written, in page order."""
    bytes: int


def build_report(
    paths: Sequence[Path | str],
    out: Path,
    *,
    options: Options | None = None,
    cache: Path | None = None,
    progress: Callable[[str], None] | None = None,
    title: str = "toolshift report",
) -> Report:
    """Write the report atomically and say what went into it. Bad files are named in it, never fatal."""
    say = progress or (lambda _m: None)
    inputs = discover(paths, cache=cache, progress=lambda p: say(f"read {p}"))
    ctx = Context(inputs, options or Options(), progress=lambda m: say(f"section {m}"))
    sections = render_all(ctx)
    subtitle = f"{', '.join(str(p) for p in paths)}: {describe_kinds(inputs.files)}"
    bad = inputs.bad
    banner = ""
    if bad:
        banner = (f'<div class="problems banner"><b class="bad">{len(bad)} file(s) with problems</b>, named in '
                  '<a href="#bad-files">Inputs</a>; everything else is shown.</div>')  # fmt: skip
    text = page(title, subtitle, sections, banner)
    write_text_atomic(Path(out), text)
    return Report(Path(out), inputs, [s.id for s in sections], len(text.encode()))
