"""Which tools the embedded agent lists, and how: relevance to the user's words, and one line per tool."""

from __future__ import annotations

import re

from toolshift.agents.chat import ToolDef

_WORD = re.compile(r"[a-z0-9]+")


def words_of(text: str) -> set[str]:
    """Content words, a plural's "s" dropped, so "employees" matches "employee"."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") else w for w in _WORD.findall(text.lower()) if len(w) > 2
    }


def relevance(tool: ToolDef, said: set[str]) -> int:
    """Words a tool shares with what the user said: its name's count twice, its description's once."""
    name = words_of(tool.name.replace("_", " "))
    return 2 * len(said & name) + len(said & (words_of(tool.description) - name))


def pick_tools(tools: list[ToolDef], conversation: str, limit: int) -> list[ToolDef]:
    """The `limit` tools most relevant to the conversation, most relevant first (ties in catalog order).

    A 135M model cannot read thirty tool schemas; this keeps its prompt and grammar small,
    and a small model reads the first tools listed most.
    """
    said = words_of(conversation)
    ranked = sorted(range(len(tools)), key=lambda i: (-relevance(tools[i], said), i))
    return [tools[i] for i in ranked[:limit]]


_CLAUSE = re.compile(r"[;:]|\.(?:\s|$)")


def signature(tool: ToolDef, *, short: bool = False) -> str:
    """A tool as the prompt lists it: its name, its arguments (optional ones marked ?) and its description's
    first line cut at 90 characters, or (`short`) only its first clause (up to `;`, `:` or a full stop), D201."""
    props = (tool.input_schema or {}).get("properties") or {}
    required = set((tool.input_schema or {}).get("required") or [])
    args = ", ".join(name + ("" if name in required else "?") for name in props)
    first = tool.description.strip().split("\n")[0]
    first = _CLAUSE.split(first, maxsplit=1)[0].strip()[:90] if short else first[:90]
    return f"- {tool.name}({args}): {first}"


def param_names(tool: ToolDef) -> list[str]:
    return list((tool.input_schema or {}).get("properties") or {})


__all__ = ["param_names", "pick_tools", "relevance", "signature", "words_of"]
