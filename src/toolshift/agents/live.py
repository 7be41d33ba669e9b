"""A live episode: an episode driven from outside, one user message out and one agent reply in at a time.

A framework that owns the control flow (a verifiers environment, an RL trainer) cannot hand toolshift an agent
object to call; it runs its own agent and asks toolshift what the user says. `LiveEpisode` gives it that
without a second copy of anything: the episode is `run_episode` itself (one world for the conversation, the
simulated user, the judge), run in a task of its own with a relay agent that owns its loop
(`toolshift.agents.outside`). The relay's `turn` hands the user's message to the framework and waits for the
reply it sends back; the framework's agent calls the episode's tools at `context.mcp_url` (or `call`), where
every call is recorded. So:

    live = LiveEpisode(lambda agent: run_episode(task, agent, user, opener, episode_id=...))
    context, message = await live.open()          # the episode's MCP URL, tools, instructions; the user's opening
    while message is not None:
        message = await live.reply(my_agent(message))   # the user's next message, or None once the episode ended
    episode = await live.finish()                 # judged as `toolshift run` judges it
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from toolshift.agents.outside import AgentTurn, EpisodeContext
from toolshift.traces.episode import Episode


class _Relay:
    """The outside agent of a live episode: its turns are answered by whoever drives the episode."""

    name = "live"
    harness = "toolshift.live"

    def __init__(self, live: LiveEpisode) -> None:
        self.live = live

    async def start(self, episode: EpisodeContext) -> None:
        if not self.live.started.done():
            self.live.started.set_result(episode)

    async def turn(self, message: str) -> AgentTurn:
        await self.live.asks.put(message)
        return await self.live.replies.get()


class LiveEpisode:
    """One episode, run by `run(agent)`, whose agent's turns come from `reply` (see the module's docstring)."""

    def __init__(
        self, run: Callable[[Any], Awaitable[Episode]], *, name: str = "live", model: str | None = None
    ) -> None:
        self._run = run
        self.relay = _Relay(self)
        self.relay.name = name
        if model is not None:
            self.relay.model_name = model  # type: ignore[attr-defined]
        self.started: asyncio.Future[EpisodeContext] = asyncio.get_running_loop().create_future()
        self.asks: asyncio.Queue[str] = asyncio.Queue()
        self.replies: asyncio.Queue[AgentTurn] = asyncio.Queue()
        self._task: asyncio.Task[Episode] | None = None
        self.context: EpisodeContext | None = None

    @property
    def ended(self) -> bool:
        return self._task is not None and self._task.done()

    async def open(self) -> tuple[EpisodeContext | None, str | None]:
        """Start the episode: its context (None if it ended before the agent started, as on a world that
        could not open) and the user's opening message (None if the episode ended first)."""
        self._task = asyncio.create_task(self._run(self.relay))
        await asyncio.wait([self.started, self._task], return_when=asyncio.FIRST_COMPLETED)
        self.context = self.started.result() if self.started.done() else None
        return self.context, await self._next()

    async def _next(self) -> str | None:
        assert self._task is not None, "open() first"
        ask = asyncio.ensure_future(self.asks.get())
        await asyncio.wait([ask, self._task], return_when=asyncio.FIRST_COMPLETED)
        if ask.done():
            return ask.result()
        ask.cancel()
        return None

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Call one of the episode's tools in process (recorded as a call over MCP is): (text, is_error)."""
        if self.context is None or self.context.call_tool is None or self.ended:
            return "error: this episode is over", True
        return await self.context.call_tool(name, arguments)

    async def tools(self) -> list[Any]:
        """The tools on offer now (the episode's listing)."""
        if self.context is None or self.context.list_tools is None or self.ended:
            return []
        return await self.context.list_tools()

    async def reply(self, text: str, *, ended: bool = False, **report: Any) -> str | None:
        """The agent's reply to the last user message; the user's next message, or None once the episode ended.
        `ended`: the agent ends the conversation with this reply. `report`: AgentTurn's optional counts."""
        if self.ended:
            return None
        await self.replies.put(AgentTurn(text=text, ended=ended, **report))
        return await self._next()

    async def finish(self) -> Episode:
        """End the episode (the agent stops if it is still waiting on a reply) and return it, judged."""
        assert self._task is not None, "open() first"
        if not self._task.done():
            await self.replies.put(AgentTurn(text="", ended=True))
        return await self._task

    async def abandon(self) -> None:
        """Stop the episode without waiting for its verdict (a framework gave up on it)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
