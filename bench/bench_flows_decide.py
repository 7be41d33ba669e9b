"""Benchmark: per-call decision latency of the incremental decider, fed τ-bench airline's real calls live.

Timed for the format-2 flow and for the format-3 flow with walks (walk ranks 3, as cross-validation chose)."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.timeline import Catalog, TurnEvent, timelines
from toolshift.report.benchlog import record

DATA = Path(os.environ.get("TOOLSHIFT_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "data"
NOTE = "Single process."


def main() -> None:
    if not DATA.is_dir():
        sys.exit(f"real data not found at {DATA}")
    from toolshift.traces.taubench import convert_taubench_v1, taubench_domain

    conv = convert_taubench_v1(DATA / "tau-bench" / "gpt-4o-airline.trials-0-1.json")
    catalog = Catalog.of(conv.catalogs[taubench_domain("airline")])
    tl = timelines(conv.episodes, catalog)
    for walk_ranks in (0, 3):
        time_flow(tl, catalog, walk_ranks)


def time_flow(tl, catalog, walk_ranks: int) -> None:
    flow = learn_flow(tl, catalog, learn_from_all=True, walk_ranks=walk_ranks)
    started = time.perf_counter()
    decider = Decider(flow, "reach", 0.1, catalog)
    compile_ms = (time.perf_counter() - started) * 1000
    latencies: list[float] = []
    proposed = 0
    for _ in range(5):
        for t in tl:
            session = decider.session()
            for event in t.events:
                if not isinstance(event, TurnEvent):
                    continue
                for i in t.turns[event.turn]:
                    c = t.calls[i]
                    begin = time.perf_counter_ns()
                    lookups = session.after_call(c.tool, c.arguments, c.output_text)
                    for lookup in lookups:
                        session.note_made(lookup)
                    latencies.append((time.perf_counter_ns() - begin) / 1000)
                    proposed += len(lookups)
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    record(
        "bench_flows_decide" if walk_ranks == 0 else "bench_flows_decide (format 3, walks)",
        [
            ("flow format", str(flow.format), ""),
            ("decisions timed", f"{len(latencies):,}", ""),
            ("lookups proposed", f"{proposed:,}", ""),
            ("compile the flow (ms)", f"{compile_ms:.2f}", ""),
            ("latency p50 (µs), decode the result + decide", f"{p(0.5):.1f}", "< 1000"),
            ("latency p99 (µs)", f"{p(0.99):.1f}", ""),
            ("latency mean (µs)", f"{statistics.fmean(latencies):.1f}", ""),
        ],
        note=NOTE
        + f" Each call: JSON-decode its result, index its paths, weigh the site's lookups (reach, θ = 0.1; walk ranks {walk_ranks}).",
    )


if __name__ == "__main__":
    main()
