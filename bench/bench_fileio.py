"""Benchmark: the bounded JSON reader (`toolshift.fileio.loads_json`) beside `json.loads`.

On the real published runs in ../shared/data: the τ-bench airline file read whole (1.8 MB, one document)
and its episodes as JSONL lines (one line each, as the episode store reads them); the two readers
interleaved on the same text (bench/paired.py), p50/p50 and p90/p90.
`loads_json` parses with pydantic-core (depth bounded in Rust); the depth scan (`json_depth`) runs only
when that parser refuses a text, before the standard library's parser says why.

Run: `.venv/bin/python bench/bench_fileio.py [SHARED_DATA]`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from paired import interleave, measure, percentile
from toolshift.fileio import json_depth, loads_json, read_text
from toolshift.report.benchlog import record
from toolshift.traces.taubench import convert_taubench_v1

DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
REPEATS = 30


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("shared", nargs="?", type=Path, default=DEFAULT_SHARED)
    args = parser.parse_args()
    path = args.shared / "tau-bench" / "gpt-4o-airline.trials-0-1.json"
    text = read_text(path)
    lines = [e.model_dump_json(exclude_none=True) for e in convert_taubench_v1(path).episodes]
    reps = range(REPEATS)
    doc = interleave(
        lambda _: json.loads(text), lambda _: loads_json(text), reps, names=("json.loads", "loads_json")
    )
    scan = [sm.wall for sm in measure(lambda _: json_depth(text), reps)]
    per_line = interleave(lambda _: [json.loads(line) for line in lines], lambda _: [loads_json(line) for line in lines],
                          reps, names=("json.loads", "loads_json"))  # fmt: skip
    record(
        "fileio: bounded JSON reading beside json.loads, interleaved",
        [
            ("document", f"τ-bench airline, {len(text) / 2**20:.1f} MiB, depth {json_depth(text)}", ""),
            *doc.rows("whole document"),
            (
                "depth scan alone (the fallback path), whole document, p50 ms",
                f"{1000 * percentile(scan, 0.5):.1f}",
                "",
            ),
            *per_line.rows(f"{len(lines)} episode lines"),
        ],
        note=f"Wall clock, {REPEATS} pairs each; loads_json is pydantic-core with its depth bound. Whole document: "
        f"{doc.note()} Episode lines: {per_line.note()}",
    )


if __name__ == "__main__":
    main()
