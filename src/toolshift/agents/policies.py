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

    def __init__(self, name: str, calls: list[ScriptedCall], done_text: str = DONE_TEXT) -> None:
        self.name = name
        self.calls = calls
        self.done_text = done_text
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
            return ModelReply(text=self.done_text, prompt_tokens=0, completion_tokens=0, cost=0.0)
        return ModelReply(
            calls=[ProposedCall(id="call_end", name=END_CONVERSATION, arguments={})],
            prompt_tokens=0,
            completion_tokens=0,
            cost=0.0,
        )


class TurnScriptedPolicy:
    """The oracle of a task with scripted user turns: in each turn, that turn's gold calls one per model call,
    then the turn's reply (or `DONE_TEXT`); a turn is known by the user messages seen so far."""

    def __init__(self, name: str, task: Task) -> None:
        self.name = name
        self.turns = task.turn_paths()
        self.replies = [t.reply for t in task.turns]
        self._issued = [0] * len(self.turns)
        self._replied = [False] * len(self.turns)

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        turn = sum(1 for m in messages if m.get("role") == "user") - 1
        if 0 <= turn < len(self.turns):
            k = self._issued[turn]
            if k < len(self.turns[turn]):
                self._issued[turn] += 1
                call = self.turns[turn][k]
                return ModelReply(
                    calls=[
                        ProposedCall(id=f"call_{turn}_{k}", name=call.tool, arguments=dict(call.arguments))
                    ],
                    prompt_tokens=0,
                    completion_tokens=0,
                    cost=0.0,
                )
            if not self._replied[turn]:
                self._replied[turn] = True
                text = self.replies[turn] or DONE_TEXT
                return ModelReply(text=text, prompt_tokens=0, completion_tokens=0, cost=0.0)
        return ModelReply(
            calls=[ProposedCall(id="call_end", name=END_CONVERSATION, arguments={})],
            prompt_tokens=0,
            completion_tokens=0,
            cost=0.0,
        )


def oracle(task: Task, path: list[GoldCall] | None = None) -> ScriptedPolicy | TurnScriptedPolicy:
    """The oracle for a task: its gold path (turn by turn when its user is scripted), or the reference path given.

    Its closing text also says what the task's judge requires said (τ²'s `communicate_info`), as τ²'s gold does.
    """
    if task.turns and path is None:
        return TurnScriptedPolicy("oracle", task)
    said = (task.criteria.communicate_info or []) if task.criteria is not None else []
    done = " ".join([DONE_TEXT, *said])
    return ScriptedPolicy(
        "oracle", [ScriptedCall(c.tool, c.arguments) for c in (path or task.gold_path)], done
    )


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
