"""Benchmark: a flows decision beside the lookup it proposes (τ² airline `World.call`), interleaved.

Unit of work, per decision of τ-bench airline's real GPT-4o runs that proposes a lookup: side A is
`World.call` of that decision's first proposed lookup on a τ² airline world in this process; side B is the
decision itself, `DecisionSession.after_call` on the agent's call and its result text (decode the result,
index it, weigh the site's lookups; reach, θ = 0.1), from the session's state just before that call (a copy
made before the pairing, one per round). Both sides run in this process, one after the other, call by call.
A second pairing gives side B the result as data (`after_call_value`, the result decoded before the
pairing): what a caller holding the result's value already (a gateway in front of a world in its own
process, or one reading MCP's structured content) would pay.

    .venv/bin/python bench/bench_flows_decide_lookup.py [--rounds N] [--walk-ranks K] [--records] [--ints] [--fallbacks]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paired import interleave, measure, percentile
from toolshift.flows.decide import Decider, DecisionSession
from toolshift.flows.learn import learn_flow
from toolshift.flows.timeline import Catalog, TurnEvent, timelines
from toolshift.flows.values import decode_output
from toolshift.report.benchlog import record
from toolshift.world import World, load_domain

DATA = Path(os.environ.get("TOOLSHIFT_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "data"


@dataclass
class Decision:
    """One decision that proposes a lookup: the call it follows, session copies, and the first lookup."""

    tool: str
    arguments: dict[str, Any]
    output_text: str | None
    lookup: tuple[str, dict[str, Any]]
    copies: list[DecisionSession] = field(default_factory=list)
    value: Any = None
    """The result as data (`decode_output` of the text), for the pairing that is given it."""


def decisions(
    decider: Decider, tl: list, rounds: int
) -> tuple[list[Decision], list[tuple[DecisionSession, Any]]]:
    """Every decision proposing a lookup (with `rounds` copies of the session before it), and every decision."""
    out: list[Decision] = []
    every: list[tuple[DecisionSession, Any]] = []
    for t in tl:
        session = decider.session()
        for event in t.events:
            if not isinstance(event, TurnEvent):
                continue
            for i in t.turns[event.turn]:
                c = t.calls[i]
                memo = {id(decider): decider}
                before = [copy.deepcopy(session, memo={**memo}) for _ in range(2 * rounds + 2)]
                every.append((before.pop(), c))
                lookups = session.after_call(c.tool, c.arguments, c.output_text)
                if lookups:
                    first = lookups[0]
                    lookup = (first.tool, first.arguments)
                    value = decode_output(c.output_text)
                    out.append(Decision(c.tool, c.arguments, c.output_text, lookup, before, value))
    return out, every


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--walk-ranks", type=int, default=0)
    for option in ("records", "ints", "fallbacks"):  # format 5's binding options (learn_flow's keywords)
        parser.add_argument(f"--{option}", action="store_true")
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"real data not found at {DATA}")
    from toolshift.traces.taubench import convert_taubench_v1, taubench_domain

    conv = convert_taubench_v1(DATA / "tau-bench" / "gpt-4o-airline.trials-0-1.json")
    catalog = Catalog.of(conv.catalogs[taubench_domain("airline")])
    tl = timelines(conv.episodes, catalog)
    options = {o: getattr(args, o) for o in ("records", "ints", "fallbacks")}
    flow = learn_flow(tl, catalog, learn_from_all=True, walk_ranks=args.walk_ranks, **options)
    decider = Decider(flow, "reach", 0.1, catalog)
    items, every = decisions(decider, tl, args.rounds)
    world = World(load_domain("tau2-airline"))
    found = sum(world.call(*d.lookup).ok for d in items)

    def lookup(d: Decision) -> None:
        world.call(*d.lookup)

    def decide(d: Decision) -> None:
        d.copies.pop().after_call(d.tool, d.arguments, d.output_text)

    def decide_value(d: Decision) -> None:
        d.copies.pop().after_call_value(d.tool, d.arguments, d.value)

    for d in items[:50]:  # warm both sides (the copies kept for the pairing are the last `rounds`)
        lookup(d)
        decide(d)
    run = interleave(lookup, decide, items, rounds=args.rounds, names=("World.call lookup", "decision"))
    given = interleave(
        lookup,
        decide_value,
        items,
        rounds=args.rounds,
        names=("World.call lookup", "decision given the value"),
    )
    alone = measure(lambda sc: sc[0].after_call(sc[1].tool, sc[1].arguments, sc[1].output_text), every)
    walls = [s.wall for s in alone]
    p50, p90 = percentile(walls, 0.5) * 1e6, percentile(walls, 0.9) * 1e6
    command = (
        "python bench/bench_flows_decide_lookup.py"
        + (f" --rounds {args.rounds}" + (f" --walk-ranks {args.walk_ranks}" if args.walk_ranks else ""))
        + "".join(f" --{o}" for o, on in options.items() if on)
    )
    record(
        "flows decision vs the lookup it proposes (τ² airline World.call), interleaved",
        [
            (
                "flow format; decisions proposing a lookup (of all decisions); lookups found on τ² airline",
                f"{flow.format}; {len(items)} (of {len(every)}); {found} of {len(items)}",
                "",
            ),
            *run.rows("decision vs its lookup", scale=1e6, unit="µs"),
            *given.rows("decision given the result as data vs its lookup", scale=1e6, unit="µs"),
            ("every decision alone (proposing or not), p50 / p90", f"{p50:.1f} / {p90:.1f} µs", ""),
            (
                "goal: decision / lookup, p50/p50 (from the text; given the value)",
                f"{run.ratio(0.5):.3f}×; {given.ratio(0.5):.3f}×",
                "≤ 0.1×",
            ),
        ],
        note=f"`{command}`. {__doc__.split(chr(10) + chr(10))[1]} {run.note()} Second pairing: {given.note()}",
    )


if __name__ == "__main__":
    main()
