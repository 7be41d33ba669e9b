"""Benchmark: stream-read throughput of the JSONL episode store, and constant memory on a large file.

Generates episode files from the τ-bench airline run (episodes copied with fresh ids) of a small and a
large size, measures reading speed without tracing, then the peak traced allocation (tracemalloc)
while streaming each file: the peak must not grow with the file.

Run: `.venv/bin/python bench/bench_traces_stream.py [--large-mb 1024] [--small-mb 32] [SHARED_DATA]`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

from toolshift.report.benchlog import record
from toolshift.traces.store import StoreHeader, iter_episodes
from toolshift.traces.taubench import convert_taubench_v1

DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def generate(path: Path, lines: list[str], target_bytes: int) -> int:
    """Write copies of `lines` (serialised episodes, id first) with unique ids until the file reaches target_bytes."""
    written = count = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write(StoreHeader(meta={"generated": "bench_traces_stream"}).model_dump_json() + "\n")
        while written < target_bytes:
            for line in lines:
                out = line.replace('"id":"', f'"id":"copy{count}/', 1)
                fh.write(out)
                written += len(out)
                count += 1
    return count


def read_all(path: Path) -> int:
    return sum(1 for _ in iter_episodes(path))


def traced_peak(path: Path) -> tuple[int, int]:
    tracemalloc.start()
    n = read_all(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return n, peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("shared", nargs="?", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--large-mb", type=int, default=1024)
    parser.add_argument("--small-mb", type=int, default=32)
    args = parser.parse_args()
    conv = convert_taubench_v1(args.shared / "tau-bench" / "gpt-4o-airline.trials-0-1.json")
    lines = [e.model_dump_json(exclude_none=True) + "\n" for e in conv.episodes]
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "small.episodes.jsonl", Path(tmp) / "large.episodes.jsonl"
        n_small = generate(small, lines, args.small_mb * 2**20)
        t0 = time.perf_counter()
        n_large = generate(large, lines, args.large_mb * 2**20)
        gen_s = time.perf_counter() - t0
        size = large.stat().st_size
        t0 = time.perf_counter()
        assert read_all(large) == n_large
        read_s = time.perf_counter() - t0
        _, peak_small = traced_peak(small)
        _, peak_large = traced_peak(large)
    record(
        "traces: stream-read the JSONL episode store",
        [
            ("large file", f"{size / 2**20:,.0f} MiB, {n_large:,} episodes (τ-bench airline copies)", ""),
            ("generate", f"{gen_s:.1f} s", ""),
            ("read + validate (no tracing)", f"{read_s:.1f} s", ""),
            ("throughput", f"{n_large / read_s:,.0f} episodes/s, {size / 2**20 / read_s:,.1f} MiB/s", ""),
            ("peak traced memory, small file", f"{peak_small / 2**20:.2f} MiB ({n_small:,} episodes)", ""),
            ("peak traced memory, large file", f"{peak_large / 2**20:.2f} MiB ({n_large:,} episodes)", ""),
            (
                "peak traced memory, large file − small file",
                f"{(peak_large - peak_small) / 2**20:+.2f} MiB",
                "≈ 0 (constant memory)",
            ),
        ],
        note="Wall-clock figures. Memory: tracemalloc peak while streaming the whole file.",
    )


if __name__ == "__main__":
    main()
