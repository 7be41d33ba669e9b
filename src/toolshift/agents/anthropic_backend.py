"""Anthropic's Messages API through its SDK (optional extra: `pip install 'toolshift[anthropic]'`)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from toolshift.agents.chat import DEFAULT_MAX_TOKENS, ModelConfigError, ModelReply, ProposedCall, ToolDef
from toolshift.agents.openai_backend import turn_cost
from toolshift.agents.retry import RateLimitListener, RetryPolicy, with_retries
from toolshift.agents.sdk_errors import send


def to_anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """OpenAI-style chat messages as (system, Messages-API turns): tool results become `tool_result` blocks.

    The API refuses empty and whitespace-only text blocks, so blank text is dropped (an empty user turn
    says "(empty)", an empty assistant turn "(no reply)") and an empty tool result has no content.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for m in messages:
        role, text = m["role"], m.get("content")
        blank = not (text and text.strip())
        if role == "system":
            if not blank:
                system.append(text)
        elif role == "user":
            push("user", [{"type": "text", "text": "(empty)" if blank else text}])
        elif role == "tool":
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": m["tool_call_id"]}
            if not blank:
                result["content"] = text
            push("user", [result])
        else:
            blocks: list[dict[str, Any]] = [] if blank else [{"type": "text", "text": text}]
            for call in m.get("tool_calls") or []:
                raw = call["function"]["arguments"]
                try:
                    args = json.loads(raw) if isinstance(raw, str) else raw
                except json.JSONDecodeError:
                    args = {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": args or {},
                    }
                )
            push("assistant", blocks or [{"type": "text", "text": "(no reply)"}])
    return "\n\n".join(system), turns


class AnthropicChatModel:
    """Claude models with tool use; retries on rate limits, overload and transient errors."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        request_timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        on_rate_limit: RateLimitListener | None = None,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise ModelConfigError(
                "anthropic models need the extra: pip install 'toolshift[anthropic]'"
            ) from exc
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL")
        if key is None and base_url is None:
            raise ModelConfigError(f"model anthropic:{model} needs ANTHROPIC_API_KEY")
        self.name = model
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy()
        self.on_rate_limit = on_rate_limit
        self.where = base_url or "https://api.anthropic.com"
        self._sdk = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=key or "not-needed", base_url=base_url, max_retries=0, timeout=request_timeout
        )
        self._reached = False

    async def _once(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> Any:
        system, turns = to_anthropic(messages)
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": turns}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools
            ]
            kwargs["tool_choice"] = {"type": "auto"}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        response = await send(
            self._sdk,
            self._client.messages.create(**kwargs),
            reached=self._reached,
            where=self.where,
            model=self.model,
        )
        self._reached = True
        return response

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        start = time.perf_counter()
        response = await with_retries(
            lambda: self._once(messages, tools), self.retry, on_rate_limit=self.on_rate_limit
        )
        texts = [b.text for b in response.content if getattr(b, "type", "") == "text"]
        calls = [
            ProposedCall(
                id=b.id,
                name=b.name,
                arguments=dict(b.input) if isinstance(b.input, dict) else None,
                parse_error=None if isinstance(b.input, dict) else "tool input is not an object",
            )
            for b in response.content
            if getattr(b, "type", "") == "tool_use"
        ]
        prompt = getattr(response.usage, "input_tokens", None)
        completion = getattr(response.usage, "output_tokens", None)
        return ModelReply(
            text="\n".join(texts) or None,
            calls=calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=turn_cost(self.model, prompt, completion),
            seconds=time.perf_counter() - start,
        )
