"""The embedded agent's context, 2,048 tokens against 4,096 (D263), interleaved on the benchmark's domain-tools episodes.

A (`2048`) is the context before D263, B (`4096`) the one after. Each side runs the same planned episode (task,
version, seed) in turn, A, B, A, B …, through the baseline runner in the `domain-tools` setting, so each side's
episodes are exactly what `toolshift bench baseline --agent embedded --setting domain-tools` records. Figures:
prompt tokens evaluated (not taken from the KV cache; the work, independent of the machine's load), turns whose
prompt was rebuilt (the transcript outgrew the context), CPU and wall seconds per episode (p50), successes.
Usage: `python bench/bench_embedded_context.py [--build DIR] [--episodes N]`; DIR defaults to runs/eco/bench,
read-only; the first N planned episodes of a seeded test sample, one version each.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from paired import load_average, percentile
from toolshift.agents.embedded import EmbeddedModel
from toolshift.bench.ecosystem import baselines as runner
from toolshift.bench.ecosystem.paths import load_references
from toolshift.bench.ecosystem.settings import VersionWorlds
from toolshift.bench.ecosystem.store import load_ecosystem
from toolshift.report.benchlog import record
from toolshift.traces.episode import Episode

SIDES = {"2048": 2048, "4096": 4096}
MAX_TURNS = 8


def episode_figures(ep: Episode) -> dict[str, Any]:
    """Evaluated prompt tokens and rebuilt turns of one episode, from its assistant messages' usage."""
    evaluated = rebuilt = 0
    previous = None
    for m in ep.messages:
        if m.role != "assistant" or not m.usage.prompt_tokens:
            continue
        evaluated += m.usage.prompt_tokens - m.usage.cached_prompt_tokens
        if previous and m.usage.cached_prompt_tokens < 0.9 * previous:
            rebuilt += 1
        previous = m.usage.prompt_tokens + m.usage.completion_tokens
    return {"evaluated": evaluated, "rebuilt": rebuilt, "success": bool(ep.outcome and ep.outcome.success)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=Path, default=Path("runs/eco/bench"))
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--sample", type=int, default=24, help="test tasks sampled (seed 0) to plan from")
    args = parser.parse_args()
    eco = load_ecosystem(args.build)
    _, records = load_references(args.build)
    worlds = VersionWorlds(args.build)
    tasks = {t.id: t for d in eco.domains for t in worlds.tasks(d)}
    planned = runner.plan_baseline("embedded", records, tasks, split="test", sample=args.sample, seed=0)
    # one version per task, spread over the versions, so the sides see old and new catalogs alike
    chosen, seen = [], set()
    for p in sorted(planned, key=lambda p: (p.task.id, p.version)):
        if p.task.id not in seen and p.version == 1 + (len(seen) % 6):
            seen.add(p.task.id)
            chosen.append(p)
        if len(chosen) == args.episodes:
            break
    run = runner.RunSetting(setting="domain-tools", user="scripted", max_turns=MAX_TURNS, base_url=None)
    defaults = EmbeddedModel.__init__.__kwdefaults__
    assert defaults is not None
    figures: dict[str, list[dict[str, Any]]] = {s: [] for s in SIDES}
    load_start = load_average()
    for p in chosen:
        for side, n_ctx in SIDES.items():
            defaults["n_ctx"] = n_ctx
            got: list[Episode] = []
            began, cpu = time.perf_counter(), time.process_time()
            asyncio.run(
                runner._run_all(
                    [p], "embedded", worlds, eco.id, list(eco.domains), run, on_episode=got.append
                )
            )
            row = {
                **episode_figures(got[0]),
                "wall": time.perf_counter() - began,
                "cpu": time.process_time() - cpu,
            }
            figures[side].append(row)
            print(f"{side} {p.task.id} v{p.version}: {row}", flush=True)
    defaults["n_ctx"] = 4096
    load_end = load_average()
    a, b = figures["2048"], figures["4096"]

    def total(side: list[dict[str, Any]], key: str) -> float:
        return sum(r[key] for r in side)

    def p50(side: list[dict[str, Any]], key: str) -> float:
        return percentile([r[key] for r in side], 0.5)

    rows = [
        ("episodes (pairs)", str(len(a)), "—"),
        ("prompt tokens evaluated, all episodes: 2048 / 4096", f"{total(a, 'evaluated'):.0f} / {total(b, 'evaluated'):.0f} "
         f"({total(b, 'evaluated') / max(1, total(a, 'evaluated')):.2f}×)", "fewer"),
        ("turns whose prompt was rebuilt: 2048 / 4096", f"{total(a, 'rebuilt'):.0f} / {total(b, 'rebuilt'):.0f}", "0 at 4096"),
        ("CPU seconds an episode, p50: 2048 / 4096", f"{p50(a, 'cpu'):.1f} / {p50(b, 'cpu'):.1f} s "
         f"({p50(b, 'cpu') / p50(a, 'cpu'):.2f}×)", "—"),
        ("CPU seconds, all episodes: 2048 / 4096", f"{total(a, 'cpu'):.0f} / {total(b, 'cpu'):.0f} s "
         f"({total(b, 'cpu') / total(a, 'cpu'):.2f}×)", "—"),
        ("wall seconds an episode, p50: 2048 / 4096", f"{p50(a, 'wall'):.1f} / {p50(b, 'wall'):.1f} s", "—"),
        ("successes: 2048 / 4096", f"{total(a, 'success'):.0f} / {total(b, 'success'):.0f}", "—"),
        ("load average (1 min) at start → end", f"{load_start:.2f} → {load_end:.2f}", "—"),
    ]  # fmt: skip
    note = (
        "The same planned domain-tools episodes (task, version, seed), the 2,048-token context (before D263) and "
        "the 4,096 one interleaved; evaluated prompt tokens are the work, independent of the load."
    )
    record("agents: embedded context 2048 vs 4096, domain-tools episodes, interleaved", rows, note=note)


if __name__ == "__main__":
    main()
