"""`bench baseline --agent oracle` on the full build: two local worker processes against a two-node Ray cluster.

A unit of work is one whole run of the oracle baseline on the build's test split (every task × version) into a
fresh folder: side A with the local executor in 2 worker processes (`--workers 2`), side B on a two-node Ray
cluster on this machine (a head and a second node, each its own `ray start` with one CPU, started once before
the pairing and stopped after it; the driver is this process), A, B, A, B … (`bench/paired.py`). Each run is
one command's worth: a fresh executor, so the local side starts its worker processes and the Ray side connects
as a new job (new worker processes, the build packed and put again; each node's asset cache, like a running
cluster's between commands, already holds it after the first), and disconnects at the end. Figures:
episodes per second from each run's wall time, the ratio, and the driver's overhead per episode — this
process's CPU seconds over the run (planning, submitting, receiving, writing every episode) per episode, on
each side. Each run's episodes are checked to be the first run's (calls, texts, verdicts and world changes).
Usage: `python bench/bench_cluster.py [--build runs/eco/bench] [--rounds 3] [--sample N]`; the build is read-only.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from paired import interleave
from toolshift.agents.executor import Executor
from toolshift.agents.ray_executor import LocalCluster, _use_auth, connect, shutdown
from toolshift.bench.ecosystem.baselines import run_baseline
from toolshift.report.benchlog import record
from toolshift.traces.store import iter_episodes


def what_happened(path: Path) -> dict[str, Any]:
    """Each episode as its calls, texts, verdict and world changes (no clocks)."""
    return {
        e.id: (
            [(c.name, c.arguments) for m in e.messages for c in m.tool_calls or []],
            [m.content for m in e.messages],
            e.outcome.success if e.outcome else None,
            [c.model_dump() for c in e.world_diff or []],
        )
        for e in iter_episodes(path)
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=Path, default=Path("runs/eco/bench"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", type=int, default=None, help="test tasks (default: the whole test split)")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="bench-cluster-")
    head = LocalCluster(1)
    second = LocalCluster(1, join=head)
    try:
        _use_auth(head.auth)
        kept: dict[str, list[Path]] = {"local": [], "ray": []}

        def side(name: str):
            def go(_: int) -> None:
                # each run as one command: a fresh executor (local: its 2 worker processes started; Ray: a new
                # job on the running cluster, so new worker processes and the build put in the object store
                # again, while each node's asset cache keeps it, as it does between a user's commands)
                if name == "ray":
                    connect(head.address)
                executor = (
                    Executor("ray", address=head.address) if name == "ray" else Executor.choose("local", 2)
                )
                try:  # the episodes are read after the pairing, outside the timed runs
                    out = tempfile.mkdtemp(dir=scratch)
                    kept[name].append(
                        run_baseline(args.build, "oracle", out, sample=args.sample, executor=executor)
                    )
                finally:
                    if name == "ray":
                        shutdown()  # this process started no cluster: a disconnect

            return go

        paired = interleave(side("local"), side("ray"), list(range(args.rounds)),
                            names=("local, 2 processes", "Ray, 2 nodes"))  # fmt: skip
        seen = {name: [what_happened(path) for path in paths] for name, paths in kept.items()}
    finally:
        shutdown()
        second.stop()
        head.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    first = seen["local"][0]
    episodes = len(first)
    same = all(run == first for runs in seen.values() for run in runs)
    a, b = paired.p("a", 0.5), paired.p("b", 0.5)
    ca, cb = paired.p("a", 0.5, "cpu"), paired.p("b", 0.5, "cpu")
    rows = [
        ("episodes per run; every run's episodes the same", f"{episodes}; {'yes' if same else 'NO'}", "yes"),
        ("run wall, p50: local 2 processes / Ray 2 nodes", f"{a:.1f} / {b:.1f} s", "—"),
        ("episodes per second, p50: local 2 processes / Ray 2 nodes", f"{episodes / a:.1f} / {episodes / b:.1f}", "—"),
        ("Ray / local, run wall p50/p50 · p90/p90", f"{paired.ratio(0.5):.2f}× · {paired.ratio(0.9):.2f}×", "—"),
        ("driver CPU per episode, p50: local 2 processes / Ray 2 nodes",
         f"{1000 * ca / episodes:.2f} / {1000 * cb / episodes:.2f} ms", "—"),
        ("driver CPU share of the run's wall, p50: local / Ray", f"{100 * ca / a:.1f}% / {100 * cb / b:.1f}%", "—"),
        ("runs per side; load average (1 min) at start → end", paired.load_text(), "< 3 at start"),
    ]  # fmt: skip
    record(
        f"agents: oracle baseline on the full build ({args.build}, test split"
        + (f", {args.sample} tasks" if args.sample else "")
        + "), local 2 processes vs a 2-node Ray cluster on this machine",
        rows,
        note=paired.note(),
    )


if __name__ == "__main__":
    main()
