"""Environment replay: answer a lookup from a live world as it stood at a given point of a recorded episode.

A trace replay answers a lookup from what the record says; an environment replay asks the world.
`world_at(name, calls)` is a fresh world of any domain (the τ² airline world for the τ-bench GPT-4o
runs) with the episode's calls up to that point made again in order (failures included, as they
were made; a failed call changes nothing); `answer_lookup` then makes one read-only call on it.
A write is refused: a lookup must never change the world it is answering from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolshift.errors import BadInputError
from toolshift.world.state.tools import CallResult


def episode_calls(episode: Any) -> list[tuple[str, dict[str, Any]]]:
    """The agent's tool calls of an episode (`toolshift.episode/1`, as `toolshift traces` reads it), in order."""
    out: list[tuple[str, dict[str, Any]]] = []
    for message in episode.messages:
        for call in message.tool_calls or []:
            if getattr(call, "requestor", "assistant") == "assistant":
                out.append((call.name, dict(call.arguments)))
    return out


def world_at(world_name: str, calls: Iterable[tuple[str, dict[str, Any]]]) -> Any:
    """A fresh world with `calls` made in order; the caller closes it."""
    from toolshift.world import World, load_domain

    world = World(load_domain(world_name))
    for name, arguments in calls:
        world.call(name, arguments)
    return world


def answer_lookup(
    world_name: str,
    calls: Sequence[tuple[str, dict[str, Any]]],
    prefix: int,
    tool: str,
    arguments: dict[str, Any],
) -> CallResult:
    """`tool(arguments)` on the live world after the first `prefix` calls of an episode (read-only tools only)."""
    if not 0 <= prefix <= len(calls):
        raise BadInputError(f"prefix {prefix} is outside the episode's {len(calls)} calls", field="prefix")
    world = world_at(world_name, calls[:prefix])
    try:
        found = next((t for t in world.tools if t.name == tool), None)
        if found is not None and found.effect != "read":
            raise BadInputError(f"{tool} is a {found.effect} tool; a lookup must be read-only", field="tool")
        return world.call(tool, arguments)
    finally:
        world.close()
