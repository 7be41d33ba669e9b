"""BFCL multi-turn and AgentDojo: the oracle on every task over in-memory MCP, judged by their own checks,
beside the oracle through their own harnesses; counts to docs/results/external-oracle.md, speeds to
docs/benchmarks.md.

    .venv/bin/python bench/bench_external_oracle.py [--limit N]   # N tasks per category / suite
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from toolshift.agents.config import RunConfig, make_agent, make_user
from toolshift.agents.loop import run_episode
from toolshift.agents.worlds import world_opener
from toolshift.fileio import write_text_atomic
from toolshift.report.benchlog import machine_description, record
from toolshift.world.external import (
    Transcript,
    agentdojo,
    agentdojo_harness,
    bfcl,
    bfcl_harness,
    export_tasks,
    judge_task,
)

MAX_TURNS = 100
"""Agent model calls per episode: the longest BFCL reference needs 37 (35 calls and 2 replies; BFCL itself
allows 20 steps per turn). `toolshift run`'s default of 30 would cut two long-context tasks short."""
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results" / "external-oracle.md"


def run_family(family: str, tasks: list) -> tuple[dict, float]:
    """Every task once with the oracle, sequentially; (per-task outcome, seconds)."""
    config = RunConfig(world=family, model="oracle", max_turns=MAX_TURNS)
    opener = world_opener(family)

    async def go() -> tuple[dict, float]:
        out = {}
        start = time.perf_counter()
        for t in tasks:
            e = await run_episode(
                t, make_agent(config, t, 0), make_user(config, t, 0), opener, episode_id=t.id,
                limits=config.limits(),
            )  # fmt: skip
            out[t.id] = e
        return out, time.perf_counter() - start

    return asyncio.run(go())


def time_checker(tasks: list) -> float:
    """Seconds BFCL's checker takes over every task's reference calls, by turn (what an episode's judge does)."""
    transcripts = [
        Transcript(turns=[[[(g.tool, g.arguments)] for g in path] for path in t.turn_paths()], calls=[], final_text="")
        for t in tasks
    ]  # fmt: skip
    start = time.perf_counter()
    wrong = [
        t.id
        for t, transcript in zip(tasks, transcripts, strict=True)
        if not judge_task(t, transcript)["success"]
    ]
    seconds = time.perf_counter() - start
    if wrong:
        raise SystemExit(f"BFCL's checker failed the reference of {len(wrong)} tasks, first {wrong[0]}")
    return seconds


