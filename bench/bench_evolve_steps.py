"""Task evolution: steps per hour with the embedded solver, and the share of time in proposer, verification and solver.

A small run on the built-in worlds' tasks (structural proposer, embedded SmolLM2 solver, scripted user,
N attempts per task); the seeds are evaluated first (generation 0), then the timed steps. Shares are of the
steps' time as the records account for it (proposer, verify, solver, feedback). Usage:

    .venv/bin/python bench/bench_evolve_steps.py [--seeds 2] [--steps 2] [--attempts 10] [--max-turns 6]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from toolshift.evolve.engine import Engine
from toolshift.evolve.seeds import builtin_world_tasks
from toolshift.evolve.solver import SolverConfig
from toolshift.evolve.store import EvolveConfig, RunStore
from toolshift.report.benchlog import record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--attempts", type=int, default=10)
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--solver", default="embedded")
    parser.add_argument("--out", type=Path, default=None, help="Keep the run folder here.")
    args = parser.parse_args()
    seeds = builtin_world_tasks()[: args.seeds]
    generations = -(-args.steps // len(seeds))
    config = EvolveConfig(
        seed=0,
        generations=generations,
        solver=SolverConfig(model=args.solver, attempts=args.attempts, max_turns=args.max_turns),
    )
    folder = args.out or Path(tempfile.mkdtemp(prefix="bench-evolve-"))
    store = RunStore(folder)
    if store.exists():  # an interrupted benchmark resumes: finished attempts are not timed again
        config, seeds = store.config(), store.seeds()
    else:
        store.create(config, seeds)
    engine = Engine(store, config)
    started = time.perf_counter()
    engine.run(max_steps=args.steps)
    wall = time.perf_counter() - started
    # figures from the records' own clocks, so a resumed benchmark counts its earlier attempts once
    records = store.records()
    seeds_done = [r for r in records if r.step is None]
    children = [r for r in records if r.step is not None]
    parts = {"proposer": 0.0, "verify": 0.0, "solver": 0.0, "feedback": 0.0}
    for r in children:
        for name, cost in r.costs.items():
            parts[name if name in parts else "feedback"] = parts.get(name, 0.0) + cost.seconds
    accounted = sum(parts.values()) or 1.0
    seeds_seconds = sum(c.seconds for r in seeds_done for c in r.costs.values())
    attempts = [a for r in records for a in r.attempts]  # seeds' and children's: the solver's speed
    tokens = sum(a.completion_tokens for a in attempts)
    model_seconds = sum(a.seconds for a in attempts) or 1.0
    solved = sum(1 for a in attempts if a.success)
    rows = [
        ("seeds evaluated (generation 0)", f"{len(seeds_done)} in {seeds_seconds:.0f} s", "—"),
        ("evolution steps", f"{len(children)} in {accounted:.0f} s", "—"),
        ("evolution steps per hour", f"{3600 * len(children) / accounted:.1f}", "—"),
        ("seconds per attempt (mean)", f"{model_seconds / max(len(attempts), 1):.1f} s", "—"),
        ("attempts solved", f"{solved} of {len(attempts)}", "—"),
        ("solver completion tokens per second of attempt", f"{tokens / model_seconds:.1f}", "—"),
        ("this process's wall time (a resumed run's earlier work excluded)", f"{wall:.0f} s", "—"),
    ]
    rows += [(f"share of step time: {name}", f"{100 * s / accounted:.1f}%", "—") for name, s in parts.items()]
    record(
        "evolve: steps per hour with the embedded solver",
        rows,
        note=(
            f"Structural proposer, {args.solver} solver (scripted user), {args.attempts} attempts per task, "
            f"≤ {args.max_turns} turns per attempt, seeds: the first {len(seeds)} built-in worlds' tasks. A step is "
            "one child proposed, verified, attempted N times and scored; times are the records' own (proposer, verify, "
            "solver, feedback), so checkpoints and model loading are left out."
        ),
    )


if __name__ == "__main__":
    main()
