"""Benchmark: replay throughput (episodes/s) on τ-bench airline's and WorkBench's real episodes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import Catalog, timelines
from toolshift.report.benchlog import record

DATA = Path(os.environ.get("TOOLSHIFT_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "data"
ROUNDS = 10
NOTE = "Single process; every lookup weighed is logged."


def _rate(tl, flow, kind: str) -> float:
    decider = Decider(flow, kind, 0.1)
    started = time.perf_counter()
    for _ in range(ROUNDS):
        replay(tl, decider, weigh_all=True)
    return ROUNDS * len(tl) / (time.perf_counter() - started)


def main() -> None:
    if not DATA.is_dir():
        sys.exit(f"real data not found at {DATA}")
    from toolshift.traces.taubench import convert_taubench_v1, taubench_domain
    from toolshift.traces.workbench import convert_workbench

    conv = convert_taubench_v1(DATA / "tau-bench" / "gpt-4o-airline.trials-0-1.json")
    catalog = Catalog.of(conv.catalogs[taubench_domain("airline")])
    air = timelines(conv.episodes, catalog)
    air_flow = learn_flow(air, catalog, learn_from_all=True)
    wb = convert_workbench(DATA / "workbench" / "results")
    domain = "multi_domain"
    wb_catalog = Catalog.of(wb.catalogs[domain])
    multi = timelines([e for e in wb.episodes if e.domain == domain], wb_catalog)
    multi_flow = learn_flow(multi, wb_catalog, learn_from_all=True)
    rows = []
    for name, tl, flow in (("τ-bench airline", air, air_flow), ("WorkBench multi-domain", multi, multi_flow)):
        for kind in ("reach", "next-step"):
            rows.append((f"{name}, {kind}, θ = 0.1 (episodes/s)", f"{_rate(tl, flow, kind):,.0f}", ">= 50"))
    record("bench_flows_replay", rows, note=NOTE + f" Each set replayed {ROUNDS} times.")


if __name__ == "__main__":
    main()
