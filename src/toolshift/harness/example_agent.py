"""A complete Python agent that owns its loop: the example of docs/usage.md's "Bring your own agent".

It is what a team's own agent usually is — a chat-completions tool loop — written against two public SDKs
only: `openai` for the model (toolshift serves it one: `episode.model`), and `mcp` for the tools (the episode's
MCP server: `episode.mcp_url`). toolshift runs it with `--model python:chat-loop[@<model>]` (its entry point)
or `--model python:toolshift.harness.example_agent:make_agent`; copy it as a start for your own.
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

from toolshift.agents.outside import EpisodeContext


class ChatLoopAgent:
    """For each user message: ask the model, run the tools it calls over MCP, until it answers in text."""

    name = "chat-loop"

    async def start(self, episode: EpisodeContext) -> None:
        from mcp import Client
        from openai import AsyncOpenAI

        if episode.model is None:
            raise RuntimeError("chat-loop needs a model: --model python:chat-loop@embedded")
        self.stack = AsyncExitStack()
        self.mcp = await self.stack.enter_async_context(Client(episode.mcp_url, mode="legacy"))
        self.llm = AsyncOpenAI(base_url=episode.model.openai_base_url, api_key=episode.model.api_key)
        self.stack.push_async_callback(self.llm.close)
        self.model = episode.model.model
        self.steps = episode.max_turns
        instructions = str(episode.extra.get("instructions") or episode.policy)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}]

    async def tools(self) -> list[dict[str, Any]]:
        """The episode's tools as the model is offered them, listed anew each step (a search may expose more)."""
        listed = await self.mcp.list_tools()
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed.tools
        ]

    async def turn(self, message: str) -> str:
        self.messages.append({"role": "user", "content": message})
        for _ in range(self.steps):
            response = await self.llm.chat.completions.create(
                model=self.model, messages=self.messages, tools=await self.tools()
            )
            reply = response.choices[0].message
            self.messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                return reply.content or ""
            for call in reply.tool_calls:
                try:
                    arguments = json.loads(call.function.arguments or "{}")
                except json.JSONDecodeError as exc:
                    text = f"error: the arguments are not JSON: {exc}"
                else:
                    result = await self.mcp.call_tool(call.function.name, arguments)
                    text = "\n".join(b.text for b in result.content if getattr(b, "text", None))
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        return ""

    async def close(self) -> None:
        stack = getattr(self, "stack", None)
        if stack is not None:
            await stack.aclose()


def make_agent() -> ChatLoopAgent:
    """A fresh agent for one episode (`--model python:chat-loop`)."""
    return ChatLoopAgent()
