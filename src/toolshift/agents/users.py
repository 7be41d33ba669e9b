"""User simulators: an LLM user holding a private instruction, and a scripted user answering from its facts.

Both end a conversation through a structured action (the `end_conversation` tool for the LLM user,
`UserTurn.ends` for both), never through a magic string in their text.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolshift.agents.chat import ChatModel, ModelConfigError, ModelError, ToolDef
from toolshift.errors import ToolshiftError
from toolshift.models import UserInstruction

END_CONVERSATION = "end_conversation"

END_TOOL = ToolDef(
    name=END_CONVERSATION,
    description="End the conversation: call it when your request is done or nothing more can be done.",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "A last message, if any."}},
        "additionalProperties": False,
    },
)


class UserSimulatorError(ToolshiftError):
    """The simulator could not produce a usable turn: the episode ends as `user_error`, not the agent's fault."""


@dataclass
class UserTurn:
    text: str
    ends: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    seconds: float = 0.0
    retries: int = 0


class UserSimulator(Protocol):
    name: str

    async def opening(self) -> UserTurn: ...

    async def respond(self, agent_text: str) -> UserTurn: ...


_STOP = {"the", "and", "for", "your", "you", "what", "which", "with", "number", "name", "this", "that", "are"}
_DONE = (
    "done",
    "completed",
    "complete",
    "all set",
    "processed",
    "confirmed",
    "updated",
    "cancelled",
    "canceled",
    "booked",
    "scheduled",
    "created",
    "recorded",
)
_WORD = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("_", " "))


def _similar(a: str, b: str) -> bool:
    if a == b or (len(a) > 3 and len(b) > 3 and (a.startswith(b) or b.startswith(a))):
        return True
    return len(a) > 4 and difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def fact_asked(fact: str, text: str) -> bool:
    """Does `text` ask about the fact named `fact`? Every significant word of the name appears, loosely."""
    said = set(_tokens(text))
    words = [w for w in _tokens(fact) if w not in _STOP and len(w) > 2] or _tokens(fact)
    return bool(words) and all(any(_similar(w, s) for s in said) for w in words)


@dataclass
class ScriptedUser:
    """An offline user: opens with the public request, discloses a fact when its name is asked for.

    It restates its intent once when asked something it cannot match, and ends the conversation when the
    agent reports the request done or there is nothing left to say (including a second time it is asked
    only for facts it already gave).
    """

    public_request: str
    instruction: UserInstruction
    name: str = "scripted"
    disclosed: set[str] = field(default_factory=set)
    unmatched: int = 0
    repeats: int = 0

    async def opening(self) -> UserTurn:
        return UserTurn(self.public_request)

    async def respond(self, agent_text: str) -> UserTurn:
        asked = [f for f in self.instruction.facts if fact_asked(f, agent_text)]
        lowered = agent_text.lower()
        done = any(re.search(rf"\b{re.escape(w)}\b", lowered) for w in _DONE)
        if done and "?" not in agent_text:
            return UserTurn("Thank you, that is all.", ends=True)
        if asked and all(f in self.disclosed for f in asked):
            self.repeats += 1
            if self.repeats >= 2:
                return UserTurn("I have told you everything I know. Goodbye.", ends=True)
        if asked:
            self.disclosed.update(asked)
            return UserTurn(" ".join(f"My {f} is {self.instruction.facts[f]}." for f in asked))
        if done:
            return UserTurn("Thank you, that is all.", ends=True)
        if "?" in agent_text and self.unmatched == 0:
            self.unmatched += 1
            return UserTurn(f"I'm not sure what you need from me. {self.instruction.intent}")
        return UserTurn("Thank you, that is all I needed.", ends=True)


