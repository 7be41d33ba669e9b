"""An episode as flows see it: user messages, assistant turns and their calls, each call's effect and result.

Results are paired with calls in order (`toolshift.traces.episode.paired_calls`: published ids repeat). Token counts per
turn come from the episode's usage where present, else are estimated at four characters a token.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolshift.errors import BadInputError
from toolshift.flows.values import call_key, decode_output
from toolshift.models import Effect
from toolshift.traces.episode import Episode, Message, paired_calls

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Catalog:
    """The little of a tool catalog flows need: the domain and each tool's effect.

    Built from `toolshift.traces.catalog.ToolCatalog` with `Catalog.of`, or from a plain mapping in tests.
    """

    domain: str
    effects: Mapping[str, Effect]

    @classmethod
    def of(cls, catalog: Any) -> Catalog:
        """From a ToolCatalog (anything with `domain` and `effects()`) or a Catalog."""
        if isinstance(catalog, Catalog):
            return catalog
        return cls(domain=catalog.domain, effects=dict(catalog.effects()))

    def fingerprint(self) -> str:
        """A digest of the domain and every tool's effect: a flow is only served against the same one."""
        body = json.dumps({"domain": self.domain, "effects": sorted(self.effects.items())}, sort_keys=True)
        return "sha256:" + hashlib.sha256(body.encode()).hexdigest()[:16]

    def is_read(self, tool: str) -> bool:
        return self.effects.get(tool) == "read"

    def is_write(self, tool: str) -> bool:
        return self.effects.get(tool) == "write"


@dataclass(frozen=True, slots=True)
class Call:
    """One call made in an episode, by the agent or by another party (the user's own tools)."""

    index: int
    turn: int
    """The assistant turn it belongs to; -1 for another party's call."""
    tool: str
    arguments: dict[str, Any]
    key: str
    effect: Effect
    by_agent: bool
    output_text: str | None
    output: Any
    error: bool
    output_tokens: float


@dataclass(frozen=True, slots=True)
class UserEvent:
    text: str


@dataclass(frozen=True, slots=True)
class TurnEvent:
    turn: int


@dataclass(frozen=True, slots=True)
class OtherCallsEvent:
    calls: tuple[int, ...]


Event = UserEvent | TurnEvent | OtherCallsEvent


@dataclass
class Timeline:
    """The events of one episode in order, with indexes the learner, decider and replay share."""

    episode_id: str
    task_id: str
    agent: str
    domain: str
    success: bool
    events: list[Event]
    calls: list[Call]
    turns: list[tuple[int, ...]]
    """Call indices of each assistant turn (an empty tuple for a reply)."""
    turn_prompt_tokens: list[float]
    turn_completion_tokens: list[float]
    tokens_estimated: bool
    next_agent_write: list[int] = field(default_factory=list)
    """For each call index i: the index of the agent's first write after i (len(calls) if none)."""
    agent_calls_by_key: dict[str, list[int]] = field(default_factory=dict)
    agent_calls_by_tool: dict[str, list[int]] = field(default_factory=dict)

    def later_call(self, key: str, after: int) -> int | None:
        """The agent's first call with this key after call `after`, if it comes before the agent's next write."""
        limit = self.next_agent_write[after] if 0 <= after < len(self.calls) else self._first_write()
        for j in self.agent_calls_by_key.get(key, ()):
            if j > after:
                return j if j < limit else None
        return None

    def nearest_call(self, tool: str, at: int) -> int | None:
        """The agent's call of `tool` nearest to call index `at` (earlier on a tie)."""
        best, best_distance = None, None
        for j in self.agent_calls_by_tool.get(tool, ()):
            distance = abs(j - at)
            if best_distance is None or distance < best_distance:
                best, best_distance = j, distance
        return best

    def _first_write(self) -> int:
        for call in self.calls:
            if call.by_agent and call.effect == "write":
                return call.index
        return len(self.calls)


def missing_tools(episode: Episode, catalog: Catalog) -> set[str]:
    """Tools the episode calls that the catalog does not list."""
    names = set()
    for message in episode.messages:
        for tc in message.tool_calls or ():
            if tc.name not in catalog.effects:
                names.add(tc.name)
    return names


def is_success(episode: Episode) -> bool:
    """Successful by the episode's own verdict: `success`, else a reward of 1."""
    outcome = episode.outcome
    if outcome is None:
        return False
    if outcome.success is not None:
        return bool(outcome.success)
    return outcome.reward is not None and outcome.reward >= 1.0


def _text_len(message: Message) -> int:
    size = len(message.content or "")
    for tc in message.tool_calls or ():
        size += len(tc.name) + len(json.dumps(tc.arguments, default=str))
    return size


