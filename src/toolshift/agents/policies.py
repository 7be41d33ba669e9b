"""Scripted agents for measuring: `oracle` executes a reference path, `replay` re-executes a recorded episode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolshift.agents.chat import ModelReply, ProposedCall, ToolDef
from toolshift.agents.users import END_CONVERSATION
from toolshift.models import GoldCall, Task
from toolshift.traces.episode import Episode

DONE_TEXT = "Your request has been completed."


@dataclass
class ScriptedCall:
    name: str
    arguments: dict[str, Any]


class ScriptedPolicy:
    """Issues a fixed list of calls one per turn, then tells the user it is finished, then ends.

    It ignores what the calls return: a task whose expected changes this cannot produce is a task the
    gold path does not solve (an invalid task), which is exactly what running the oracle checks.
    """

    def __init__(self, name: str, calls: list[ScriptedCall]) -> None:
        self.name = name
        self.calls = calls
        self._next = 0
        self._told_done = False

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        if self._next < len(self.calls):
            call = self.calls[self._next]
            self._next += 1
            return ModelReply(
                calls=[ProposedCall(id=f"call_{self._next}", name=call.name, arguments=dict(call.arguments))],
                prompt_tokens=0,
                completion_tokens=0,
                cost=0.0,
            )
        if not self._told_done:
            self._told_done = True
            return ModelReply(text=DONE_TEXT, prompt_tokens=0, completion_tokens=0, cost=0.0)
        return ModelReply(
            calls=[ProposedCall(id="call_end", name=END_CONVERSATION, arguments={})],
            prompt_tokens=0,
            completion_tokens=0,
            cost=0.0,
        )


def oracle(task: Task, path: list[GoldCall] | None = None) -> ScriptedPolicy:
    """The oracle for a task: its gold path, or the reference path given."""
    return ScriptedPolicy("oracle", [ScriptedCall(c.tool, c.arguments) for c in (path or task.gold_path)])


def recorded_calls(episode: Episode) -> list[ScriptedCall]:
    """The assistant's tool calls of an episode in order, the harness's own end call left out."""
    calls = []
    for message in episode.messages:
        if message.role != "assistant":
            continue
        for call in message.tool_calls or []:
            if call.name != END_CONVERSATION and call.requestor == "assistant":
                calls.append(ScriptedCall(call.name, call.arguments))
    return calls


def replay(episode: Episode) -> ScriptedPolicy:
    return ScriptedPolicy("replay", recorded_calls(episode))
