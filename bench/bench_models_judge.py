"""Benchmark: the judge `covers` (Δgold ⊆ Δagent up to a renaming of generated keys) per episode.

For every task of a build it judges four agent diffs, each many times: the gold replay itself (the
exact fast path), the task's independent creates replayed in the other order (a renaming is
searched), a wrong value in one gold change (a failure, fully searched), and the gold diff plus 200
rows the agent created besides (candidates scanned). Reports microseconds per judgement and, for
contrast, the exact-identity check the judge replaced. Usage:
`python bench/bench_models_judge.py [--build DIR]` (default: builds 8 domains into a temporary folder).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from paired import percentile
from toolshift.bench.audit import reordered_creates, replay_order
from toolshift.bench.build import build_domain, build_world, load_manifest, load_tasks, write_manifest
from toolshift.models import RowChange, Task
from toolshift.report.benchlog import record

DOMAINS = [
    "incident_management", "lab_samples", "procurement", "warehouse_inventory",
    "energy_utilities", "event_management", "customer_support", "accounts_receivable",
]  # fmt: skip
REPEAT = 50


def exact(agent: list[RowChange], gold: list[RowChange]) -> bool:
    made = {c.identity() for c in agent}
    return all(c.identity() in made for c in gold)


def timed(judge: Callable[[], object]) -> float:
    started = time.perf_counter()
    for _ in range(REPEAT):
        judge()
    return (time.perf_counter() - started) / REPEAT * 1e6


def extra_rows(task: Task, n: int) -> list[RowChange]:
    table = next((c.table for c in task.expected_changes if c.op == "insert"), "extra")
    return [
        RowChange(table=table, key=f"ZZ-{i:05d}", field=f, op="insert", after=f"noise {i}")
        for i in range(n)
        for f in ("a", "b", "c")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp:
        build = args.build
        if build is None:
            build = Path(tmp) / "bench"
            for name in DOMAINS:
                build_domain(build, name, seed=0, per_domain=40)
            write_manifest(build, DOMAINS, 0, 40)
        times: dict[str, list[float]] = {"exact": [], "reordered": [], "wrong": [], "extra": [], "old": []}
        reordered_ok = reordered_n = 0
        for entry in load_manifest(build).domains:
            world = build_world(build, entry.name)
            for task in load_tasks(build, entry.name):
                gold = task.expected_changes
                times["exact"].append(timed(lambda g=gold, t=task: t.covered_by(g)))
                times["old"].append(timed(lambda g=gold: exact(g, g)))
                wrong = [gold[0].model_copy(update={"after": "wrong value"}), *gold[1:]]
                times["wrong"].append(timed(lambda w=wrong, t=task: t.covered_by(w)))
                noisy = gold + extra_rows(task, 200)
                times["extra"].append(timed(lambda d=noisy, t=task: t.covered_by(d)))
                swap = reordered_creates(task, world)
                if swap is not None and swap.same_table:
                    diff = replay_order(task, world, swap.order)
                    reordered_n += 1
                    reordered_ok += task.covered_by(diff)
                    times["reordered"].append(timed(lambda d=diff, t=task: t.covered_by(d)))
            world.close()
        n_tasks = len(times["exact"])

    def fmt(xs: list[float]) -> str:
        if not xs:
            return "—"
        return f"{percentile(xs, 0.5):.1f} / {percentile(xs, 0.99):.1f} / {max(xs):.1f} µs"

    record(
        "models: the judge covers() per episode (Δgold ⊆ Δagent up to renaming)",
        [
            ("tasks judged", str(n_tasks), ""),
            ("gold diff itself (exact fast path), p50 / p99 / max", fmt(times["exact"]), "< 1 ms"),
            (
                f"independent creates reordered ({reordered_ok}/{reordered_n} pass)",
                fmt(times["reordered"]),
                "< 1 ms",
            ),
            ("one wrong value (a failure, full search)", fmt(times["wrong"]), "< 1 ms"),
            ("gold + 200 extra created rows", fmt(times["extra"]), "< 10 ms"),
            ("old exact-identity check, gold diff", fmt(times["old"]), ""),
        ],
        note=(
            f"Each figure is the mean of {REPEAT} judgements of one task's diff; p50/p99/max are over tasks. "
            "An episode is judged once (plus `missing_changes` on failure), so the judge adds well under a "
            "millisecond to an episode that takes seconds."
        ),
    )


if __name__ == "__main__":
    main()
