"""The embedded agent's prompt builders, old and new, interleaved on the same tasks: model-turn time, cache share, collateral.

A (`rebuild`): the prompt rebuilt every turn from the conversation, every output token sampled, no stop
rule (the agent before D170–D172). B (`grow`): the prompt only grows, forced text evaluated in batches,
the stop rule on. Each side decodes with its own model instance, so each side's KV cache carries across
its own episodes only (as in a process running one builder), and the sides run A, B, A, B … on the same
task and seed (`bench/paired.py`). Usage: `python bench/bench_embedded_prompts.py [--build DIR]
[--tasks N] [--rounds R]`; DIR defaults to runs/eco/bench, read-only (its test tasks of one named write).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from paired import interleave, percentile
from toolshift.agents.demo import demo_tasks
from toolshift.agents.embedded import EmbeddedModel, load_llama
from toolshift.agents.loop import EpisodeLimits, run_episode
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.report.benchlog import record
from toolshift.traces.episode import Episode

SIDES = {"old": {"prompts": "rebuild", "stop_when_done": False, "ask": "free"}, "new": {"prompts": "grow"}}
MAX_TURNS = 6


def tasks(build: Path | None, n: int) -> list[tuple[str, Any]]:
    """The demo's clinic tasks and the first `n` test tasks of one named write of the build."""
    out: list[tuple[str, Any]] = [("clinic", t) for t in demo_tasks()]
    if build is not None and n > 0:
        from toolshift.report.embedded import NAMED, select_tasks

        picked = [p for p in select_tasks(build, sample={}) if p.group == NAMED][:n]
        out += [(str(build / "domains" / p.domain / "spec.yaml"), p.task) for p in picked]
    return out


