"""Any OpenAI-compatible chat-completions endpoint (hosted APIs, vLLM, Ollama, llama.cpp's server)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from toolshift.agents.chat import ModelConfigError, ModelError, ModelReply, ProposedCall, ToolDef
from toolshift.agents.retry import RateLimitListener, RetryPolicy, with_retries
from toolshift.agents.sdk_errors import send

PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
}
"""USD per million (prompt, completion) tokens for a few well-known models; others cost what you configure."""


def turn_cost(
    model: str, prompt_tokens: int | None, completion_tokens: int | None, prices=None
) -> float | None:
    """The turn's cost in USD, or None when the price or the token counts are unknown."""
    price = prices or PRICES_PER_MTOK.get(model)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def tool_param(tool: ToolDef) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
    }


def parse_arguments(raw: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """Decode a tool call's JSON arguments: (arguments, None) or (None, why it did not parse)."""
    if raw is None or raw.strip() == "":
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


class OpenAIChatModel:
    """Chat completions with tool calling through the `openai` SDK; our retries, not the SDK's."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        request_timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        prices: tuple[float, float] | None = None,
        on_rate_limit: RateLimitListener | None = None,
    ) -> None:
        import openai

        self.name = model
        self.model = model
        self.base_url = base_url or os.environ.get("TOOLSHIFT_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("TOOLSHIFT_API_KEY") or os.environ.get("OPENAI_API_KEY")
        if key is None and self.base_url is None:
            raise ModelConfigError(
                f"model openai:{model} needs OPENAI_API_KEY (or TOOLSHIFT_BASE_URL for a local server)"
            )
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy()
        self.prices = prices
        self.on_rate_limit = on_rate_limit
        self._openai = openai
        self._reached = False
        self._client = openai.AsyncOpenAI(
            api_key=key or "not-needed", base_url=self.base_url, max_retries=0, timeout=request_timeout
        )

    @property
    def where(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    async def _once(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> Any:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = [tool_param(t) for t in tools]
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        response = await send(
            self._openai,
            self._client.chat.completions.create(**kwargs),
            reached=self._reached,
            where=self.where,
            model=self.model,
            route=" (or the chat-completions route)",
        )
        self._reached = True
        return response

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        start = time.perf_counter()
        response = await with_retries(
            lambda: self._once(messages, tools), self.retry, on_rate_limit=self.on_rate_limit
        )
        if not response.choices:
            raise ModelError(f"{self.where} returned no choices")
        message = response.choices[0].message
        calls = []
        for i, tc in enumerate(message.tool_calls or []):
            fn = getattr(tc, "function", None)
            if fn is None:
                continue
            args, error = parse_arguments(fn.arguments)
            calls.append(
                ProposedCall(
                    id=tc.id or f"call_{i}",
                    name=fn.name,
                    arguments=args,
                    raw_arguments=fn.arguments if error else None,
                    parse_error=error,
                )
            )
        usage = response.usage
        prompt = usage.prompt_tokens if usage else None
        completion = usage.completion_tokens if usage else None
        return ModelReply(
            text=message.content or None,
            calls=calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=turn_cost(self.model, prompt, completion, self.prices),
            seconds=time.perf_counter() - start,
        )
