"""The embedded agent's prompt that only grows within an episode, so llama.cpp's KV cache holds all but the newest.

Each turn's prompt is the previous turn's prompt, then the tokens the model decoded (kept as decoded,
never re-serialised), then the messages that arrived since, rendered once and never changed. The tools
listed in the system prompt are fixed at the episode's first turn; a tool that becomes relevant later is
appended to the user message that made it so. Nothing is inserted before the end or removed, so every
turn after the first evaluates only its new messages. When the prompt would outgrow the context, or the
conversation given is not the one this transcript follows, it is rebuilt from the messages (a cache
miss, counted in `rebuilds`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolshift.agents.chat import ToolDef

IM_END = "<|im_end|>\n"
ASSISTANT = "<|im_start|>assistant\n"


def block(role: str, content: str) -> str:
    """One ChatML message."""
    return f"<|im_start|>{role}\n{content}{IM_END}"


def compact_result(content: str, limit: int) -> str:
    """A tool result as the model reads it: JSON without spaces after separators, cut at `limit` characters."""
    try:
        text = json.dumps(json.loads(content), ensure_ascii=False, separators=(",", ":"))
    except ValueError:
        text = content
    return text if len(text) <= limit else text[: limit - 3] + "..."


def action_of(message: dict[str, Any]) -> dict[str, Any] | None:
    """The action an assistant message records ({"tool", "arguments"} or {"reply"}), as the model's JSON holds it."""
    calls = message.get("tool_calls") or []
    if calls:
        fn = calls[0].get("function") or {}
        raw = fn.get("arguments")
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            return None
        return {"tool": fn.get("name"), "arguments": args}
    return {"reply": message.get("content") or ""}


@dataclass
class Transcript:
    """One episode's prompt as tokens: what was sent, what was decoded, and the messages it renders."""

    system: str
    shown: list[ToolDef]
    seen: list[dict[str, Any]] = field(default_factory=list)
    """The conversation's messages rendered so far (copies), to check the next turn extends them."""
    tokens: list[int] = field(default_factory=list)
    """The prompt so far and, after a turn, the tokens the model decoded."""
    chat: list[dict[str, str]] = field(default_factory=list)
    """The same prompt as ChatML messages (the system prompt first), for a rebuild."""
    pending: dict[str, Any] | None = None
    """The action decoded last, whose message the next turn must begin with."""
    turns: int = 0
    rebuilds: int = 0
    known: set[str] = field(default_factory=set)
    """Every tool name the episode's listings have offered so far, shown or not: a name not in it is one a
    result has just exposed (a tool search), listed after that result."""
    exposers: set[str] = field(default_factory=set)
    """Tools whose results exposed tools (a tool search)."""

    def follows(self, messages: list[dict[str, Any]]) -> bool:
        """Do `messages` extend the conversation rendered so far, starting with the action decoded last?"""
        n = len(self.seen)
        if len(messages) <= n or messages[:n] != self.seen:
            return False
        if self.pending is None:
            return True
        nxt = messages[n]
        return nxt.get("role") == "assistant" and action_of(nxt) == self.pending

    def extend(
        self,
        messages: list[dict[str, Any]],
        render: Callable[[dict[str, Any]], dict[str, str] | None],
        tokenize: Callable[[str], list[int]],
    ) -> None:
        """Append the messages after those rendered (the first, if an action was pending, is already in)."""
        new = messages[len(self.seen) :]
        text = ""
        if self.pending is not None:
            text = IM_END
            new = new[1:]
        if not self.tokens:
            text = block("system", self.system)
            self.chat = [{"role": "system", "content": self.system}]
        for m in new:
            rendered = render(m)
            if rendered is not None:
                text += block(rendered["role"], rendered["content"])
                self.chat.append(rendered)
        text += ASSISTANT
        self.tokens += tokenize(text)
        self.seen = [dict(m) for m in messages]
        self.pending = None

    def decoded(self, evaluated: list[int], text: str, action: dict[str, Any] | None) -> None:
        """After a decode: the cache holds `evaluated` (this prompt, then the output's tokens)."""
        self.tokens = list(evaluated)
        self.chat.append({"role": "assistant", "content": text})
        # An output cut short (no action) matches no message: the next turn starts a new transcript.
        self.pending = action if action is not None else {"cut": text}
        self.turns += 1
