"""Part 1 of the experiment: supply quality without an agent — the exposed tool set against the reference path's.

For every test task × version, the tools each condition exposes are scored against the tools of the
step-optimal reference path (the seed's retrieval P/R/F1, `toolshift.bench.metrics.tool_retrieval`):

* `steward-<kind>`: Steward's initial supply with that library; the user's facts come from the
  scripted user answering the supply's own questions (`ask`, then `ask_more`, as in the
  skill-following episodes);
* `full catalog`: every tool of the version (all 42 domains); `domain catalog`: the task's domain;
* `bm25-instruction@5`: the 5 tools BM25 ranks highest for the task's instruction alone;
* `oracle`: the reference path's own tools (100% by construction: the scale's top).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from toolshift.agents.users import ScriptedUser
from toolshift.bench.metrics import tool_retrieval
from toolshift.intervals import bootstrap_mean
from toolshift.steward.distill import parse_facts
from toolshift.steward.experiment import KINDS, Context, library_path
from toolshift.steward.instruments import ask_text
from toolshift.steward.library import Library
from toolshift.steward.supply import ASK_ROUNDS, Supply


def _sync(coro: Any) -> Any:
    """Run a coroutine that never awaits anything real (the scripted user) to its value."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("the coroutine awaited")


def steward_exposed(supply: Supply, task: Any) -> frozenset[str]:
    """What Steward's initial supply exposes for a task once the scripted user has answered its question."""
    ep = supply.episode(task.public_request)
    user = ScriptedUser(task.public_request, task.instruction)
    phrases = ep.ask()
    facts: dict[str, str] = {}
    asked = set(phrases)
    if phrases:
        facts = parse_facts(_sync(user.respond(ask_text(phrases))).text)
    for _ in range(ASK_ROUNDS):  # as the skill-following instrument asks again
        more = ep.ask_more(facts, asked)
        if not more:
            break
        asked.update(more)
        told = parse_facts(_sync(user.respond(ask_text(more))).text)
        if not set(told) - set(facts):
            break  # the user had nothing more: the instrument stops asking too
        facts.update(told)
    ep.plan(facts)
    return frozenset(ep.exposed)


def supply_quality(
    ctx: Context,
    *,
    sample: int | None = None,
    resamples: int = 1000,
    progress: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Per condition and version: P, R, F1 with bootstrap intervals over tasks, and the mean exposed size."""
    rows: dict[str, dict[int, list[tuple[str, float, float, float, int]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for v in range(1, ctx.versions + 1):
        cat = ctx.catalog(v)
        supplies = {}
        for kind in KINDS:
            with Library.open(library_path(ctx, kind, v)) as lib:
                supplies[kind] = Supply(lib, cat)
        whole = cat.names()
        for r in ctx.refs("test", sample):
            if r.version != v or r.step is None:
                continue
            task = ctx.tasks[r.task_id]
            ref = set(r.step.tools)
            conditions = {f"steward-{k}": steward_exposed(s, task) for k, s in supplies.items()}
            conditions["full catalog"] = whole
            conditions["domain catalog"] = frozenset(cat.domain_tools(task.domain))
            conditions["bm25-instruction@5"] = frozenset(
                supplies["incremental"].tools_for(task.instruction.intent, None, 5)
            )
            conditions["oracle"] = frozenset(ref)
            for name, exposed in conditions.items():
                p, rec, f1 = tool_retrieval(exposed, ref)
                rows[name][v].append((task.id, p, rec, f1, len(exposed)))
            if progress:
                progress()
    out: dict[str, Any] = {}
    for name, by_v in rows.items():
        out[name] = {}
        for v, items in sorted(by_v.items()):
            out[name][f"v{v}"] = {
                m: bootstrap_mean([x[i] for x in items], resamples=resamples).as_dict()
                for i, m in ((1, "P"), (2, "R"), (3, "F1"))
            }
            out[name][f"v{v}"]["exposed"] = round(sum(x[4] for x in items) / max(1, len(items)), 1)
            out[name][f"v{v}"]["n"] = len(items)
    return out
