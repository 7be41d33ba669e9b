"""Benchmark: learn a flow from 10,000 episodes synthesised by resampling τ-bench airline's real episodes."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

from toolshift.flows.learn import learn_flow
from toolshift.flows.timeline import Catalog, timelines
from toolshift.report.benchlog import record

DATA = Path(os.environ.get("TOOLSHIFT_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "data"
N = 10_000
NOTE = "Single process."


def synthesise(n: int):
    """n episodes drawn with replacement from the 100 real ones, each with its own id and task id."""
    from toolshift.traces.taubench import convert_taubench_v1, taubench_domain

    conv = convert_taubench_v1(DATA / "tau-bench" / "gpt-4o-airline.trials-0-1.json")
    rng = random.Random(7)
    real = conv.episodes
    out = []
    for i in range(n):
        e = rng.choice(real)
        out.append(e.model_copy(update={"id": f"{e.id}~{i}", "task_id": f"{e.task_id}~{i % 500}"}))
    return out, Catalog.of(conv.catalogs[taubench_domain("airline")])


def main() -> None:
    if not DATA.is_dir():
        sys.exit(f"real data not found at {DATA}")
    episodes, catalog = synthesise(N)
    started = time.perf_counter()
    tl = timelines(episodes, catalog)
    parsed = time.perf_counter()
    flow = learn_flow(tl, catalog, learn_from_all=True)
    done = time.perf_counter()
    calls = sum(len(t.calls) for t in tl)
    record(
        "bench_flows_learn",
        [
            ("episodes", f"{len(tl):,}", ""),
            ("tool calls", f"{calls:,}", ""),
            ("timelines built (s)", f"{parsed - started:.1f}", ""),
            ("learn (s)", f"{done - parsed:.1f}", ""),
            ("total (s)", f"{done - started:.1f}", "< 60"),
            ("reads with a binding", str(sum(1 for t in flow.tools.values() if t.binding_chance() > 0)), ""),
        ],
        note=NOTE + " Episodes: τ-bench airline GPT-4o (100 real) resampled with replacement to 10,000.",
    )


if __name__ == "__main__":
    main()
