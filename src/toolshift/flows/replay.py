"""Replay from the record: serve a flow's lookups over recorded episodes and count the turns they save.

The rules (seed 003, "Replaying from the record"): the agent's own call returns what it returned. A lookup
returns what the agent's own later call with the same arguments returned, if that call came before the
agent's next write: exact, and the only kind that counts as a saving. Any other lookup is a detour,
answered with the nearest result of the same tool (so later decisions see a result of the right shape),
marked, never a saving. A turn is saved only when every call in it was answered by a lookup. Other
parties' writes (the user's own tools) do not stop a lookup.

Decisions are made after each of the agent's turns (at the site of each call in it) and after each
lookup's result (chains, a chained lookup scored as its own score times its parent's). With `user_sites`
they are also made after each user message once a tool has responded (a gateway that sees only tool
calls cannot; never before the first tool response, as the ceiling counts).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from toolshift.flows.decide import Decider, DecisionSession
from toolshift.flows.model import ASK_SITE, USER_SITE
from toolshift.flows.timeline import OtherCallsEvent, Timeline, TurnEvent, UserEvent

MAX_LOOKUPS_PER_DECISION = 64


@dataclass(slots=True)
class WeighedLookup:
    """One row of the decision log: a lookup the flow weighed, whether it was made and used."""

    episode: str
    task: str
    agent: str
    decider: str
    threshold: float
    site: str
    after_call: int
    turn: int
    depth: int
    tool: str
    arguments: dict[str, Any]
    score: float
    made: bool
    used: bool
    """The agent made this very call later, before its next write (for a made lookup: it was exact)."""
    detour: bool
    answered_call: int | None = None
    saved_turn: int | None = None
    raw: float = 0.0
    """The model's score before any recalibration (`score` is what the decision compared)."""
    bar: float = 0.0
    """The threshold the lookup was held to."""
    position: int = 0
    """The agent's calls seen so far when it was weighed."""
    intent: str = ""
    """The request's intent words matched so far (toolshift.flows.intent), when the decider matches them."""


@dataclass(slots=True)
class EpisodeReplay:
    """What the flow did in one episode."""

    episode: str
    task: str
    agent: str
    turns: int
    saved_turns: list[int] = field(default_factory=list)
    lookups_made: int = 0
    lookups_used: int = 0
    detours: int = 0
    answered_calls: int = 0
    detour_costs: list[tuple[float, int]] = field(default_factory=list)
    """Per detour: its stand-in result's tokens and the LLM turns left after it (for pricing)."""


@dataclass
class ReplayResult:
    decider: str
    threshold: float
    episodes: list[EpisodeReplay]
    log: list[WeighedLookup]

    @property
    def turns(self) -> int:
        return sum(e.turns for e in self.episodes)

    @property
    def saved(self) -> int:
        return sum(len(e.saved_turns) for e in self.episodes)

    @property
    def made(self) -> int:
        return sum(e.lookups_made for e in self.episodes)

    @property
    def used(self) -> int:
        return sum(e.lookups_used for e in self.episodes)

    @property
    def detours(self) -> int:
        return sum(e.detours for e in self.episodes)

    def summary(self) -> dict[str, Any]:
        n = len(self.episodes)
        return {
            "decider": self.decider,
            "threshold": self.threshold,
            "episodes": n,
            "turns": self.turns,
            "saved_turns": self.saved,
            "saved_share": self.saved / self.turns if self.turns else 0.0,
            "lookups_made": self.made,
            "lookups_used": self.used,
            "detours": self.detours,
            "detours_per_episode": self.detours / n if n else 0.0,
        }


