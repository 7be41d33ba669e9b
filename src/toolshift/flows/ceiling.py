"""The read-only ceiling: turns a flow that binds from results could save at best, and what bounds it.

A turn is in the ceiling when every call in it is a read, a tool has responded before it (so a lookup
could have been made since the agent's last write), and every argument value is already a value in an
earlier result, or the call takes no argument. Two more counts let the user's words (a value the user
wrote, case-insensitively) and constants (an argument passed with one value every time) count too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolshift.flows.learn import constant_value_allowed
from toolshift.flows.timeline import OtherCallsEvent, Timeline, TurnEvent, UserEvent
from toolshift.flows.values import canonical, leaf_values, scalar_tokens


@dataclass
class TurnAnatomy:
    """Counts of one set of episodes' turns: replies, writes, reads and the ceiling's four counts."""

    episodes: int = 0
    turns: int = 0
    replies: int = 0
    write_turns: int = 0
    read_turns: int = 0
    ceiling: int = 0
    with_words: int = 0
    with_constants: int = 0
    with_both: int = 0
    ceiling_turns: dict[str, list[int]] = field(default_factory=dict)

    def add(self, other: TurnAnatomy) -> None:
        for name in ("episodes", "turns", "replies", "write_turns", "read_turns", "ceiling", "with_words",
                     "with_constants", "with_both"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.ceiling_turns.update(other.ceiling_turns)

    def share(self, name: str) -> float:
        return getattr(self, name) / self.turns if self.turns else 0.0


def episode_constants(timelines: Iterable[Timeline]) -> dict[tuple[str, str], str]:
    """Arguments of reads the agents passed with one value every time (at least twice; no digit, no '@')."""
    calls: dict[str, int] = defaultdict(int)
    present: dict[tuple[str, str], int] = defaultdict(int)
    values: dict[tuple[str, str], set[str]] = defaultdict(set)
    raw: dict[tuple[str, str], Any] = {}
    for t in timelines:
        for c in t.calls:
            if not c.by_agent or c.effect != "read":
                continue
            calls[c.tool] += 1
            for name, value in c.arguments.items():
                present[(c.tool, name)] += 1
                values[(c.tool, name)].add(canonical(value))
                raw.setdefault((c.tool, name), value)
    return {
        key: next(iter(vals))
        for key, vals in values.items()
        if len(vals) == 1 and present[key] == calls[key[0]] >= 2 and constant_value_allowed(raw[key])
    }


def _value_ok(value: Any, results: set[str], words: str | None, constant: str | None) -> bool:
    if constant is not None and canonical(value) == constant:
        return True
    for leaf in leaf_values(value):
        token = canonical(leaf)
        if token in results:
            continue
        if words is not None and token and token.lower() in words:
            continue
        return False
    return True


def episode_anatomy(timeline: Timeline, constants: dict[tuple[str, str], str] | None = None) -> TurnAnatomy:
    """Turn anatomy and ceiling counts of one episode."""
    constants = constants or {}
    out = TurnAnatomy(episodes=1, turns=len(timeline.turns))
    results: set[str] = set()
    words = ""
    responded = False
    ceiling_turns = []
    for event in timeline.events:
        if isinstance(event, UserEvent):
            words += "\n" + event.text.lower()
        elif isinstance(event, OtherCallsEvent):
            for i in event.calls:
                results |= scalar_tokens(timeline.calls[i].output)
            responded = True
        elif isinstance(event, TurnEvent):
            indices = timeline.turns[event.turn]
            if not indices:
                out.replies += 1
                continue
            calls = [timeline.calls[i] for i in indices]
            if any(c.effect == "write" for c in calls):
                out.write_turns += 1
            elif all(c.effect == "read" for c in calls):
                out.read_turns += 1
                if responded:
                    flags = [True, True, True, True]
                    for c in calls:
                        for name, value in c.arguments.items():
                            const = constants.get((c.tool, name))
                            checks = (
                                _value_ok(value, results, None, None),
                                _value_ok(value, results, words, None),
                                _value_ok(value, results, None, const),
                                _value_ok(value, results, words, const),
                            )
                            flags = [f and ok for f, ok in zip(flags, checks, strict=True)]
                    out.ceiling += flags[0]
                    out.with_words += flags[1]
                    out.with_constants += flags[2]
                    out.with_both += flags[3]
                    if flags[0]:
                        ceiling_turns.append(event.turn)
            for c in calls:
                results |= scalar_tokens(c.output)
            responded = True
    out.ceiling_turns[timeline.episode_id] = ceiling_turns
    return out


def anatomy(
    timelines: Sequence[Timeline], *, constants: bool = True
) -> tuple[TurnAnatomy, dict[str, TurnAnatomy]]:
    """The anatomy of all episodes, and of each episode by id (for per-task statistics)."""
    consts = episode_constants(timelines) if constants else {}
    total, per_episode = TurnAnatomy(), {}
    for t in timelines:
        a = episode_anatomy(t, consts)
        per_episode[t.episode_id] = a
        total.add(a)
    return total, per_episode


@dataclass
class RepeatedReads:
    reads: int = 0
    repeated: int = 0


def repeated_reads(timelines: Iterable[Timeline]) -> dict[str, RepeatedReads]:
    """Per agent: its reads, and those it made again with the same arguments and no write of its own between."""
    out: dict[str, RepeatedReads] = defaultdict(RepeatedReads)
    for t in timelines:
        seen: set[str] = set()
        counts = out[t.agent]
        for c in t.calls:
            if not c.by_agent:
                continue
            if c.effect == "write":
                seen.clear()
            elif c.effect == "read":
                counts.reads += 1
                if c.key in seen:
                    counts.repeated += 1
                seen.add(c.key)
    return dict(out)