class Timed(EmbeddedModel):
    """The embedded model, recording each turn's CPU seconds (this process's, which runs one episode at a
    time), less sensitive than wall time to the other jobs on a shared machine."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.cpu: list[float] = []

    def _complete_sync(self, messages, tools):  # type: ignore[no-untyped-def]
        began = time.process_time()
        reply = super()._complete_sync(messages, tools)
        self.cpu.append(time.process_time() - began)
        return reply


CPU: dict[str, list[tuple[bool, bool, float]]] = {"old": [], "new": []}
"""Per side, per model turn: (first turn, decoded, CPU seconds)."""


def run(side: str, item: tuple[int, str, Any]) -> Episode:
    seed, world, task = item
    model = Timed(seed=seed, slot=f"bench-{side}", **SIDES[side])
    episode = asyncio.run(
        run_episode(task, model, ScriptedUser(task.public_request, task.instruction), world_opener(world),
                    episode_id=f"{side}-{task.id}-{seed}", limits=EpisodeLimits(max_turns=MAX_TURNS))
    )  # fmt: skip
    assistant = [m for m in episode.messages if m.role == "assistant"]
    for k, (m, cpu) in enumerate(zip(assistant, model.cpu, strict=False)):
        CPU[side].append((k == 0, bool(m.usage.prompt_tokens), cpu))
    return episode


def turns(episodes: list[Episode]) -> list[dict[str, Any]]:
    """Per model turn: seconds, prompt tokens, cached tokens, and what the previous turn left in the cache."""
    out = []
    for e in episodes:
        previous = None
        for k, m in enumerate(x for x in e.messages if x.role == "assistant"):
            u = m.usage
            reusable = None if previous is None else previous.prompt_tokens + previous.completion_tokens
            out.append(
                {"first": k == 0, "seconds": m.generation_time_seconds, "prompt": u.prompt_tokens,
                 "cached": u.cached_prompt_tokens, "reusable": reusable}
            )  # fmt: skip
            previous = u
    return out


def summary(name: str, episodes: list[Episode]) -> dict[str, Any]:
    rows = turns(episodes)
    given = [r for r in rows if not r["prompt"]]  # the stop rule's one admitted output, not decoded
    rows = [r for r in rows if r["prompt"]]
    later = [r for r in rows if not r["first"]]
    share = [r["cached"] / r["prompt"] for r in later]
    reuse = [min(1.0, r["cached"] / r["reusable"]) for r in later if r["reusable"]]
    collateral = [e.outcome.info.get("collateral_changes", 0) for e in episodes]
    return {
        "side": name,
        "episodes": len(episodes),
        "solved": sum(bool(e.outcome.success) for e in episodes),
        "strict": sum(bool(e.outcome.info.get("strict_success")) for e in episodes),
        "turns": len(rows),
        "given": len(given),
        "turn_p50": percentile([r["seconds"] for r in rows], 0.5),
        "all_turn_p50": percentile([r["seconds"] for r in rows + given], 0.5),
        "later_turn_p50": percentile([r["seconds"] for r in later], 0.5) if later else float("nan"),
        "first_turn_p50": percentile([r["seconds"] for r in rows if r["first"]], 0.5),
        "cache_share_p50": percentile(share, 0.5) if share else float("nan"),
        "cache_share_min": min(share, default=float("nan")),
        "turns_95": sum(s >= 0.95 for s in share),
        "later_turns": len(later),
        "reuse_min": min(reuse, default=float("nan")),
        "evaluated": sum(r["prompt"] - r["cached"] for r in rows),
        "completion": sum(m.usage.completion_tokens or 0 for e in episodes for m in e.messages if m.role == "assistant"),
        "collateral": sum(collateral),
        "collateral_episodes": sum(c > 0 for c in collateral),
    }  # fmt: skip


def cpu(side: str, *, later: bool = False, first: bool = False) -> float:
    rows = CPU[side]
    picked = [c for f, _, c in rows if (not later or not f) and (not first or f)]
    return percentile(picked, 0.5) if picked else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=Path, default=Path("runs/eco/bench"))
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="also write the per-side figures here")
    args = parser.parse_args()
    build = args.build if (args.build / "domains").is_dir() else None
    items = [(seed, w, t) for seed in range(args.rounds) for w, t in tasks(build, args.tasks)]
    for side in SIDES:
        load_llama(slot=f"bench-{side}")
    episodes: dict[str, list[Episode]] = {"old": [], "new": []}

    def side(name: str):
        def go(item: tuple[int, str, Any]) -> None:
            e = run(name, item)
            episodes[name].append(e)
            turn_seconds = [m.generation_time_seconds for m in e.messages if m.role == "assistant"]
            print(f"{name} {e.task_id} seed {item[0]}: {e.termination_reason}, success {e.outcome.success}, "
                  f"collateral {e.outcome.info.get('collateral_rows')}, turns {turn_seconds}", flush=True)  # fmt: skip

        return go

    paired = interleave(side("old"), side("new"), items, names=("old", "new"))
    a, b = summary("old", episodes["old"]), summary("new", episodes["new"])
    rows = [
        ("model turn that decodes, median: old / new", f"{a['turn_p50']:.2f} / {b['turn_p50']:.2f} s",
         "new ≤ ¼ old"),
        ("model turn that decodes, median: new / old", f"{b['turn_p50'] / a['turn_p50']:.2f}×", "≤ 0.25×"),
        ("every assistant turn, median (new: with the stop rule's given replies): old / new",
         f"{a['all_turn_p50']:.2f} / {b['all_turn_p50']:.2f} s ({b['all_turn_p50'] / a['all_turn_p50']:.2f}×)", "—"),
        ("CPU seconds a model turn, median (all turns): old / new",
         f"{cpu('old'):.2f} / {cpu('new'):.2f} s ({cpu('new') / cpu('old'):.2f}×)", "new ≤ ¼ old"),
        ("CPU seconds a model turn, median (turns after the first): old / new",
         f"{cpu('old', later=True):.2f} / {cpu('new', later=True):.2f} s "
         f"({cpu('new', later=True) / cpu('old', later=True):.2f}×)", "—"),
        ("CPU seconds, first turn median: old / new", f"{cpu('old', first=True):.2f} / {cpu('new', first=True):.2f} s", "—"),
        ("turns decoded / given without decoding: old; new",
         f"{a['turns']} / {a['given']}; {b['turns']} / {b['given']}", "—"),
        ("first turn / later turns, median: old", f"{a['first_turn_p50']:.2f} / {a['later_turn_p50']:.2f} s", "—"),
        ("first turn / later turns, median: new", f"{b['first_turn_p50']:.2f} / {b['later_turn_p50']:.2f} s", "—"),
        ("prompt tokens from cache, turns after the first (median / min): old",
         f"{100 * a['cache_share_p50']:.1f}% / {100 * a['cache_share_min']:.1f}%", "—"),
        ("prompt tokens from cache, turns after the first (median / min): new",
         f"{100 * b['cache_share_p50']:.1f}% / {100 * b['cache_share_min']:.1f}%", "≥ 95% every turn"),
        ("turns after the first with ≥ 95% from cache: old / new",
         f"{a['turns_95']}/{a['later_turns']} / {b['turns_95']}/{b['later_turns']}", "all"),
        ("previous prompt + output found in the cache (min over turns): old / new",
         f"{100 * a['reuse_min']:.1f}% / {100 * b['reuse_min']:.1f}%", "100%"),
        ("prompt tokens evaluated / output tokens: old", f"{a['evaluated']} / {a['completion']}", "—"),
        ("prompt tokens evaluated / output tokens: new", f"{b['evaluated']} / {b['completion']}", "—"),
        ("solved / strict / episodes: old", f"{a['solved']} / {a['strict']} / {a['episodes']}", "—"),
        ("solved / strict / episodes: new", f"{b['solved']} / {b['strict']} / {b['episodes']}", "—"),
        ("collateral writes (episodes with any): old / new",
         f"{a['collateral']} ({a['collateral_episodes']}) / {b['collateral']} ({b['collateral_episodes']})", "new 0"),
        ("episode seconds, p50 / p90: old", f"{paired.p('a', 0.5):.1f} / {paired.p('a', 0.9):.1f} s", "—"),
        ("episode seconds, p50 / p90: new", f"{paired.p('b', 0.5):.1f} / {paired.p('b', 0.9):.1f} s", "—"),
        ("episodes; load average (1 min) at start → end", paired.load_text(), "—"),
    ]  # fmt: skip
    record(
        "agents: embedded prompt builders, old (rebuilt) vs new (grows), interleaved",
        rows,
        note=paired.note(),
    )
    if args.json is not None:
        args.json.write_text(json.dumps({"old": a, "new": b}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