class _EpisodeReplayer:
    def __init__(self, timeline: Timeline, decider: Decider, *, weigh_all: bool, explore: float,
                 rng: random.Random, chain_prior: bool = True, user_sites: bool = False) -> None:  # fmt: skip
        self.chain_prior = chain_prior
        self.user_sites = user_sites
        self.t = timeline
        self.decider = decider
        self.session: DecisionSession = decider.session()
        self.weigh_all = weigh_all or explore > 0
        self.keep_log = weigh_all or explore > 0
        self.explore = explore
        self.rng = rng
        self.cursor = -1
        self.turn = -1
        self.answered_by: dict[int, WeighedLookup] = {}
        self.result = EpisodeReplay(
            timeline.episode_id, timeline.task_id, timeline.agent, len(timeline.turns)
        )
        self.log: list[WeighedLookup] = []

    def run(self) -> tuple[EpisodeReplay, list[WeighedLookup]]:
        t, session = self.t, self.session
        responded = False
        for event in t.events:
            if isinstance(event, TurnEvent):
                self.turn = event.turn
                indices = t.turns[event.turn]
                if not indices:
                    continue
                self.cursor = indices[-1]
                fresh = [i for i in indices if i not in self.answered_by]
                session.position += len(indices) - len(fresh)  # answered by a lookup: still the agent's calls
                for i in fresh:
                    c = t.calls[i]
                    session.observe_call(c.tool, c.arguments, c.output, effect=c.effect, key=c.key)
                responded = True
                for i in fresh:
                    self._decide(t.calls[i].tool)
            elif isinstance(event, OtherCallsEvent):
                for i in event.calls:
                    c = t.calls[i]
                    session.observe_call(c.tool, c.arguments, c.output, effect=c.effect, by_agent=False)
                responded = True
            elif isinstance(event, UserEvent):
                session.observe_user(event.text)
                if responded and self.user_sites:
                    self._decide(USER_SITE)
                elif responded and session.asked:  # format 6: only the reads the message asks for by name
                    self._decide(ASK_SITE)
        for turn_index, indices in enumerate(t.turns):
            if indices and all(i in self.answered_by for i in indices):
                self.result.saved_turns.append(turn_index)
                for i in indices:
                    self.answered_by[i].saved_turn = turn_index
        self.result.answered_calls = len(self.answered_by)
        return self.result, self.log

    def _decide(self, site: str) -> None:
        t, session = self.t, self.session
        queue = [(site, 0, 1.0)]
        made_here = 0
        while queue and made_here < MAX_LOOKUPS_PER_DECISION:
            where, depth, prior = queue.pop(0)
            for lookup in session.weigh(where, weigh_all=self.weigh_all, prior=prior, depth=depth):
                made = lookup.score >= lookup.bar or (self.explore > 0 and self.rng.random() < self.explore)
                if made and (lookup.key in session.answered or made_here >= MAX_LOOKUPS_PER_DECISION):
                    continue
                j = t.later_call(lookup.key, self.cursor)
                row = WeighedLookup(
                    t.episode_id, t.task_id, t.agent, self.decider.kind, self.decider.threshold, where,
                    self.cursor, self.turn, depth, lookup.tool, lookup.arguments, lookup.score, made,
                    j is not None, made and j is None, raw=lookup.model_score, bar=lookup.bar,
                    position=lookup.position, intent=session.intent,
                )  # fmt: skip
                if self.keep_log:
                    self.log.append(row)
                if not made:
                    continue
                made_here += 1
                session.note_made(lookup)
                self.result.lookups_made += 1
                if j is not None:
                    self.result.lookups_used += 1
                    row.answered_call = j
                    self.answered_by[j] = row
                    output = t.calls[j].output
                else:
                    self.result.detours += 1
                    nearest = t.nearest_call(lookup.tool, max(self.cursor, 0))
                    output = t.calls[nearest].output if nearest is not None else None
                    tokens = t.calls[nearest].output_tokens if nearest is not None else 0.0
                    self.result.detour_costs.append((tokens, max(len(t.turns) - self.turn - 1, 0)))
                session.observe_lookup(lookup, output)
                queue.append((lookup.tool, depth + 1, lookup.model_score if self.chain_prior else 1.0))


def replay_episode(timeline: Timeline, decider: Decider, *, weigh_all: bool = False, explore: float = 0.0,
                   seed: int = 0, chain_prior: bool = True, user_sites: bool = False) -> tuple[EpisodeReplay, list[WeighedLookup]]:  # fmt: skip
    """Replay one episode. `weigh_all` logs every lookup weighed; `explore` > 0 also makes a lookup below θ
    with that chance (seeded per episode, so replays are deterministic)."""
    rng = random.Random(f"{seed}:{timeline.episode_id}")
    return _EpisodeReplayer(
        timeline,
        decider,
        weigh_all=weigh_all,
        explore=explore,
        rng=rng,
        chain_prior=chain_prior,
        user_sites=user_sites,
    ).run()


def replay(timelines: Sequence[Timeline] | Iterable[Timeline], decider: Decider, *, weigh_all: bool = False,
           explore: float = 0.0, seed: int = 0, chain_prior: bool = True, user_sites: bool = False,
           progress: Any = None) -> ReplayResult:  # fmt: skip
    """Replay every episode with one decider at its threshold."""
    episodes, log = [], []
    for timeline in timelines:
        result, rows = replay_episode(
            timeline,
            decider,
            weigh_all=weigh_all,
            explore=explore,
            seed=seed,
            chain_prior=chain_prior,
            user_sites=user_sites,
        )
        episodes.append(result)
        log.extend(rows)
        if progress is not None:
            progress()
    return ReplayResult(decider.kind, decider.threshold, episodes, log)


def log_rows(result: ReplayResult) -> list[dict[str, Any]]:
    return [asdict(row) for row in result.log]
