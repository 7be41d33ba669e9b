"""Named walks (flow format 7): a listing value the user's messages name is walked first, and counted apart.

A walk (format 3) passes a listing's values in document order and scores the next one by how often the agent
went on walking at that site and rank. Where the user has named values of the listing (a reservation id typed
in a message), the agent opens those, in any order, and then mostly stops: the rank says nothing of that. A
named walk keeps, per site, two more counts (`Walk.named`): state 0, a named value not yet passed (the walk's
pick is that value), and state 1, every named value passed (the pick is the first value not yet passed, as a
walk's). Decisions after a user message that named no value of the listing are counted by rank apart too
(`Walk.unnamed`), so the named ones no longer pull the plain walk's chances down. The user's words are tokens of letters, digits, `_` and `-`, case-folded; a value is named when it
is one of them (a string or an integer of at least three characters). Without user messages (an MCP gateway)
no value is ever named and the walk scores as format 3 does, on its counts over every decision.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from toolshift.flows.model import RankCount, ToolFlow
from toolshift.flows.outputs import OutputIndex, pick_unopened
from toolshift.flows.timeline import OtherCallsEvent, Timeline, TurnEvent, UserEvent
from toolshift.flows.values import is_value

TOKEN = re.compile(r"[0-9a-z_\-]{3,}")
STATES = 2
"""0: a value the user named is not yet passed; 1: every named value was passed."""


def said_tokens(text: str) -> frozenset[str]:
    """The case-folded tokens of a user message that a listing value can match."""
    return frozenset(TOKEN.findall(text.casefold()))


def _spelled(value: Any) -> str | None:
    if isinstance(value, str):
        return value.casefold()
    if type(value) is int:
        return str(value)
    return None


def named_state(values: Sequence[Any], opened: set[Any] | frozenset[Any],
                tokens: frozenset[str]) -> tuple[int, Any] | None:  # fmt: skip
    """(state, the value to pass) for a listing the user's `tokens` name values of; None when they name none."""
    if not tokens:
        return None
    named = [v for v in values if (s := _spelled(v)) is not None and s in tokens]
    if not named:
        return None
    for value in named:
        if value not in opened:
            return 0, value
    return 1, pick_unopened(list(values), opened)


Counts = dict[str, dict[str, list[RankCount]]]
"""Per walk tool, per site: one count per state or rank."""


def learn_named(timelines: Sequence[Timeline], tools: dict[str, ToolFlow], ints: bool = False,
                weights: Mapping[str, int | float] | None = None) -> tuple[Counts, Counts]:  # fmt: skip
    """Per walk tool (its walk over one string binding, not a record walk) and site: the named states' counts,
    by the walks' rule (`n` decisions in that state, the pick the agent's next call `next`, called before the
    agent's next write `reach`); and the walk's rank counts over the decisions after a user message that named
    no value of the listing (`Walk.unnamed`)."""
    walkers = {
        name: (tool.walk.argument, (tool.bindings[tool.walk.argument].source, tool.bindings[tool.walk.argument].path))
        for name, tool in tools.items()
        if tool.walk is not None and tool.record is None and tool.walk.argument in tool.bindings
    }  # fmt: skip
    counts: dict[str, dict[str, list[list[int]]]] = {name: {} for name in walkers}
    plain: dict[str, dict[str, list[list[int]]]] = {name: {} for name in walkers}
    ranks = {name: max((len(row) for row in tools[name].walk.sites.values()), default=1)  # type: ignore[union-attr]
             for name in walkers}  # fmt: skip
    if not walkers:
        return {}, {}
    for timeline in timelines:
        w = weights.get(timeline.episode_id, 1) if weights else 1
        calls, events = timeline.calls, timeline.events
        index = OutputIndex()
        opened: dict[tuple[str, str], set[Any]] = defaultdict(set)
        tokens: frozenset[str] = frozenset()
        for position, event in enumerate(events):
            if isinstance(event, UserEvent):
                tokens |= said_tokens(event.text)
                continue
            if isinstance(event, OtherCallsEvent):
                for i in event.calls:
                    index.observe(calls[i].tool, calls[i].output, track_holders=False, ints=ints)
                continue
            turn = timeline.turns[event.turn] if isinstance(event, TurnEvent) else ()
            if not turn:
                continue
            for i in turn:
                for arg, value in calls[i].arguments.items():
                    if is_value(value, ints):
                        opened[(calls[i].tool, arg)].add(value)
                index.observe(calls[i].tool, calls[i].output, track_holders=False, ints=ints)
            if not tokens:
                continue
            last = turn[-1]
            limit = timeline.next_agent_write[last]
            following = timeline.next_turn_call(position)
            for name, (argument, key) in walkers.items():
                held = index.latest.get(key)
                if held is None:
                    continue
                done = opened[(name, argument)]
                state = named_state(held[0], done, tokens)
                if state is None:
                    pick, table = pick_unopened(held[0], done), plain
                    at, width = min(sum(1 for v in held[0] if v in done), ranks[name] - 1), ranks[name]
                else:
                    pick, table, at, width = state[1], counts, state[0], STATES
                reached = any(
                    calls[j].arguments.get(argument) == pick
                    for j in timeline.agent_calls_by_tool.get(name, ())
                    if last < j < limit
                )
                nxt = (
                    following is not None
                    and following.tool == name
                    and following.arguments.get(argument) == pick
                )
                for i in turn:
                    row = table[name].setdefault(calls[i].tool, [[0, 0, 0] for _ in range(width)])
                    row[at][0] += w
                    row[at][1] += w * nxt
                    row[at][2] += w * reached

    def done(table: dict[str, dict[str, list[list[int]]]]) -> Counts:
        return {
            name: {
                site: [RankCount(n=n, next=x, reach=r) for n, x, r in row]
                for site, row in sorted(sites.items())
            }
            for name, sites in table.items()
            if sites
        }

    return done(counts), done(plain)
