"""The OpenAI Agents SDK as a toolshift agent: a shipped, tested example of a Python agent that owns its loop.

`--model python:openai-agents` (or `python:toolshift.harness.sdk_agent:make_agent`) runs an `agents.Agent` as
its users write one: the episode's MCP server attached with the SDK's own `MCPServerStreamableHttp`, the model
given as the SDK's `OpenAIResponsesModel` on an `AsyncOpenAI` client pointed at the model toolshift serves, and
`Runner.run` once per user message with the conversation so far (`result.to_input_list()`). Tracing is off: it
would send the run to OpenAI. Needs the `openai-agents` package (`pip install 'toolshift[agents-sdk]'`).
"""

from __future__ import annotations

from typing import Any

from toolshift.agents.chat import ModelConfigError
from toolshift.agents.outside import AgentTurn, EpisodeContext


class AgentsSdkAgent:
    """One episode's `agents.Agent` with the episode's MCP server (see the module's docstring)."""

    name = "openai-agents"

    def __init__(self) -> None:
        self.history: list[Any] = []
        self.server: Any = None
        self.client: Any = None
        self.agent: Any = None
        self.max_turns = 30

    async def start(self, episode: EpisodeContext) -> None:
        try:
            from agents.mcp import MCPServerStreamableHttp

            from agents import Agent, OpenAIResponsesModel, set_tracing_disabled
        except ImportError as exc:
            raise ModelConfigError(
                f"python:openai-agents needs the OpenAI Agents SDK: pip install 'toolshift[agents-sdk]' ({exc})"
            ) from None
        from openai import AsyncOpenAI

        if episode.model is None:
            raise ModelConfigError("python:openai-agents needs a model: python:openai-agents@embedded")
        set_tracing_disabled(True)
        self.server = MCPServerStreamableHttp(
            params={"url": episode.mcp_url, "timeout": 60, "sse_read_timeout": 300},
            name="toolshift", cache_tools_list=False, client_session_timeout_seconds=300,
        )  # fmt: skip
        await self.server.connect()
        client = AsyncOpenAI(
            base_url=episode.model.openai_base_url, api_key=episode.model.api_key, max_retries=0
        )
        self.agent = Agent(
            name="agent",
            instructions=str(episode.extra.get("instructions") or episode.policy),
            mcp_servers=[self.server],
            model=OpenAIResponsesModel(model=episode.model.model, openai_client=client),
        )
        self.max_turns = episode.max_turns + 1  # toolshift's model server ends the run at the limit itself

    async def turn(self, message: str) -> AgentTurn:
        from agents.exceptions import MaxTurnsExceeded

        from agents import Runner

        try:
            result = await Runner.run(
                self.agent, [*self.history, {"role": "user", "content": message}], max_turns=self.max_turns
            )
        except MaxTurnsExceeded:
            return AgentTurn(text="", info={"model_budget_reached": True})
        self.history = result.to_input_list()
        return AgentTurn(text=str(result.final_output or ""))

    async def close(self) -> None:
        if self.server is not None:
            await self.server.cleanup()
        if (
            self.client is not None
        ):  # closed on this loop: left to the collector it would be closed on a dead one
            await self.client.close()


def make_agent() -> AgentsSdkAgent:
    """The factory `python:openai-agents` names (`toolshift.agents` entry point)."""
    return AgentsSdkAgent()
