"""An episode's conversation as it is being recorded: the messages kept, and the model's wire view in step.

Shared by toolshift's own agent loop (`toolshift.agents.loop`) and by the loop of agents that own theirs
(`toolshift.agents.hosted`), so both write the same messages: user turns, assistant text and tool calls, and
tool results as the agent saw them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from toolshift.agents.chat import ModelReply, ProposedCall
from toolshift.agents.outside import AgentTurn
from toolshift.agents.toolbox import ToolOutcome
from toolshift.agents.users import END_CONVERSATION, UserTurn
from toolshift.traces.episode import Message, ToolCall, Usage

RECORDED_RESULT_CHARS = 8000


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


@dataclass
class Conversation:
    """The episode as it is being built: recorded messages and the model's wire view, kept in step."""

    messages: list[Message] = field(default_factory=list)
    wire: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    tool_calls: int = 0
    failed_calls: int = 0
    agent_cost: float | None = None
    user_cost: float | None = None

    def add_cost(self, who: str, cost: float | None) -> None:
        if cost is None:
            return
        current = getattr(self, who)
        setattr(self, who, cost + (current or 0.0))

    def system(self, text: str) -> None:
        self.messages.append(Message(role="system", content=text, timestamp=_now()))
        self.wire.append({"role": "system", "content": text})

    def user(self, turn: UserTurn) -> None:
        usage = None
        if turn.prompt_tokens is not None or turn.completion_tokens is not None:
            usage = Usage(prompt_tokens=turn.prompt_tokens, completion_tokens=turn.completion_tokens)
        calls = [ToolCall(id="user_end", name=END_CONVERSATION, requestor="user")] if turn.ends else None
        self.messages.append(
            Message(
                role="user",
                content=turn.text or None,
                tool_calls=calls,
                requestor="user",
                timestamp=_now(),
                generation_time_seconds=round(turn.seconds, 4),
                usage=usage,
                cost=turn.cost,
            )
        )
        self.add_cost("user_cost", turn.cost)
        if not turn.ends:
            self.wire.append({"role": "user", "content": turn.text})

    def assistant(self, reply: ModelReply) -> None:
        calls = [
            ToolCall(id=c.id, name=c.name, arguments=c.arguments if c.arguments is not None else {})
            for c in reply.calls
        ]
        self.messages.append(
            Message(
                role="assistant",
                content=reply.text,
                tool_calls=calls or None,
                requestor="assistant",
                timestamp=_now(),
                generation_time_seconds=round(reply.seconds, 4),
                usage=Usage(
                    prompt_tokens=reply.prompt_tokens,
                    completion_tokens=reply.completion_tokens,
                    cached_prompt_tokens=reply.cached_prompt_tokens,
                ),
                cost=reply.cost,
            )
        )
        self.add_cost("agent_cost", reply.cost)
        wire: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            wire["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.raw_arguments
                        if c.arguments is None
                        else json.dumps(c.arguments, ensure_ascii=False),
                    },
                }
                for c in reply.calls
            ]
        self.wire.append(wire)

    def tool(self, call: ProposedCall, outcome: ToolOutcome, limit: int) -> None:
        self.tool_calls += 1
        self.failed_calls += outcome.error
        self.messages.append(
            Message(
                role="tool",
                content=_clip(outcome.text, RECORDED_RESULT_CHARS),
                tool_call_id=call.id,
                name=call.name,
                error=outcome.error,
                requestor="assistant",
                timestamp=_now(),
            )
        )
        self.wire.append(
            {
                "role": "tool",
                "tool_call_id": call.id,
                "name": call.name,
                "content": _clip(outcome.text, limit),
            }
        )

    # --- an agent that owns its loop: what its episode's server saw, and its replies -------------------

    def agent_call(self, call: ProposedCall) -> None:
        """A call an outside agent made, as the episode's server received it: an assistant message of its own."""
        arguments = call.arguments if call.arguments is not None else {}
        self.messages.append(
            Message(
                role="assistant",
                content=None,
                tool_calls=[ToolCall(id=call.id, name=call.name, arguments=arguments)],
                requestor="assistant",
                timestamp=_now(),
            )
        )

    def agent_reply(self, turn: AgentTurn, seconds: float) -> None:
        """An outside agent's reply to the user, with what it reported of its turn's model use."""
        usage = None
        if turn.prompt_tokens is not None or turn.completion_tokens is not None:
            usage = Usage(prompt_tokens=turn.prompt_tokens, completion_tokens=turn.completion_tokens)
        self.messages.append(
            Message(
                role="assistant",
                content=turn.text,
                requestor="assistant",
                timestamp=_now(),
                generation_time_seconds=round(seconds, 4),
                usage=usage,
                cost=turn.cost,
            )
        )
        self.add_cost("agent_cost", turn.cost)
