"""Benchmark: the full benchmark build (all bench domains, >= 1,500 tasks) from scratch — time and peak memory.

Runs `toolshift bench build` in a child process (so its peak RSS is the build's alone) into a fresh
temporary directory, then reads the manifest. Usage: `python bench/bench_bench_build.py [--per-domain 40]`.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolshift.bench.build import load_manifest
from toolshift.report.benchlog import record

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-domain", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        out = Path(tmp) / "bench"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        cmd = [
            sys.executable, "-m", "toolshift", "bench", "build", "--out", str(out),
            "--seed", str(args.seed), "--per-domain", str(args.per_domain),
        ]  # fmt: skip
        started = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
            raise SystemExit(f"build failed with exit code {proc.returncode}")
        m = load_manifest(out)
        cpu = usage.ru_utime + usage.ru_stime
        peak_mib = usage.ru_maxrss / 1024
        size_mib = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20
    short = [e.name for e in m.domains if e.status != "ok"]
    record(
        "bench: full benchmark build (toolshift bench build)",
        [
            ("domains", str(len(m.domains)), ">= 42"),
            ("tools in the catalog", str(m.total_tools), "800–900"),
            ("validated tasks", str(m.total_tasks), ">= 1,500 (>= 10 per domain)"),
            ("train / test", f"{m.train} / {m.test}", "75 / 25"),
            ("domains short of target", str(len(short)), "0"),
            ("wall time", f"{wall:.1f} s", "< 600 s on 2 cores"),
            ("CPU time (user+sys)", f"{cpu:.1f} s", ""),
            ("peak RSS", f"{peak_mib:.0f} MiB", ""),
            ("build size on disk", f"{size_mib:.1f} MiB", ""),
        ],
        note=(
            f"`toolshift bench build --out DIR --seed {args.seed} --per-domain {args.per_domain}` from scratch, "
            "single process (synthesis, independent replay of every task, writes). Wall time is an upper bound on a "
            "loaded machine (see the load average); CPU time is the build's own work."
        ),
    )


if __name__ == "__main__":
    main()