def user_system_prompt(public_request: str, instruction: UserInstruction) -> str:
    facts = "\n".join(f"- {k}: {v}" for k, v in instruction.facts.items()) or "- (none)"
    rules = "\n".join(f"- {r}" for r in instruction.rules) or "- (none)"
    return (
        "You are a customer talking to a customer-service agent. Stay in character; write short, natural messages.\n"
        f"You opened with: {public_request}\n\n"
        f"What you want: {instruction.intent}\n"
        + (f"Why: {instruction.motivation}\n" if instruction.motivation else "")
        + "\nFacts you know. Disclose a fact only when the agent asks for it or it is needed; never all at once:\n"
        f"{facts}\n\nRules:\n{rules}\n"
        "- Never mention tools, functions, databases or how the agent should work.\n"
        "- Do not invent facts you were not given; say you do not know.\n"
        f"- When your request is done, or cannot be done, call {END_CONVERSATION}."
    )


class LLMUser:
    """A user simulated by a chat model over its own view of the conversation (roles swapped).

    An empty or malformed turn (no text and no end call, or a call of another tool) is retried with a
    nudge; after `attempts` tries the simulator fails with `UserSimulatorError`.
    """

    def __init__(
        self,
        model: ChatModel,
        public_request: str,
        instruction: UserInstruction,
        *,
        attempts: int = 3,
        timeout: float = 120.0,
    ) -> None:
        self.model = model
        self.name = f"llm:{model.name}"
        self.public_request = public_request
        self.attempts = attempts
        self.timeout = timeout
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": user_system_prompt(public_request, instruction)},
            {"role": "assistant", "content": public_request},
        ]

    async def opening(self) -> UserTurn:
        return UserTurn(self.public_request)

    async def respond(self, agent_text: str) -> UserTurn:
        self.messages.append({"role": "user", "content": agent_text or "(the agent said nothing)"})
        nudge: list[dict[str, Any]] = []
        problem = ""
        for attempt in range(self.attempts):
            try:
                reply = await asyncio.wait_for(
                    self.model.complete(self.messages + nudge, [END_TOOL]), self.timeout
                )
            except TimeoutError:
                problem = f"user model call timed out after {self.timeout:g} s"
                continue
            except ModelConfigError:
                raise
            except ModelError as exc:
                raise UserSimulatorError(f"user model failed: {exc}") from exc
            ends = [c for c in reply.calls if c.name == END_CONVERSATION]
            others = [c for c in reply.calls if c.name != END_CONVERSATION]
            text = (reply.text or "").strip()
            turn = UserTurn(
                text,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cost=reply.cost,
                seconds=reply.seconds,
                retries=attempt,
            )
            if ends:
                last = (ends[0].arguments or {}).get("message") if ends[0].arguments else None
                turn.text = text or (str(last) if last else "")
                turn.ends = True
                return turn
            if text and not others:
                self.messages.append({"role": "assistant", "content": text})
                return turn
            problem = "called an unknown tool" if others else "empty reply"
            nudge = [
                {
                    "role": "system",
                    "content": f"Your last reply was unusable ({problem}). Reply to the agent with a short "
                    f"message, or call {END_CONVERSATION} if you are done.",
                }
            ]
        raise UserSimulatorError(
            f"user simulator gave no usable reply in {self.attempts} attempts ({problem})"
        )


@dataclass
class ScriptedTurnsUser:
    """The fixed user of a task with scripted turns (BFCL multi-turn, AgentDojo): each time the agent ends a
    turn with a message, the next turn's text; after the last turn, the end of the conversation."""

    turns: list[str]
    name: str = "scripted-turns"
    said: int = 0

    async def opening(self) -> UserTurn:
        self.said = 1
        return UserTurn(self.turns[0])

    async def respond(self, agent_text: str) -> UserTurn:
        if self.said < len(self.turns):
            self.said += 1
            return UserTurn(self.turns[self.said - 1])
        return UserTurn("Thank you, that is all.", ends=True)


def user_for_task(task: Any) -> UserSimulator | None:
    """The user a task prescribes (its scripted turns), or None when a simulator may be chosen."""
    if task.turns:
        return ScriptedTurnsUser([t.text for t in task.turns])
    return None
