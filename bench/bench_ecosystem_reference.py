"""Reference paths for every task × version of an evolved build: DP time (target < 60 s) and replay time."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from toolshift.bench.ecosystem.paths import compute_references, usable_for
from toolshift.bench.ecosystem.store import domain_tasks, load_ecosystem, load_history
from toolshift.bench.reference import ImplementationIndex, optimal_path
from toolshift.report.benchlog import record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--build", type=Path, default=Path("runs/bench"), help="bench build with an evolved ecosystem"
    )
    args = parser.parse_args()
    eco = load_ecosystem(args.build)
    # the DP alone, over every task × version × criterion, from the ecosystem files
    loaded = [(d, domain_tasks(args.build, d), load_history(args.build, d)) for d in eco.domains]
    usables = {t.id: usable_for(t) for _, tasks, _ in loaded for t in tasks}
    start = time.perf_counter()
    instances = 0
    for _, tasks, history in loaded:
        for entry in history.versions:
            index = ImplementationIndex.of(entry.implementations())
            for task in tasks:
                for criterion in ("step", "cost"):
                    optimal_path(task.base_functions, index, criterion, usables[task.id])
                instances += 1
    dp = time.perf_counter() - start
    # the full command: DP, plans, and replay of both paths on a fresh world of each version
    start = time.perf_counter()
    header, _ = compute_references(args.build)
    full = time.perf_counter() - start
    rows = [
        ("task × version instances", str(instances), "~9,000+"),
        ("DP, step and cost paths for all instances (s)", f"{dp:.2f}", "< 60"),
        ("reference command incl. replay of every path (s)", f"{full:.1f}", "–"),
        ("paths replaying to Δgold", f"{header.valid} of {header.instances}", "all"),
    ]
    record(
        "bench_ecosystem_reference",
        rows,
        note="Single process; wall times are upper bounds on a loaded machine (see the load average).",
    )


if __name__ == "__main__":
    main()
