"""Turn anatomy: per group of episodes, how many agent turns are replies, write turns and read-only turns.

A turn is an assistant message. A turn without calls is a reply. A turn with calls is a write turn if
any call writes, else a read turn if any call reads (the rest being `neither` tools), else a
`neither` turn (only calls that touch no world: think, calculate, transfer, tools that do not exist,
malformed calls — `ToolCall.malformed`, which no harness ran). A turn with a call to a tool its
domain's catalog does not list, and no write, is an `unknown` turn: it is counted apart, never guessed.
Replies + writes + reads + neither + unknown = 100% of turns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from toolshift.models import Effect
from toolshift.traces.episode import Episode, Message

TurnKind = Literal["reply", "write", "read", "neither", "unknown"]
GROUP_KEYS = ("domain", "agent", "model", "harness")


def turn_kind(message: Message, effects: Mapping[str, Effect]) -> TurnKind:
    """Classify one assistant message (see the module docstring)."""
    calls = message.tool_calls or []
    if not calls:
        return "reply"
    labels = ["neither" if c.malformed else effects.get(c.name) for c in calls]
    if "write" in labels:
        return "write"
    if None in labels:
        return "unknown"
    if "read" in labels:
        return "read"
    return "neither"


@dataclass
class Anatomy:
    """Counts for one group of episodes."""

    episodes: int = 0
    tasks: set[tuple[str, str]] = field(default_factory=set)
    """(domain, task id) pairs."""
    kinds: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    unknown_tools: Counter[str] = field(default_factory=Counter)

    @property
    def turns(self) -> int:
        return sum(self.kinds.values())

    def share(self, kind: TurnKind) -> float:
        return 100.0 * self.kinds[kind] / self.turns if self.turns else 0.0

    def add(self, episode: Episode, effects: Mapping[str, Effect]) -> None:
        self.episodes += 1
        self.tasks.add((episode.domain, episode.task_id))
        for message in episode.messages:
            if message.role != "assistant":
                continue
            self.kinds[turn_kind(message, effects)] += 1
            for call in message.tool_calls or []:
                self.calls[call.name] += 1
                if call.name not in effects and not call.malformed:
                    self.unknown_tools[call.name] += 1

    def as_dict(self) -> dict[str, object]:
        return {
            "episodes": self.episodes,
            "tasks": len(self.tasks),
            "turns": self.turns,
            "replies_pct": round(self.share("reply"), 2),
            "write_turns_pct": round(self.share("write"), 2),
            "read_only_turns_pct": round(self.share("read"), 2),
            "neither_turns_pct": round(self.share("neither"), 2),
            "unknown_turns_pct": round(self.share("unknown"), 2),
            "turn_counts": dict(sorted(self.kinds.items())),
            "calls": sum(self.calls.values()),
            "unknown_tools": dict(sorted(self.unknown_tools.items())),
        }


def anatomy(
    episodes: Iterable[Episode],
    effects: Mapping[str, Mapping[str, Effect]] | Callable[[Episode], Mapping[str, Effect]],
    by: tuple[str, ...] = ("domain", "agent"),
) -> dict[tuple[str, ...], Anatomy]:
    """Anatomy per group (`by` ⊆ domain, agent, model, harness), streaming over `episodes`.

    `effects` maps a domain to its tool effects (a catalog's `effects()`), or is a function giving
    an episode's tool effects.
    """
    if callable(effects):
        effects_of = effects
    else:
        by_domain = effects

        def effects_of(episode: Episode) -> Mapping[str, Effect]:
            return by_domain.get(episode.domain, {})

    for name in by:
        if name not in GROUP_KEYS:
            raise ValueError(f"cannot group by {name!r}; choose from {', '.join(GROUP_KEYS)}")
    groups: dict[tuple[str, ...], Anatomy] = {}
    for episode in episodes:
        key = tuple(str(getattr(episode, k) or "-") for k in by)
        groups.setdefault(key, Anatomy()).add(episode, effects_of(episode))
    return dict(sorted(groups.items()))


def total(groups: Mapping[tuple[str, ...], Anatomy]) -> Anatomy:
    """All groups together."""
    out = Anatomy()
    for group in groups.values():
        out.episodes += group.episodes
        out.tasks |= group.tasks
        out.kinds.update(group.kinds)
        out.calls.update(group.calls)
        out.unknown_tools.update(group.unknown_tools)
    return out
