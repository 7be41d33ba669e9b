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


class ConversationOracle:
    """The oracle as a model served to an agent that owns its loop: the next gold call read off the conversation.

    A harness asks its model more than the next step (a session title, a summary, a check of whose turn it is),
    so counting its calls would skip steps. This oracle counts the gold path's results already in the
    conversation it is sent (after the last user message, for tasks whose user is scripted turn by turn), calls
    the next step, then says it is done, then ends the conversation; a request offering no tools is a harness's
    side question and gets a short text. Tool names may carry the harness's prefix for the server
    (`mcp__server__name`, `server_name`): the step is called by the name the request offers.
    """

    def __init__(self, task: Task) -> None:
        self.name = "oracle"
        self.task = task
        said = (task.criteria.communicate_info or []) if task.criteria is not None else []
        self.done_text = " ".join([DONE_TEXT, *said])

    def _path(self, messages: list[dict[str, Any]]) -> tuple[list[GoldCall], list[dict[str, Any]], str]:
        """This turn's gold calls, the messages since it opened, and what to say when they are done."""
        if not self.task.turns:
            return list(self.task.gold_path), messages, self.done_text
        # the turn is the scripted text the latest user message carries (a harness adds user messages of its own:
        # its environment, its instructions file), not a count of user messages
        paths = self.task.turn_paths()
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].get("role") != "user":
                continue
            said = str(messages[i].get("content") or "")
            for turn in range(len(self.task.turns) - 1, -1, -1):
                if self.task.turns[turn].text.strip() and self.task.turns[turn].text.strip() in said:
                    return list(paths[turn]), messages[i:], self.task.turns[turn].reply or DONE_TEXT
        return [], messages, DONE_TEXT

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        if not tools:
            return ModelReply(text="ok", prompt_tokens=0, completion_tokens=0, cost=0.0)
        path, since, closing = self._path(messages)
        results = [str(m.get("name") or "") for m in since if m.get("role") == "tool"]
        done = 0
        for name in results:
            if done < len(path) and _names(name, path[done].tool):
                done += 1
        if done < len(path):
            step = path[done]
            offered = [t.name for t in tools if _names(t.name, step.tool)]
            name = step.tool if step.tool in offered or not offered else offered[0]
            call = ProposedCall(id=f"call_{done}", name=name, arguments=dict(step.arguments))
            return ModelReply(calls=[call], prompt_tokens=0, completion_tokens=0, cost=0.0)
        last = since[-1] if since else {}
        if last.get("role") == "assistant" and last.get("content") and not last.get("tool_calls"):
            end = ProposedCall(id="call_end", name=END_CONVERSATION, arguments={})
            return ModelReply(calls=[end], prompt_tokens=0, completion_tokens=0, cost=0.0)
        return ModelReply(text=closing, prompt_tokens=0, completion_tokens=0, cost=0.0)


def _names(offered: str, tool: str) -> bool:
    """Does a harness's tool name (its server's prefix and all) name the world's `tool`?"""
    return offered == tool or offered.endswith(("__" + tool, "_" + tool))
