"""Any OpenAI-compatible chat-completions endpoint (hosted APIs, vLLM, Ollama, llama.cpp's server)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from toolshift.agents.chat import (
    DEFAULT_MAX_TOKENS,
    ModelConfigError,
    ModelError,
    ModelReply,
    ProposedCall,
    ToolDef,
)
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


_KEEP = {
    "system": ("role", "content"),
    "user": ("role", "content"),
    "assistant": ("role", "content", "tool_calls"),
    "tool": ("role", "tool_call_id", "content"),
}


def to_openai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as the Chat Completions API documents them: only each role's documented fields, and
    `content` always a string. `"content": null` beside tool calls is allowed by the API but refused by
    servers such as llama-cpp-python's (HTTP 500), and so is an omitted content; "" is accepted by all."""
    out: list[dict[str, Any]] = []
    for m in messages:
        wire = {k: m[k] for k in _KEEP.get(m["role"], tuple(m)) if k in m}
        wire["content"] = wire.get("content") or ""
        if m["role"] == "assistant":
            calls = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"] or "",
                    },
                }
                for c in m.get("tool_calls") or []
            ]
            if calls:
                wire["tool_calls"] = calls
            else:
                wire.pop("tool_calls", None)
        out.append(wire)
    return out


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


def cached_tokens(usage: Any) -> int | None:
    """`usage.prompt_tokens_details.cached_tokens`, or None where the server does not report it (as
    llama-cpp-python's does not)."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    return cached if isinstance(cached, int) else None


NODE_BASE_URL = "TOOLSHIFT_NODE_BASE_URL"
"""This machine's OpenAI-compatible endpoint for every `openai:` model it runs, over the run's `--base-url`."""


class OpenAIChatModel:
    """Chat completions with tool calling through the `openai` SDK; our retries, not the SDK's."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        request_timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        prices: tuple[float, float] | None = None,
        on_rate_limit: RateLimitListener | None = None,
    ) -> None:
        import openai

        self.name = model
        self.model = model
        # a node's own endpoint (set where its `ray start` runs) wins over the run's: the same model served per node
        self.base_url = (
            os.environ.get(NODE_BASE_URL)
            or base_url
            or os.environ.get("TOOLSHIFT_BASE_URL")
            or os.environ.get("OPENAI_BASE_URL")
        )
        key = api_key or os.environ.get("TOOLSHIFT_API_KEY") or os.environ.get("OPENAI_API_KEY")
        if key is None and self.base_url is None:
            raise ModelConfigError(
                f"model openai:{model} needs OPENAI_API_KEY (or TOOLSHIFT_BASE_URL for a local server)"
            )
        self.temperature = temperature
        if max_tokens < 1:
            raise ModelConfigError(f"max_tokens must be at least 1, got {max_tokens}")
        self.max_tokens = max_tokens
        self.cap_field = "max_tokens"
        """`max_tokens` is what OpenAI-compatible servers read; OpenAI's newer models want `max_completion_tokens`."""
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

    def request(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> dict[str, Any]:
        """The body of one chat-completions request (without the cap field, added per attempt)."""
        body: dict[str, Any] = {"model": self.model, "messages": to_openai(messages)}
        if tools:
            # Documented default when tools are given, but servers such as llama-cpp-python's leave the
            # tools out of the prompt unless it is sent.
            body["tools"] = [tool_param(t) for t in tools]
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    async def _create(self, body: dict[str, Any]) -> Any:
        """One request; a model that refuses `max_tokens` and names `max_completion_tokens` gets that instead."""
        try:
            return await self._client.chat.completions.create(**body, **{self.cap_field: self.max_tokens})
        except self._openai.BadRequestError as exc:
            if self.cap_field != "max_tokens" or "max_completion_tokens" not in str(exc.message):
                raise
            self.cap_field = "max_completion_tokens"
            return await self._client.chat.completions.create(**body, **{self.cap_field: self.max_tokens})

    async def _once(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> Any:
        response = await send(
            self._openai,
            self._create(self.request(messages, tools)),
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
        choice = response.choices[0]
        message = choice.message
        cut = (
            f" (the reply was cut at max_tokens={self.max_tokens})"
            if choice.finish_reason == "length"
            else ""
        )
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
                    parse_error=error + cut if error else None,
                )
            )
        usage = response.usage
        prompt = usage.prompt_tokens if usage else None
        completion = usage.completion_tokens if usage else None
        return ModelReply(
            cached_prompt_tokens=cached_tokens(usage),
            text=message.content or None,
            calls=calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=turn_cost(self.model, prompt, completion, self.prices),
            seconds=time.perf_counter() - start,
        )
