"""Benchmark: the bounded JSON reader (`toolshift.fileio.loads_json`) beside `json.loads`.

On the real published runs in ../shared/data: the τ-bench airline file read whole (1.8 MB, one document)
and its episodes as JSONL lines (one line each, as the episode store reads them). Median of repeats.
`loads_json` parses with pydantic-core (depth bounded in Rust); the depth scan (`json_depth`) runs only
when that parser refuses a text, before the standard library's parser says why.

Run: `.venv/bin/python bench/bench_fileio.py [SHARED_DATA]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from toolshift.fileio import json_depth, loads_json, read_text
from toolshift.report.benchlog import record
from toolshift.traces.taubench import convert_taubench_v1

DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
REPEATS = 15


def median_ms(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("shared", nargs="?", type=Path, default=DEFAULT_SHARED)
    args = parser.parse_args()
    path = args.shared / "tau-bench" / "gpt-4o-airline.trials-0-1.json"
    text = read_text(path)
    lines = [e.model_dump_json(exclude_none=True) for e in convert_taubench_v1(path).episodes]
    doc_plain = median_ms(lambda: json.loads(text))
    doc_scan = median_ms(lambda: json_depth(text))
    doc_bounded = median_ms(lambda: loads_json(text))
    lines_plain = median_ms(lambda: [json.loads(line) for line in lines])
    lines_bounded = median_ms(lambda: [loads_json(line) for line in lines])
    record(
        "fileio: bounded JSON reading beside json.loads",
        [
            ("document", f"τ-bench airline, {len(text) / 2**20:.1f} MiB, depth {json_depth(text)}", ""),
            ("json.loads, whole document", f"{doc_plain:.1f} ms", ""),
            ("loads_json (pydantic-core, bounded), whole document", f"{doc_bounded:.1f} ms", ""),
            ("depth scan alone (the fallback path), whole document", f"{doc_scan:.1f} ms", ""),
            ("ratio loads_json / json.loads, whole document", f"{doc_bounded / doc_plain:.2f}", ""),
            ("json.loads, 100 episode lines", f"{lines_plain:.1f} ms", ""),
            ("loads_json, 100 episode lines", f"{lines_bounded:.1f} ms", ""),
            ("ratio loads_json / json.loads, episode lines", f"{lines_bounded / lines_plain:.2f}", ""),
        ],
        note=f"Wall-clock medians of {REPEATS} repeats.",
    )


if __name__ == "__main__":
    main()
