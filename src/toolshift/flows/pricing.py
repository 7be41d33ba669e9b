"""Pricing lookups: what a saved turn is worth and a detour costs, the threshold θ* = δ/(β+δ), and a θ sweep.

Costs are in uncached-input-token equivalents. With `Price(out, read, write)` (output tokens and cache
reads and writes as multiples of an uncached input token), a saved turn is worth its prompt — read from the
cache up to the previous turn's prompt, written after it — plus its output; a detour's result is written to
the cache once and read from it in every later LLM turn. `Price(0, 1, 1)` counts input tokens alone (the
paper's). Token counts come from each turn's recorded usage, else from message lengths (four characters a
token): `tokens_estimated` says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolshift.errors import BadInputError
from toolshift.flows.replay import ReplayResult
from toolshift.flows.timeline import Timeline


@dataclass(frozen=True)
class Price:
    out: float = 0.0
    read: float = 1.0
    write: float = 1.0

    @classmethod
    def parse(cls, text: str) -> Price:
        """`OUT,READ,WRITE`, e.g. `5,0.1,1.25` (Anthropic's) or `0,1,1` (input tokens alone)."""
        try:
            out, read, write = (float(x) for x in text.split(","))
        except ValueError as exc:
            raise BadInputError(
                f"--price takes OUT,READ,WRITE (three numbers), not {text!r}", field="price"
            ) from exc
        if min(out, read, write) < 0:
            raise BadInputError("--price multipliers cannot be negative", field="price")
        return cls(out, read, write)

    def label(self) -> str:
        return f"{self.out:g},{self.read:g},{self.write:g}"


def saved_turn_value(timeline: Timeline, turn: int, price: Price) -> float:
    prompt = timeline.turn_prompt_tokens[turn]
    previous = timeline.turn_prompt_tokens[turn - 1] if turn > 0 else 0.0
    previous = min(previous, prompt)
    return (
        previous * price.read
        + (prompt - previous) * price.write
        + timeline.turn_completion_tokens[turn] * price.out
    )


def detour_cost(tokens: float, turns_left: int, price: Price) -> float:
    if turns_left <= 0:
        return 0.0
    return tokens * price.write + tokens * price.read * (turns_left - 1)


@dataclass(frozen=True)
class Valuation:
    """A replay priced: the average saved turn β, the average detour δ, θ* and the utility."""

    beta: float
    delta: float
    saved_value: float
    detour_cost: float
    tokens_estimated: bool

    @property
    def theta_star(self) -> float:
        return self.delta / (self.beta + self.delta) if self.beta + self.delta > 0 else 0.0

    @property
    def utility(self) -> float:
        return self.saved_value - self.detour_cost


def value_replay(result: ReplayResult, timelines: Sequence[Timeline], price: Price,
                 fallback_turns: dict[str, list[int]] | None = None) -> Valuation:  # fmt: skip
    """Price a replay's saved turns and detours. β and δ are the replay's averages; with no saved turn, β is
    the average of `fallback_turns` (the ceiling's turns, by episode id)."""
    by_id = {t.episode_id: t for t in timelines}
    values, costs = [], []
    for episode in result.episodes:
        t = by_id[episode.episode]
        values += [saved_turn_value(t, turn, price) for turn in episode.saved_turns]
        costs += [detour_cost(tokens, left, price) for tokens, left in episode.detour_costs]
    beta_pool = values
    if not beta_pool and fallback_turns:
        beta_pool = [saved_turn_value(by_id[e], turn, price) for e, turns in fallback_turns.items()
                     if e in by_id for turn in turns]  # fmt: skip
    beta = sum(beta_pool) / len(beta_pool) if beta_pool else 0.0
    delta = sum(costs) / len(costs) if costs else 0.0
    estimated = any(by_id[e.episode].tokens_estimated for e in result.episodes)
    return Valuation(beta, delta, sum(values), sum(costs), estimated)
