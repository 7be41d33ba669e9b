"""Benchmark: `toolshift demo` end to end (all three systems), wall and CPU time, in a new process per run.

The venv is made already (the two set-up commands' one-time install is not the demo). Each run writes into a fresh
temporary folder, from a working folder outside the repository. Target: ≤ 180 s wall on this machine.
Run when the machine is quiet: `.venv/bin/python bench/bench_demo.py [--runs 2]`.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paired import Sample, load_average, measure, percentile
from toolshift.report.benchlog import record

SCRIPT = Path(sys.executable).parent / "toolshift"


def _demo(_: object) -> Sample:
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([str(SCRIPT), "demo", "--out", str(Path(tmp) / "demo-out")], cwd=tmp,
                              capture_output=True, text=True, check=False, timeout=1800)  # fmt: skip
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "demo finished" not in done.stdout:
        raise SystemExit(f"the demo failed: {done.stderr[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Sample(wall, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    load = load_average()
    samples = measure(_demo, [None], rounds=args.runs)
    walls, cpus = [s.wall for s in samples], [s.cpu for s in samples]
    rows = [
        ("toolshift demo, wall p50 / max (target ≤ 180 s)", f"{percentile(walls, 0.5):.0f} / {max(walls):.0f} s",
         "≤ 180 s"),
        ("toolshift demo, CPU (user + system) p50", f"{percentile(cpus, 0.5):.0f} s", ""),
        ("runs; load average (1 min) at start → end", f"{len(samples)}; {load:.2f} → {load_average():.2f}", ""),
    ]  # fmt: skip
    record("toolshift demo (all three systems)", rows, note="One new process per run, into a fresh folder.")


if __name__ == "__main__":
    main()