def group_of(task) -> str:
    return task.difficulty.get("category") or task.difficulty.get("suite")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    rows, lines = [], []
    command = "python bench/bench_external_oracle.py" + (f" --limit {args.limit}" if args.limit else "")
    lines += ["# BFCL multi-turn and AgentDojo: the oracle judged by their own checks", "",
              f"Made by `{command}` ({machine_description()}).", "",
              "Each task's reference (BFCL's possible answer, AgentDojo's ground truth) is played by toolshift's "
              "oracle turn by turn over in-memory MCP against the task's own world, and judged by the benchmark's "
              "own check (BFCL `multi_turn_checker`, AgentDojo utility), with at most "
              f"{MAX_TURNS} agent turns per episode. Tasks that could not be exported are listed with their "
              "reason, and so is any episode whose world diff (delta_cover: Δgold ⊆ Δagent) disagrees with "
              "the check.", ""]  # fmt: skip
    for family, subsets in (("bfcl", list(bfcl.CATEGORIES)), ("agentdojo", list(agentdojo.SUITES))):
        start = time.perf_counter()
        report = export_tasks(family, subsets=subsets, limit=args.limit)
        export_s = time.perf_counter() - start
        run_family(family, report.tasks[:3])  # warm imports and caches
        episodes, seconds = run_family(family, report.tasks)
        by_group: dict[str, Counter] = defaultdict(Counter)
        failures = []
        for t in report.tasks:
            e = episodes[t.id]
            ok = bool(e.outcome and e.outcome.success)
            by_group[group_of(t)]["run"] += 1
            by_group[group_of(t)]["full"] += ok
            if not ok:
                failures.append(
                    (t.id, e.outcome.info.get("error_type") if e.outcome else e.termination_reason)
                )
            elif e.outcome.info.get("delta_cover") is not True:
                failures.append(
                    (t.id, "full marks, but the world diff does not cover the reference's (delta_cover)")
                )
        not_exported = Counter(
            tid.rsplit("_", 1)[0] if family == "bfcl" else tid.split(".")[0] for tid, _ in report.failed
        )
        lines += [
            f"## {family}",
            "",
            "| subset | tasks | exported and run | full marks | not exported |",
            "|---|---|---|---|---|",
        ]
        for g in subsets:
            c = by_group.get(g, Counter())
            lines.append(
                f"| {g} | {c['run'] + not_exported[g]} | {c['run']} | {c['full']} | {not_exported[g]} |"
            )
        total_run = sum(c["run"] for c in by_group.values())
        total_full = sum(c["full"] for c in by_group.values())
        lines += [
            f"| **all** | {total_run + len(report.failed)} | {total_run} | {total_full} | {len(report.failed)} |",
            "",
        ]
        for tid, reason in report.failed:
            lines.append(f"- not exported: `{tid}`: {reason.split(': ', 1)[-1]}")
        for tid, reason in failures:
            lines.append(f"- failed its check: `{tid}`: {reason}")
        lines.append("")
        # Their harness, the same tasks, the same oracle.
        with tempfile.TemporaryDirectory() as tmp:
            if family == "bfcl":
                ids = [t.id for t in report.tasks]
                bfcl_harness.run_oracle(ids[:3], Path(tmp) / "warm")
                theirs = bfcl_harness.run_oracle(ids, Path(tmp) / "result")
                their_n, their_s = theirs["entries"], theirs["seconds"]
                check_s = time_checker(report.tasks)
            else:
                their_n, their_s = 0, 0.0
                for s in subsets:
                    ids = [t.id.split(".", 1)[1] for t in report.tasks if t.id.startswith(s + ".")]
                    r = agentdojo_harness.run_oracle(s, ids, Path(tmp) / "logs")
                    their_n += r["tasks"]
                    their_s += r["seconds"]
        ours = total_run / seconds
        rows += [
            (f"{family}: tasks run / full marks by their own check", f"{total_run} / {total_full}", "all"),
            (f"{family}: oracle episodes/s, toolshift over in-memory MCP, judged by their check", f"{ours:.1f}", "—"),
            (f"{family}: oracle episodes/s through their own harness ({'inference_multi_turn_FC' if family == 'bfcl' else 'benchmark_suite_without_injections'})", f"{their_n / their_s:.1f}", "—"),
            (f"{family}: task export (gold replayed on the world), seconds", f"{export_s:.1f}", "—"),
        ]  # fmt: skip
        if family == "bfcl":
            rows += [
                ("bfcl: BFCL's multi_turn_checker alone on the oracle's calls, episodes/s", f"{total_run / check_s:.1f}", "—"),
                ("bfcl: their harness then their checker (inference + eval), episodes/s", f"{their_n / (their_s + check_s):.1f}", "—"),
            ]  # fmt: skip
    write_text_atomic(RESULTS, "\n".join(lines) + "\n")
    record(
        "external worlds: BFCL multi-turn and AgentDojo oracle",
        rows,
        note=f"`{command}`. One process, sequential episodes after 3 warm-up episodes; toolshift's figure "
        "includes the MCP round trips, the scripted user and the benchmark's own check per episode; BFCL's "
        "harness figure is its inference loop alone, then with its checker's time over the same calls added; "
        "AgentDojo's includes its utility check and log writing.",
    )


if __name__ == "__main__":
    main()
