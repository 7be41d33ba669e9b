"""Benchmark: `toolshift --help` wall time, listing the commands without importing them (D322) against importing
every capability first (what it did before), interleaved A, B, A, B in fresh processes.

A: `python -m toolshift --help` with every sub-app attached before the help is printed (the old way: each
capability's module imported, the `mcp` SDK among them). B: `.venv/bin/toolshift --help` as a user types it
(the listing only). Each sample is one new process, timed from start to exit. Target: B's p50 ≤ 0.5 s.
Run when the machine is quiet: `.venv/bin/python bench/bench_cli_help.py [--rounds 15]`.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

from paired import Sample, interleave
from toolshift.report.benchlog import record

SCRIPT = Path(sys.executable).parent / "toolshift"
EVERYTHING = (
    "import sys; sys.argv = ['toolshift', '--help']; from toolshift import cli; cli._attach(); cli.main()"
)


def _run(argv: list[str]) -> Sample:
    """One new process: its wall time, and its CPU time (user + system, which a loaded machine inflates less)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "steward" not in done.stdout:
        raise SystemExit(f"{argv} failed: {done.stderr[-400:]}")
    return Sample(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    _run([str(SCRIPT), "--help"])  # warm the page cache for both
    run = interleave(
        lambda _: _run([sys.executable, "-c", EVERYTHING]),
        lambda _: _run([str(SCRIPT), "--help"]),
        [None],
        rounds=args.rounds,
        names=("every capability imported", "listing only"),
    )
    rows = run.rows("toolshift --help, one new process", clocks=("wall", "cpu"), unit="ms")
    rows.append(("listing only, wall p50 (target ≤ 500 ms)", f"{1000 * run.p('b', 0.5):.0f} ms",
                 "≤ 500 ms"))  # fmt: skip
    record("toolshift --help", rows, note=run.note())


if __name__ == "__main__":
    main()
