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

from toolshift.flows.values import call_key, decode_output
from toolshift.models import Effect
from toolshift.traces.episode import Episode, Message, paired_calls
from toolshift.traces.result_values import ResultForm

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Catalog:
    """The little of a tool catalog flows need: the domain, each tool's effect, and which tools do not exist.

    Built from `toolshift.traces.catalog.ToolCatalog` with `Catalog.of`, or from a plain mapping in tests.
    A call to a tool that does not exist (listed with `exists: false`, or not listed at all) touches no
    world: it is neither a read nor a write, and its episode stays in (seed 003).
    """

    domain: str
    effects: Mapping[str, Effect]
    absent: frozenset[str] = frozenset()
    """Names listed as not existing: tools some run called that the harness never offered."""
    results: ResultForm = "json"
    """How the tools print their results (`ToolCatalog.results`): what `build_timeline` reads them as."""

    @classmethod
    def of(cls, catalog: Any) -> Catalog:
        """From a ToolCatalog (anything with `domain` and `effects()`, and `tools` with `exists`) or a Catalog."""
        if isinstance(catalog, Catalog):
            return catalog
        absent = frozenset(t.name for t in getattr(catalog, "tools", ()) if not getattr(t, "exists", True))
        results = getattr(catalog, "results", "json")
        return cls(domain=catalog.domain, effects=dict(catalog.effects()), absent=absent, results=results)

    def fingerprint(self) -> str:
        """A digest of the domain and its real tools' effects: a flow is only served against the same one.

        Tools that do not exist are no part of it: each conversion of a domain's runs lists the names its
        own agents made up, and a flow learned from one agent's runs must replay another's.
        """
        real = sorted((name, effect) for name, effect in self.effects.items() if name not in self.absent)
        body = json.dumps({"domain": self.domain, "effects": real}, sort_keys=True)
        return "sha256:" + hashlib.sha256(body.encode()).hexdigest()[:16]

    def effect(self, tool: str) -> Effect:
        """The tool's effect; `neither` for a tool the catalog does not list (it does not exist)."""
        return self.effects.get(tool, "neither")

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

    def next_turn_call(self, position: int) -> Call | None:
        """The first call of the next assistant turn that makes calls after event `position`, unless a user
        message comes first (then the agent was answering the user, not going on)."""
        for later in self.events[position + 1 :]:
            if isinstance(later, UserEvent):
                return None
            if isinstance(later, TurnEvent) and self.turns[later.turn]:
                return self.calls[self.turns[later.turn][0]]
        return None

    def _first_write(self) -> int:
        for call in self.calls:
            if call.by_agent and call.effect == "write":
                return call.index
        return len(self.calls)


def unlisted_calls(episode: Episode, catalog: Catalog) -> dict[str, int]:
    """Calls the episode makes to tools the catalog does not list, by tool name."""
    counts: dict[str, int] = {}
    for message in episode.messages:
        for tc in message.tool_calls or ():
            if tc.name not in catalog.effects:
                counts[tc.name] = counts.get(tc.name, 0) + 1
    return counts


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


def agent_name(episode: Episode) -> str:
    """Who acted, as flows tell agents apart: the model, with the harness's agent when that names something
    else (τ²-bench's `llm_agent` runs many models: `gpt-4o (llm_agent)`); the agent alone where the converter
    names it by its model (τ-bench, BFCL, AgentDojo, WorkBench)."""
    agent, model = episode.agent, episode.model
    if not model or model == agent:
        return agent or model or "agent"
    return f"{model} ({agent})" if agent else model


def build_timeline(episode: Episode, catalog: Catalog) -> Timeline:
    """The episode's events and calls; a call to a tool the catalog does not list, or a malformed call, is `neither`."""
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
            effect = "neither" if tc.malformed else catalog.effect(tc.name)
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
            c.index, c.turn, c.tool, c.arguments, c.key, c.effect, c.by_agent, text,
            decode_output(text, catalog.results), error,
            len(text or "") / CHARS_PER_TOKEN,
        )  # fmt: skip
    timeline = Timeline(
        episode_id=episode.id,
        task_id=str(episode.task_id),
        agent=agent_name(episode),
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
class Unlisted:
    """Calls to tools the catalog does not list (tools that do not exist), counted as neither, by tool."""

    episodes: int = 0
    by_tool: dict[str, int] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(self.by_tool.values())

    def add(self, counts: Mapping[str, int]) -> None:
        if counts:
            self.episodes += 1
            for name, n in counts.items():
                self.by_tool[name] = self.by_tool.get(name, 0) + n

    def describe(self) -> str:
        if not self.episodes:
            return "no call to a tool the catalog lacks"
        tools = ", ".join(
            f"{name} ({n})" for name, n in sorted(self.by_tool.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        return (
            f"{self.calls} calls in {self.episodes} episodes to tools the catalog lacks, counted as neither "
            f"reads nor writes: {tools}"
        )


def timelines(
    episodes: Iterable[Episode], catalog: Catalog, unlisted: Unlisted | None = None
) -> list[Timeline]:
    """Every episode's timeline; calls to tools the catalog does not list are counted in `unlisted`."""
    out = []
    for episode in episodes:
        if unlisted is not None:
            unlisted.add(unlisted_calls(episode, catalog))
        out.append(build_timeline(episode, catalog))
    return out
