"""The chat vocabulary every model backend speaks: tool definitions, model replies, usage and errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from toolshift.errors import ToolshiftError

DEFAULT_MAX_TOKENS = 1024
"""The cap on one API-model reply's output tokens unless configured: one runaway generation cannot stall a run."""


@dataclass(frozen=True)
class ToolDef:
    """A tool as a model sees it: name, description and the JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool | None = None
    """MCP's `readOnlyHint`, where the server gives it."""


@dataclass
class ProposedCall:
    """A tool call as the model emitted it. `raw_arguments` is kept when it did not parse."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str | None = None
    parse_error: str | None = None


@dataclass
class ModelReply:
    """One model turn: text to the other party, tool calls, or both; with usage and cost."""

    text: str | None = None
    calls: list[ProposedCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    seconds: float = 0.0
    cached_prompt_tokens: int | None = None
    """Prompt tokens served from the model's prompt cache (OpenAI's `prompt_tokens_details.cached_tokens`);
    None when the backend does not report it."""


class ChatModel(Protocol):
    """What the agent loop and the LLM user need from a model: one completion over OpenAI-style messages."""

    name: str

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply: ...


class ModelError(ToolshiftError):
    """A model call failed for good (after retries)."""


class ModelConfigError(ModelError):
    """The endpoint is unreachable, the key is refused or the model name is wrong: retrying will not help."""

    exit_code = 2


class RetryableModelError(ModelError):
    """A rate limit or a transient failure: worth retrying after a pause."""

    def __init__(self, message: str, *, rate_limited: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.rate_limited = rate_limited
        self.retry_after = retry_after
