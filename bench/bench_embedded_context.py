"""The embedded agent's context window, 2,048 against 4,096 tokens (D263), interleaved on domain-tools episodes.

In the domain-tools setting the task's whole domain catalog is listed, so a long episode outgrows a small
context and its prompt is rebuilt (`fit_chat`), re-evaluating what the cache held. A (`2048`) and B
(`4096`) run the same planned benchmark episodes (the first episodes, in the baseline's order, of its seeded
test sample, on the versions asked for), each side with its own model instance, A, B, A, B … (`bench/paired.py`), each episode
seeded as `toolshift bench baseline` seeds it. Usage: `python bench/bench_embedded_context.py [--build DIR]
[--sample 84] [--episodes N] [--versions 1,4]`; DIR defaults to runs/eco/bench, read-only.
"""

from __future__ import annotations

import argparse
import asyncio
import zlib
from pathlib import Path
from typing import Any

from paired import interleave, percentile
from toolshift.agents.config import RunConfig, make_user
from toolshift.agents.embedded import EmbeddedModel, load_llama
from toolshift.bench.ecosystem.baselines import (
    PlannedEpisode,
    RunSetting,
    VersionCatalogs,
    episode_key,
    plan_baseline,
    run_planned,
)
from toolshift.bench.ecosystem.paths import load_references
from toolshift.bench.ecosystem.settings import VersionWorlds
from toolshift.bench.ecosystem.store import load_ecosystem
from toolshift.report.benchlog import record
from toolshift.traces.episode import Episode

SIDES = {"2048": 2048, "4096": 4096}
MAX_TURNS = 10  # `toolshift bench baseline --agent embedded`'s default


def planned(
    build: Path, sample: int, episodes: int, versions: list[int]
) -> tuple[list[PlannedEpisode], Any, VersionWorlds]:
    eco = load_ecosystem(build)
    _, records = load_references(build)
    worlds = VersionWorlds(build)
    by_id = {t.id: t for d in eco.domains for t in worlds.tasks(d)}
    plan = plan_baseline("embedded", records, by_id, split="test", sample=sample, seed=0)
    return [p for p in plan if p.version in versions][:episodes], eco, worlds


def rebuilt(episode: Episode) -> tuple[int, int]:
    """(later turns whose prompt did not start with the whole previous prompt and output, later turns)."""
    previous, broke, later = None, 0, 0
    for m in (x for x in episode.messages if x.role == "assistant"):
        u = m.usage
        if not u.prompt_tokens:  # a reply the stop rule gave without decoding
            continue
        if previous is not None:
            later += 1
            broke += (u.cached_prompt_tokens or 0) < previous
        previous = u.prompt_tokens + (u.completion_tokens or 0)
    return broke, later


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=Path, default=Path("runs/eco/bench"))
    parser.add_argument("--sample", type=int, default=84, help="the baseline's --sample (its tasks)")
    parser.add_argument("--episodes", type=int, default=8, help="the first this many of its episodes")
    parser.add_argument("--versions", default="1")
    args = parser.parse_args()
    versions = [int(v) for v in args.versions.split(",")]
    items, eco, worlds = planned(args.build, args.sample, args.episodes, versions)
    run = RunSetting(setting="domain-tools", max_turns=MAX_TURNS)
    config = RunConfig(world=str(args.build), model="embedded", user="scripted", max_turns=MAX_TURNS)
    domains = list(eco.domains)
    for name, n in SIDES.items():
        load_llama(n, slot=f"ctx-{name}")
    episodes: dict[str, list[Episode]] = {name: [] for name in SIDES}

    def side(name: str):
        versions_of = VersionCatalogs(worlds, domains)

        def go(p: PlannedEpisode) -> None:
            seed = zlib.crc32(episode_key("embedded", p).encode())
            agent = EmbeddedModel(seed=seed, n_ctx=SIDES[name], slot=f"ctx-{name}")
            user = make_user(config.model_copy(update={"seed": seed}), p.task, 0)
            e = asyncio.run(run_planned(p, agent, user, worlds, eco.id, versions_of, run, "embedded"))
            episodes[name].append(e)
            print(f"{name} {e.id}: {e.termination_reason}, success {e.outcome.success}, rebuilt {rebuilt(e)}",
                  flush=True)  # fmt: skip

        return go

    paired = interleave(side("2048"), side("4096"), items, names=("2048", "4096"))

    def figures(name: str) -> dict[str, Any]:
        es = episodes[name]
        turns = [m for e in es for m in e.messages if m.role == "assistant" and m.usage.prompt_tokens]
        broke = [rebuilt(e) for e in es]
        return {
            "evaluated": sum(m.usage.prompt_tokens - (m.usage.cached_prompt_tokens or 0) for m in turns),
            "prompt": sum(m.usage.prompt_tokens for m in turns),
            "turn_p50": percentile([m.generation_time_seconds for m in turns], 0.5),
            "broke": sum(b for b, _ in broke),
            "later": sum(n for _, n in broke),
            "solved": sum(bool(e.outcome.success) for e in es),
            "strict": sum(bool(e.outcome.info.get("strict_success")) for e in es),
            "n": len(es),
        }

    a, b = figures("2048"), figures("4096")
    rows = [
        ("episode wall, p50: 2048 / 4096", f"{paired.p('a', 0.5):.1f} / {paired.p('b', 0.5):.1f} s "
         f"({paired.ratio(0.5):.2f}×)", "—"),
        ("episode wall, p90: 2048 / 4096", f"{paired.p('a', 0.9):.1f} / {paired.p('b', 0.9):.1f} s "
         f"({paired.ratio(0.9):.2f}×)", "—"),
        ("model turn that decodes, median: 2048 / 4096", f"{a['turn_p50']:.2f} / {b['turn_p50']:.2f} s", "—"),
        ("later turns whose prompt was rebuilt: 2048 / 4096", f"{a['broke']}/{a['later']} / {b['broke']}/{b['later']}",
         "4096: 0"),
        ("prompt tokens evaluated / prompt tokens: 2048", f"{a['evaluated']} / {a['prompt']}", "—"),
        ("prompt tokens evaluated / prompt tokens: 4096", f"{b['evaluated']} / {b['prompt']}", "—"),
        ("solved / strict / episodes: 2048; 4096",
         f"{a['solved']} / {a['strict']} / {a['n']}; {b['solved']} / {b['strict']} / {b['n']}", "—"),
        ("episodes; load average (1 min) at start → end", paired.load_text(), "—"),
    ]  # fmt: skip
    record(
        f"agents: embedded context 2,048 vs 4,096 tokens, domain-tools episodes (v{args.versions}), interleaved",
        rows,
        note=paired.note(),
    )


if __name__ == "__main__":
    main()
