"""Per-turn flow marks for the viewer: where a flow's lookup would have saved a turn or made a detour.

One episode is replayed from the record with the flow (`toolshift.flows.replay.replay_episode`, every
lookup weighed logged) and the replay's turns and calls are mapped back to message positions, so the
viewer can badge the assistant message a lookup was made after, the call it answered, and each turn
it saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.traces.episode import Episode


def call_positions(episode: Episode) -> list[tuple[int, int]]:
    """(message index, position in its tool_calls) of every call, in the order flows' timelines number them.

    `toolshift.flows.timeline.build_timeline` numbers the assistant's calls and the user's own tool calls
    in message order; the same walk here gives each call index its message.
    """
    out = []
    for i, m in enumerate(episode.messages):
        if m.role == "assistant" or (m.role == "user" and m.tool_calls):
            out += [(i, k) for k in range(len(m.tool_calls or ()))]
    return out


@dataclass
class FlowMarker:
    """A flow and its catalog, ready to mark any episode of the catalog's domain."""

    flow_path: Path
    catalog_path: Path
    decider: str = "reach"
    threshold: float = 0.3

    def __post_init__(self) -> None:
        from toolshift.flows.decide import DECIDERS, Decider
        from toolshift.flows.model import load_flow
        from toolshift.flows.timeline import Catalog
        from toolshift.traces.catalog import load_catalog

        if self.decider not in DECIDERS:
            raise BadInputError(
                f"--decider is one of {', '.join(DECIDERS)}, not {self.decider!r}", field="decider"
            )
        self.catalog = Catalog.of(load_catalog(self.catalog_path))
        self.flow = load_flow(self.flow_path, self.catalog)
        self._decider = Decider(self.flow, self.decider, self.threshold)  # type: ignore[arg-type]

    def describe(self) -> dict[str, Any]:
        return {
            "flow": str(self.flow_path),
            "catalog": str(self.catalog_path),
            "domain": self.catalog.domain,
            "decider": self.decider,
            "threshold": self.threshold,
        }

    def marks(self, episode: Episode) -> dict[str, Any]:
        """`{available, reason?, saved_messages, ceiling_messages, lookups: [...]}` for one episode."""
        from toolshift.flows.ceiling import episode_anatomy
        from toolshift.flows.replay import replay_episode
        from toolshift.flows.timeline import build_timeline, unlisted_calls

        if episode.domain != self.catalog.domain:
            return {
                "available": False,
                "reason": f"the flow is for {self.catalog.domain}, not {episode.domain}",
            }
        unlisted = unlisted_calls(episode, self.catalog)  # calls to tools the catalog lacks: neither
        timeline = build_timeline(episode, self.catalog)
        result, log = replay_episode(timeline, self._decider, weigh_all=True)
        turn_message = [i for i, m in enumerate(episode.messages) if m.role == "assistant"]
        positions = call_positions(episode)
        lookups = []
        for row in log:
            if not row.made:
                continue
            entry: dict[str, Any] = {
                "after_message": turn_message[row.turn] if 0 <= row.turn < len(turn_message) else None,
                "tool": row.tool,
                "arguments": row.arguments,
                "score": round(row.score, 4),
                "depth": row.depth,
                "detour": row.detour,
            }
            if row.answered_call is not None and row.answered_call < len(positions):
                entry["answers"] = positions[row.answered_call]
            if row.saved_turn is not None:
                entry["saved_message"] = turn_message[row.saved_turn]
            lookups.append(entry)
        ceiling = episode_anatomy(timeline).ceiling_turns.get(timeline.episode_id, [])
        return {
            "available": True,
            "saved_messages": [turn_message[t] for t in result.saved_turns],
            "ceiling_messages": [turn_message[t] for t in ceiling],
            "lookups": lookups,
            "weighed": len(log),
            "detours": result.detours,
            "unlisted": dict(sorted(unlisted.items())),
        }
