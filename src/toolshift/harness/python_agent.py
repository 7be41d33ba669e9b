"""Python agents that own their loop, loaded from `python:<module>:<factory>` or an entry point's name.

`--model python:mypkg.agent:make_agent@embedded` imports `mypkg.agent` and calls `make_agent()` once per
episode for a fresh agent object speaking `toolshift.agents.outside`'s protocol (`turn`, optional `start` and
`close`). `python:<name>` names a factory registered by an installed package under the `toolshift.agents`
entry points (toolshift's own: `openai-agents`, the OpenAI Agents SDK example). The part after `@` is the model
toolshift serves the agent for the episode (`embedded` by default), given to it as `episode.model`.

What names code here is the command line, never data: a run's saved configuration holds the same spec, and
resuming it imports the same module because the user's command said so.
"""

from __future__ import annotations

import importlib
from typing import Any

from toolshift.agents.chat import ModelConfigError
from toolshift.agents.config import RunConfig, outside_parts
from toolshift.agents.outside import AgentTurn, EpisodeContext, as_turn
from toolshift.harness.served import ServedModel, served_model, with_endpoint
from toolshift.models import Task

ENTRY_POINTS = "toolshift.agents"


def load_factory(what: str) -> Any:
    """The factory `module:attribute` names, or the `toolshift.agents` entry point called `what`."""
    if ":" not in what:
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group=ENTRY_POINTS) if ep.name == what]
        if not found:
            names = sorted(ep.name for ep in entry_points(group=ENTRY_POINTS))
            raise ModelConfigError(
                f"no Python agent {what!r}: use python:<module>:<factory>, or one of the installed "
                f"{ENTRY_POINTS!r} entry points: {', '.join(names) or 'none'}"
            )
        return found[0].load()
    module_name, _, attribute = what.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelConfigError(f"python:{what}: cannot import {module_name!r}: {exc}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ModelConfigError(f"python:{what}: {module_name!r} has no callable {attribute!r}")
    return factory


class PythonAgent:
    """A user's agent object for one episode, with the model toolshift serves it."""

    harness = "python"

    def __init__(self, spec: str, config: RunConfig, *, seed: int, task: Task | None = None) -> None:
        _, what, model = outside_parts(spec)
        self.spec, self.config, self.seed, self.model, self.task = spec, config, seed, model, task
        self.inner = load_factory(what)()
        if not callable(getattr(self.inner, "turn", None)):
            raise ModelConfigError(
                f"python:{what} made a {type(self.inner).__name__}, which has no turn() method"
            )
        self.name = spec
        self.model_name = model
        self.harness = f"python:{what}"
        self._served: ServedModel | None = None
        self._block: Any = None

    async def start(self, episode: EpisodeContext) -> None:
        self._block = served_model(
            self.model, self.config, seed=self.seed, budget=episode.max_turns, task=self.task
        )
        self._served = await self._block.__aenter__()
        start = getattr(self.inner, "start", None)
        if callable(start):
            await start(with_endpoint(episode, self._served))

    async def turn(self, message: str) -> AgentTurn:
        turn = as_turn(await self.inner.turn(message))
        return self._served.turn_report(turn) if self._served is not None else turn

    async def close(self) -> None:
        try:
            close = getattr(self.inner, "close", None)
            if callable(close):
                await close()
        finally:
            if self._block is not None:
                block, self._block = self._block, None
                await block.__aexit__(None, None, None)


def make(spec: str, config: RunConfig, *, seed: int, task: Task | None = None) -> PythonAgent:
    """The `python` agent kind (`toolshift.agent_kinds` entry point)."""
    return PythonAgent(spec, config, seed=seed, task=task)
