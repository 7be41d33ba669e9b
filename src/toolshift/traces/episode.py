"""The episode model: one agent run of one task, as toolshift records and reads it.

It is a superset of what τ²-bench's `SimulationRun` holds for a text run (messages, costs,
usage, timing, reward), plus the ids and the world diff toolshift needs. `toolshift.traces.tau2`
converts both ways.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolshift.models import RowChange

EPISODE_FORMAT: Final = "toolshift.episode/1"

Role = Literal["system", "user", "assistant", "tool"]
Requestor = Literal["assistant", "user"]


class ToolCall(BaseModel):
    """A call an assistant (or, in some domains, the user) asked for. Arguments are parsed."""

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Requestor = "assistant"
    malformed: bool | None = None
    """True (else absent) when the run's call could not be read as a call: its arguments were not a JSON
    object (then `arguments` is `{"_raw": <the text as written>}`) or it had no name (`name` is then "").
    It is kept, never executed by its harness, and counts as a call to a tool that does not exist: neither a
    read nor a write."""


class Usage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    """Of `prompt_tokens`, those the model's prompt cache served (OpenAI's `prompt_tokens_details.cached_tokens`,
    the embedded model's reused KV-cache prefix); None when the backend does not report it."""


class Message(BaseModel):
    """One message. A `tool` message is the result of one call: `tool_call_id` pairs it with it."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    """For a tool message: the tool whose result it is."""
    error: bool = False
    """For a tool message: the call failed (unknown tool, bad arguments, domain error, timeout)."""
    requestor: Requestor | None = None
    timestamp: str | None = None
    generation_time_seconds: float | None = None
    usage: Usage | None = None
    cost: float | None = None


class Outcome(BaseModel):
    """How the episode was judged. `judged_by` names the rule (e.g. `delta-cover`, `tau2-reward`)."""

    reward: float | None = None
    success: bool | None = None
    judged_by: str | None = None
    info: dict[str, Any] = Field(default_factory=dict)


class Episode(BaseModel):
    """One episode: ids, messages, timing and cost, outcome, and the world diff where known."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["toolshift.episode/1"] = EPISODE_FORMAT
    id: str
    task_id: str
    trial: int = 0
    domain: str
    agent: str | None = None
    model: str | None = None
    harness: str | None = None
    ecosystem_version: str | None = None
    messages: list[Message] = Field(default_factory=list)
    termination_reason: str | None = None
    outcome: Outcome | None = None
    world_diff: list[RowChange] | None = None
    start_time: str | None = None
    end_time: str | None = None
    duration: float | None = None
    agent_cost: float | None = None
    user_cost: float | None = None
    source: dict[str, Any] = Field(default_factory=dict)
    """Where the episode came from (file, record index, converter) and any source fields kept verbatim."""


def assistant_turns(episode: Episode) -> list[Message]:
    """The agent's turns: every assistant message, in order (a turn is one assistant message)."""
    return [m for m in episode.messages if m.role == "assistant"]


def paired_calls(episode: Episode) -> list[tuple[int, ToolCall, Message | None]]:
    """Every tool call with its result: (index of the calling message, call, tool message or None).

    Results are paired by order, not by id (published runs reuse ids): the tool messages that
    follow a message carrying calls answer those calls in call order. A call whose result is
    missing (the run ended) is paired with None.
    """
    out: list[tuple[int, ToolCall, Message | None]] = []
    messages = episode.messages
    i = 0
    while i < len(messages):
        message = messages[i]
        calls = message.tool_calls or []
        j = i + 1
        for call in calls:
            result = None
            if j < len(messages) and messages[j].role == "tool":
                result = messages[j]
                j += 1
            out.append((i, call, result))
        i = j if calls else i + 1
    return out
