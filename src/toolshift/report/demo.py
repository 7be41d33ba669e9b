"""The last step of `toolshift demo`: the demo's runs in one HTML report, and where it is."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from rich.console import Console

REPORT = "report.html"


def _published_runs(out: Path, console: Console) -> list[Path]:
    """τ-bench's published airline runs (the flows step's data) converted beside the demo's own, when present."""
    from toolshift.flows.results import AIRLINE_FILE, default_data_dir
    from toolshift.traces.taubench import convert_taubench_v1

    source = default_data_dir() / AIRLINE_FILE
    if not source.is_file():
        console.print(f"({source} not found: the report leaves τ-bench's published runs out)")
        return []
    target = out / "tau-bench"
    shutil.rmtree(target, ignore_errors=True)
    convert_taubench_v1(source).write(target)
    return [target]


def run(console: Console, out: Path) -> Path:
    """Write `out/report.html` from the runs the demo kept in `out`, the τ²-bench example and τ-bench's runs."""
    from toolshift.report.build import build_report
    from toolshift.report.sections import Options
    from toolshift.traces.demo import EXAMPLE_RUN

    out.mkdir(parents=True, exist_ok=True)
    tau2 = out / "tau2" / EXAMPLE_RUN.name
    tau2.parent.mkdir(exist_ok=True)
    shutil.copyfile(EXAMPLE_RUN, tau2)
    kept = [out / name for name in ("ecosystem", "steward", "evolve", "gateway")]
    inputs = [p for p in kept if p.exists()] + [tau2.parent] + _published_runs(out, console)
    report = build_report(inputs, out / REPORT, options=Options(resamples=500), title="toolshift demo")
    console.print(f"sections: {', '.join(report.sections)} ({report.bytes / 1024:.0f} KiB, self-contained)")
    console.print(f"[bold]report: {report.path.resolve()}[/]", soft_wrap=True)
    console.print(
        f"browse the episodes (press ? in the page for its keys): {view_command(inputs)}", soft_wrap=True
    )
    return report.path


def view_command(inputs: list[Path]) -> str:
    """The viewer over the demo's runs, as a new shell types it (the command and the paths as given)."""
    from toolshift.terminal import toolshift_command

    return f"{toolshift_command()} view {' '.join(shlex.quote(str(p)) for p in inputs)}"
