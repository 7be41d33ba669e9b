"""Drive the skill-following instrument against the scripted user, for Steward's tests: one helper, so each
test says only what its tools answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from toolshift.agents.chat import ToolDef
from toolshift.agents.users import ScriptedUser
from toolshift.models import UserInstruction
from toolshift.steward.instruments import SkillFollower
from toolshift.steward.supply import Supply

Answer = Callable[[str, dict], dict]
"""What a tool returns for a call: (tool name, arguments) → the result object."""


def converse(
    supply: Supply,
    request: str,
    intent: str,
    facts: dict[str, str],
    answer: Answer,
    offered: list[str] | None = None,
    max_messages: int = 40,
) -> list[tuple[str, dict]]:
    """The calls the instrument makes until it ends the conversation. The user opens with `request` and says
    `intent` when asked what they want; `offered` names the tools the agent is given (none: Steward's own)."""
    user = ScriptedUser(request, UserInstruction(intent=intent, facts=facts))
    follower = SkillFollower(supply)
    tools = [ToolDef(name, "", {}) for name in offered or []]
    messages: list[dict] = [{"role": "user", "content": request}]
    calls: list[tuple[str, dict]] = []

    async def turn() -> None:
        reply = await follower.complete(messages, tools)
        if reply.calls:
            call = reply.calls[0]
            calls.append((call.name, call.arguments))
            messages.append({"role": "assistant", "tool_calls": [{"id": call.id, "name": call.name}]})
            messages.append({"role": "tool", "content": json.dumps(answer(call.name, call.arguments))})
        else:
            messages.append({"role": "assistant", "content": reply.text})
            spoken = await user.respond(reply.text or "")
            messages.append({"role": "user", "content": spoken.text})

    while not calls or calls[-1][0] != "end_conversation":
        assert len(messages) < max_messages, "the instrument never ended the conversation"
        asyncio.run(turn())
    return calls