def build_timeline(episode: Episode, catalog: Catalog) -> Timeline:
    """The episode's events and calls. Every tool it calls must be in the catalog (see `missing_tools`)."""
    calls: list[Call] = []
    events: list[Event] = []
    turns: list[tuple[int, ...]] = []
    prompt_tokens: list[float] = []
    completion_tokens: list[float] = []
    estimated = False
    results = {id(tc): result for _, tc, result in paired_calls(episode)}
    outputs: dict[int, tuple[str | None, bool]] = {}
    chars_so_far = 0

    def add_calls(message: Message, position: int, turn: int, by_agent: bool) -> tuple[int, ...]:
        """Append the message's tool calls (turn -1: another party's) and note their results."""
        indices = []
        for tc in message.tool_calls or ():
            effect = catalog.effects.get(tc.name)
            if effect is None:
                raise BadInputError(
                    f"tool {tc.name!r} is not in the {catalog.domain!r} catalog",
                    source=episode.id,
                    record=position,
                    field="tool_calls",
                )
            index = len(calls)
            calls.append(
                Call(index, turn, tc.name, tc.arguments, call_key(tc.name, tc.arguments), effect,
                     by_agent, None, None, False, 0.0)
            )  # fmt: skip
            indices.append(index)
            result = results.get(id(tc))
            if result is not None:
                outputs[index] = (result.content, result.error)
        return tuple(indices)

    for position, message in enumerate(episode.messages):
        if message.role == "assistant":
            indices = add_calls(message, position, len(turns), by_agent=True)
            usage = message.usage
            if usage is not None and usage.prompt_tokens is not None and usage.completion_tokens is not None:
                prompt_tokens.append(float(usage.prompt_tokens))
                completion_tokens.append(float(usage.completion_tokens))
            else:
                estimated = True
                prompt_tokens.append(chars_so_far / CHARS_PER_TOKEN)
                completion_tokens.append(_text_len(message) / CHARS_PER_TOKEN)
            events.append(TurnEvent(len(turns)))
            turns.append(indices)
        elif message.role == "user":
            if message.tool_calls:
                events.append(OtherCallsEvent(add_calls(message, position, -1, by_agent=False)))
            if message.content:
                events.append(UserEvent(message.content))
        chars_so_far += _text_len(message)
    for index, (text, error) in outputs.items():
        c = calls[index]
        calls[index] = Call(
            c.index, c.turn, c.tool, c.arguments, c.key, c.effect, c.by_agent, text, decode_output(text), error,
            len(text or "") / CHARS_PER_TOKEN,
        )  # fmt: skip
    timeline = Timeline(
        episode_id=episode.id,
        task_id=str(episode.task_id),
        agent=episode.agent or episode.model or "agent",
        domain=episode.domain,
        success=is_success(episode),
        events=events,
        calls=calls,
        turns=turns,
        turn_prompt_tokens=prompt_tokens,
        turn_completion_tokens=completion_tokens,
        tokens_estimated=estimated,
    )
    _index(timeline)
    return timeline


def _index(timeline: Timeline) -> None:
    calls = timeline.calls
    next_write = [len(calls)] * len(calls)
    upcoming = len(calls)
    for i in range(len(calls) - 1, -1, -1):
        next_write[i] = upcoming
        if calls[i].by_agent and calls[i].effect == "write":
            upcoming = i
    timeline.next_agent_write = next_write
    for call in calls:
        if call.by_agent:
            timeline.agent_calls_by_key.setdefault(call.key, []).append(call.index)
            timeline.agent_calls_by_tool.setdefault(call.tool, []).append(call.index)


@dataclass
class Excluded:
    """Episodes left out because the catalog does not list a tool they call, counted by tool."""

    episodes: int = 0
    by_tool: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        if not self.episodes:
            return "no episode excluded"
        tools = ", ".join(f"{name} ({n})" for name, n in sorted(self.by_tool.items(), key=lambda kv: -kv[1]))
        return f"{self.episodes} episodes excluded: tools missing from the catalog: {tools}"


def timelines(
    episodes: Iterable[Episode], catalog: Catalog, excluded: Excluded | None = None
) -> list[Timeline]:
    """Timelines of the episodes whose tools the catalog lists; the rest are counted in `excluded`."""
    out = []
    for episode in episodes:
        missing = missing_tools(episode, catalog)
        if missing:
            if excluded is not None:
                excluded.episodes += 1
                for name in missing:
                    excluded.by_tool[name] = excluded.by_tool.get(name, 0) + 1
            continue
        out.append(build_timeline(episode, catalog))
    return out
