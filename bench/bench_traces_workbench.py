"""Benchmark: convert every WorkBench run in ../shared/data/workbench/results, write the episode files, load them back.

Run: `.venv/bin/python bench/bench_traces_workbench.py [SHARED_DATA]`. Target: convert + write + load under 10 s.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from toolshift.report.benchlog import record
from toolshift.traces.store import read_episodes
from toolshift.traces.workbench import convert_workbench

DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def main(shared: Path = DEFAULT_SHARED) -> None:
    results = shared / "workbench" / "results"
    t0 = time.perf_counter()
    conv = convert_workbench(results)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        files = [p for p in conv.write(Path(tmp)) if p.name.endswith(".episodes.jsonl")]
        t2 = time.perf_counter()
        size = sum(p.stat().st_size for p in files)
        loaded = sum(1 for _ in read_episodes(files))
        t3 = time.perf_counter()
    assert loaded == conv.kept
    n_files = len(list(results.glob("*/*.csv")))
    record(
        "traces: convert and load all WorkBench runs",
        [
            ("CSV files / rows", f"{n_files} / {conv.records}", ""),
            ("episodes kept", str(conv.kept), ""),
            ("convert (parse CSV + Python reprs)", f"{t1 - t0:.2f} s", ""),
            ("write JSONL + catalogs", f"{t2 - t1:.2f} s ({size / 1e6:.1f} MB)", ""),
            ("load (validate every episode)", f"{t3 - t2:.2f} s ({loaded / (t3 - t2):,.0f} episodes/s)", ""),
            ("total", f"{t3 - t0:.2f} s", "< 10 s"),
        ],
        note="Wall-clock figures.",
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SHARED)
