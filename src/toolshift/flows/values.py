"""Tool outputs read as data: opportunistic JSON decoding, value paths, and canonical scalar tokens."""

from __future__ import annotations

import json
from typing import Any

from toolshift.errors import BadInputError
from toolshift.fileio import loads_json

JSON_START = frozenset('{["-0123456789tfn')
VALUE_PATH = r"^\$(?:\.[^\[\]]+?|\[\*\])*$"
"""The paths `string_paths` writes: `$`, then `.key` (not empty, no `[` or `]`) or `[*]` per step."""


def decode_output(text: str | None) -> Any:
    """A tool result as data: JSON when it parses within the bounds of `toolshift.fileio` (depth, size),
    else the text itself (None for no result)."""
    if text is None:
        return None
    stripped = text.strip()
    if stripped and stripped[0] in JSON_START:
        try:
            return loads_json(stripped)
        except BadInputError:
            return text
    return text


def string_paths(data: Any) -> dict[str, list[str]]:
    """Every string leaf of `data`, grouped by its path (`$.a.b`, list positions as `[*]`), in order.

    Leaves under an empty key or one holding `[` or `]` have no path a flow can carry (`VALUE_PATH`): skipped.
    """
    out: dict[str, list[str]] = {}
    stack: list[tuple[str, Any]] = [("$", data)]
    # Depth-first in document order: push children reversed so the first child is visited first.
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            out.setdefault(path, []).append(node)
        elif isinstance(node, dict):
            for key, value in reversed(list(node.items())):
                if (k := str(key)) and "[" not in k and "]" not in k:
                    stack.append((f"{path}.{k}", value))
        elif isinstance(node, list):
            child = f"{path}[*]"
            for value in reversed(node):
                stack.append((child, value))
    return out


def canonical(value: Any) -> str:
    """One token per scalar, so `5`, `5.0` and `"5"` compare as the same value; containers as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if value is None:
        return "null"
    return json.dumps(value, sort_keys=True, default=str)


def scalar_tokens(data: Any) -> set[str]:
    """Every scalar leaf of `data` as a canonical token (what "a value in an earlier result" means)."""
    out: set[str] = set()
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif node is not None:
            out.add(canonical(node))
    return out


def leaf_values(value: Any) -> list[Any]:
    """The scalar values an argument carries: itself, or every leaf of a list or object."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in leaf_values(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in leaf_values(v)]
    return [value]


def call_key(tool: str, arguments: dict[str, Any]) -> str:
    """The identity of a call: its tool and arguments, canonically serialised."""
    return tool + "\x00" + json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
