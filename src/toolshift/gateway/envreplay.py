"""Environment replay through the gateway: recorded episodes re-played against a live world, lookups answered by it.

The seed's other replay. Each recorded episode's own calls are sent, in order, through a gateway session
with the flows middleware on, to a fresh world in the state the episode started from; the middleware decides
and makes its lookups against that live world exactly as it would for a live agent (chains follow the live
results, so a detour's real result can start further lookups). Then:

- a lookup is *used* when a later call of the agent has its tool and arguments and the live world gave that
  call the same result: exact whatever came between, so after a write a lookup whose result the write left
  unchanged still counts (which a trace replay cannot see);
- any other lookup is a detour;
- a turn is saved when every call in it was answered by a used lookup.

Beside it, `toolshift.flows.replay` replays the same episodes from the record, and the difference is the
seed's trace-versus-environment table. Only the agent's calls are replayed: the gateway sees no user turns,
so neither replay makes decisions at user messages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolshift.gateway.config import GatewayConfig


@dataclass
class EnvEpisode:
    episode: str
    task: str
    turns: int
    saved_turns: int
    lookups_made: int
    lookups_used: int

    @property
    def detours(self) -> int:
        return self.lookups_made - self.lookups_used


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


async def replay_in_environment(timelines: Sequence[Any], config: GatewayConfig) -> list[EnvEpisode]:
    """Every timeline re-played through a gateway built from `config` (one world backend, flows on)."""
    from toolshift.flows.values import call_key
    from toolshift.gateway.build import build_gateway
    from toolshift.gateway.flows import LOOKUPS_META_KEY, _payload
    from toolshift.gateway.server import GatewayServer, in_memory_client

    gateway = build_gateway(config)
    server = GatewayServer(gateway)
    out: list[EnvEpisode] = []
    async with gateway.running():
        for t in timelines:
            made: list[tuple[int, str, str]] = []  # (after call position, key, result)
            calls: list[tuple[int, str, str, str]] = []  # (position, key, effect, result)
            position = 0
            turn_positions: list[list[int]] = []
            async with in_memory_client(server) as client:
                for indices in t.turns:
                    here = []
                    for i in indices:
                        c = t.calls[i]
                        result = await client.call_tool(c.tool, dict(c.arguments))
                        live = _canon(_payload(result)) if not result.is_error else None
                        calls.append((position, c.key, c.effect, live or ""))
                        for lk in (result.meta or {}).get(LOOKUPS_META_KEY, []):
                            made.append(
                                (position, call_key(lk["tool"], lk["arguments"]), _canon(lk["result"]))
                            )
                        here.append(position)
                        position += 1
                    turn_positions.append(here)
            answered: set[int] = set()
            used = 0
            for at, key, value in made:
                hit = [
                    p for p, k, effect, v in calls if p > at and k == key and effect == "read" and v == value
                ]
                if hit:
                    used += 1
                    answered.update(hit)
            saved = sum(1 for ps in turn_positions if ps and all(p in answered for p in ps))
            out.append(EnvEpisode(t.episode_id, t.task_id, len(t.turns), saved, len(made), used))
    return out
