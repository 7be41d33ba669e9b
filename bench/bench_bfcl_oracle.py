"""Benchmark: a BFCL multi-turn oracle episode, toolshift (judged by BFCL's checker) vs BFCL's own harness +
checker, interleaved entry by entry.

Unit of work, per BFCL multi-turn entry (all four categories): side A is toolshift's `run_episode` on the
entry's task (`--world bfcl`: the entry's own world, the oracle agent, the scripted user, the episode
record) with the outcome judged by BFCL's `multi_turn_checker`; side B is BFCL's
`BaseHandler.inference` (its multi-turn loop, driven by `bfcl_harness.OracleHandler`, which plays the
possible answer) followed by BFCL's eval of that one result (`eval_runner._evaluate_single_multi_turn_entry`,
decode + `multi_turn_checker`; that module imports every model vendor's SDK, so its steps are written out
here as `bfcl_eval_entry`). toolshift must give full marks on every entry; an entry BFCL's harness cuts
short (its 20 steps per turn, fewer than the longest possible answers need) did less work on B's side,
so its pairs are left out of the ratios and counted. BFCL prints every step: its
stdout goes to a buffer, as in `bfcl_harness.run_oracle`. Ratios are episodes per second, B's time over A's.

    .venv/bin/python bench/bench_bfcl_oracle.py [--limit N] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import io
import time
from typing import Any

from paired import Paired, Sample, interleave_async
from toolshift.agents.config import RunConfig, make_agent, make_user
from toolshift.agents.loop import run_episode
from toolshift.agents.worlds import world_opener
from toolshift.models import Task
from toolshift.report.benchlog import record
from toolshift.world.external import bfcl, bfcl_harness, export_tasks

MAX_TURNS = 100
"""As bench_external_oracle: the longest reference needs 37 agent turns."""


def _forget(entry_id: str) -> None:
    """BFCL's executor keeps each run's instances in its module globals: drop this entry's (untimed)."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    for key in [k for k in vars(multi_turn_utils) if f"_{entry_id}_" in k]:
        vars(multi_turn_utils).pop(key, None)


def bfcl_eval_entry(handler: Any, result: Any, e: bfcl.Entry, prompt: dict[str, Any]) -> bool:
    """BFCL's `_evaluate_single_multi_turn_entry` for one entry: its steps, with BFCL's own functions."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response

    if not isinstance(result, list) or len(result) != len(e.ground_truth):
        return False
    decoded = []
    for turn in result:
        steps = []
        for step in turn:
            try:
                calls = handler.decode_execute(step, has_tool_call_tag=False)
            except Exception:  # BFCL's eval skips a step it cannot decode
                continue
            if not is_empty_execute_response(calls):
                steps.append(calls)
        decoded.append(steps)
    prompt.pop("function", None)
    verdict = multi_turn_checker(decoded, e.ground_truth, prompt, e.category, handler.registry_name)
    return bool(verdict["valid"])


def _cut_short(result: Any, e: bfcl.Entry) -> bool:
    """BFCL's inference stopped before the possible answer's calls of some turn were all made (its step limit
    per turn): fewer turns, or a turn with fewer call steps (the oracle makes one call per step)."""
    if not isinstance(result, list) or len(result) != len(e.ground_truth):
        return True
    return any(
        sum(isinstance(step, list) for step in turn) < len(calls)
        for turn, calls in zip(result, e.ground_truth, strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None, help="entries per category")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    from bfcl_eval.utils import populate_test_cases_with_predefined_functions

    tasks = export_tasks("bfcl", subsets=list(bfcl.CATEGORIES), limit=args.limit).tasks
    config = RunConfig(world="bfcl", model="oracle", max_turns=MAX_TURNS)
    opener = world_opener("bfcl")
    handler = bfcl_harness._handler_class()()
    prompts = {
        t.id: populate_test_cases_with_predefined_functions(
            [{**bfcl.entry(t.id).test_entry(), "missed_function": dict(bfcl.entry(t.id).missed_function)}]
        )[0]
        for t in tasks
    }
    failed: list[str] = []
    cut_short: set[str] = set()

    async def toolshift(t: Task) -> None:
        e = await run_episode(
            t,
            make_agent(config, t, 0),
            make_user(config, t, 0),
            opener,
            episode_id=t.id,
            limits=config.limits(),
        )
        if not (e.outcome and e.outcome.success):
            failed.append(f"toolshift {t.id}")

    async def theirs(t: Task) -> Sample:
        e = bfcl.entry(t.id)
        prompt = copy.deepcopy(prompts[t.id])
        started = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            result, _ = handler.inference(prompt, include_input_log=False, exclude_state_log=False)
            valid = bfcl_eval_entry(handler, result, e, prompt)
        sample = Sample(time.perf_counter() - started[0], time.process_time() - started[1])
        _forget(e.id)
        if _cut_short(result, e):
            cut_short.add(t.id)
        elif not valid:
            failed.append(f"BFCL {t.id}")
        return sample

    async def go() -> Any:
        for t in tasks[:5]:  # warm imports and caches on both sides
            await toolshift(t)
            await theirs(t)
        return await interleave_async(
            toolshift, theirs, tasks, rounds=args.rounds, names=("toolshift", "BFCL harness + checker")
        )

    every = asyncio.run(go())
    if failed:
        raise SystemExit(f"{len(failed)} episodes without full marks, first {failed[0]}")
    plan = [t.id for _ in range(args.rounds) for t in tasks]
    kept = [i for i, tid in enumerate(plan) if tid not in cut_short]
    run = Paired(every.a, every.b, [every.a_samples[i] for i in kept], [every.b_samples[i] for i in kept],
                 every.load_start, every.load_end)  # fmt: skip
    command = "python bench/bench_bfcl_oracle.py" + "".join(
        f" --{k} {v}" for k, v in (("limit", args.limit), ("rounds", args.rounds)) if v not in (None, 1)
    )
    record(
        "BFCL multi-turn oracle: toolshift (BFCL's checker) vs BFCL's harness + checker, interleaved",
        [
            ("BFCL entries × rounds; toolshift's full marks", f"{len(tasks)} × {args.rounds}; all", "all"),
            (
                "entries BFCL's own harness cut short (its steps-per-turn limit; their pairs left out)",
                f"{len(cut_short)}: {', '.join(sorted(cut_short)) or '—'}",
                "",
            ),
            *run.rows("oracle episode", clocks=("wall", "cpu")),
            (
                "episodes/s ratio, toolshift / BFCL (their time / ours), p50/p50 · p90/p90 (wall)",
                f"{run.ratio(0.5):.2f}× · {run.ratio(0.9):.2f}×",
                "≥ 1.5×",
            ),
        ],
        note=f"`{command}`. {__doc__.split(chr(10) + chr(10))[1]} {run.note()}",
    )


if __name__ == "__main__":
    main()
