"""The embedded baseline run in one process against two worker processes (`--workers 2`), interleaved.

The embedded model decodes on one thread, so a run in one process uses one core; `toolshift bench
baseline --workers N` (and `steward eval --workers N`) run shares of the same episodes in N processes
(`toolshift.agents.workers`). A unit of work is one whole run of the same planned episodes — the
embedded agent on the domain-tools setting, `--sample` test tasks on every version, into a fresh
folder — with 1 worker (A) and with 2 (B), A, B, A, B … (`bench/paired.py`); the figure is the run's
wall time, and episodes a minute from it. Each side's episodes are checked to be the same (calls and
world changes: the model is seeded by the episode). Usage: `python bench/bench_agents_workers.py
[--build DIR] [--sample 2] [--rounds 3]`; DIR defaults to runs/eco/bench, read-only.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from paired import interleave
from toolshift.bench.ecosystem.baselines import run_baseline
from toolshift.report.benchlog import record
from toolshift.traces.store import iter_episodes

MAX_TURNS = 8  # the committed results' turn limit (docs/results/baselines.md, steward.md)


def what_happened(path: Path) -> dict[str, Any]:
    """Each episode as its calls and world changes (no clocks)."""
    return {
        e.id: (
            [(c.name, c.arguments) for m in e.messages for c in m.tool_calls or []],
            [c.model_dump() for c in e.world_diff or []],
        )
        for e in iter_episodes(path)
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=Path, default=Path("runs/eco/bench"))
    parser.add_argument("--sample", type=int, default=2, help="test tasks, each on every version")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seen: dict[int, list[dict[str, Any]]] = {1: [], 2: []}

    def side(workers: int):
        def go(_: int) -> None:
            with tempfile.TemporaryDirectory() as out:
                path = run_baseline(
                    args.build, "embedded", out, sample=args.sample, max_turns=MAX_TURNS,
                    setting="domain-tools", workers=workers,
                )  # fmt: skip
                seen[workers].append(what_happened(path))

        return go

    paired = interleave(side(1), side(2), list(range(args.rounds)), names=("1 worker", "2 workers"))
    episodes = len(seen[1][0])
    same = all(run == seen[1][0] for runs in seen.values() for run in runs)
    a, b = paired.p("a", 0.5), paired.p("b", 0.5)
    rows = [
        ("run wall, p50: 1 worker / 2 workers", f"{a:.1f} / {b:.1f} s ({paired.ratio(0.5):.2f}×)", "≤ 0.6×"),
        ("episodes a minute, p50: 1 worker / 2 workers", f"{60 * episodes / a:.1f} / {60 * episodes / b:.1f}", "—"),
        ("episodes per run; every run's episodes the same", f"{episodes}; {'yes' if same else 'NO'}", "yes"),
        ("runs per side; load average (1 min) at start → end", paired.load_text(), "—"),
    ]  # fmt: skip
    record(
        f"agents: embedded baseline in 1 vs 2 worker processes, domain-tools, {args.sample} tasks × every version",
        rows,
        note=paired.note(),
    )


if __name__ == "__main__":
    main()
