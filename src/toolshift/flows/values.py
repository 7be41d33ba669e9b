"""Tool outputs read as data: opportunistic JSON decoding, value paths, and canonical scalar tokens."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from toolshift.traces.result_values import ResultForm, read_result

VALUE_PATH = r"^\$(?:\.[^\[\]]+?|\[\*\])*$"
"""The paths `string_paths` writes: `$`, then `.key` (not empty, no `[` or `]`) or `[*]` per step."""


def decode_output(text: str | None, form: ResultForm = "json") -> Any:
    """A tool result as data, read as its catalog says it is printed (`toolshift.traces.result_values`): with
    `json`, JSON when it parses within the bounds of `toolshift.fileio` (depth, size), else the text itself
    (None for no result)."""
    return read_result(text, form)


def is_value(node: Any, ints: bool = False) -> bool:
    """A leaf a binding can pass: a string, or with `ints` (format 5, `Flow.ints`) an integer (not a bool)."""
    return isinstance(node, str) or (ints and type(node) is int)


def string_paths(data: Any, ints: bool = False) -> dict[str, list[Any]]:
    """Every string leaf of `data`, grouped by its path (`$.a.b`, list positions as `[*]`), in order.

    Leaves under an empty key or one holding `[` or `]` have no path a flow can carry (`VALUE_PATH`): skipped.
    With `ints`, integer leaves (not bools) are values too (format 5)."""
    out: dict[str, list[Any]] = {}
    stack: list[tuple[str, Any]] = [("$", data)]
    # Depth-first in document order: push children reversed so the first child is visited first.
    while stack:
        path, node = stack.pop()
        if isinstance(node, str) or (ints and type(node) is int):
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


@dataclass(frozen=True)
class PathPlan:
    """Where `string_paths_within` looks: the wanted paths, and per node path the keys and list positions
    that lead to one of them."""

    wanted: frozenset[str]
    keys: dict[str, tuple[tuple[str, str], ...]]
    """Node path → (key, child path) of its children on the way to a wanted path."""
    lists: frozenset[str]
    """Node paths whose list items (`path[*]`) are on the way to a wanted path."""
    ordered: frozenset[str]
    """Node paths with a key that extends another with a `.` (`a`, `a.b`): two children can then reach the
    same path, and are visited in the document's order."""


def path_plan(wanted: frozenset[str]) -> PathPlan:
    """The plan for `wanted` paths. A key may hold a `.` (`$.a.b` is key `a.b` or key `a` then `b`): every
    reading is planned, so no wanted leaf is missed."""
    keys: dict[str, set[str]] = {}
    lists: set[str] = set()
    for w in wanted:
        cuts = [j for j in range(1, len(w) + 1) if j == len(w) or w[j] in ".["]
        for n, i in enumerate(cuts):
            node = w[:i]
            if w.startswith("[*]", i):
                lists.add(node)
            elif i < len(w) and w[i] == ".":
                for j in cuts[n + 1 :]:
                    key = w[i + 1 : j]
                    if key and "[" not in key and "]" not in key:
                        keys.setdefault(node, set()).add(key)
    ordered = {node for node, ks in keys.items() if any(b.startswith(a + ".") for a in ks for b in ks)}
    return PathPlan(
        frozenset(wanted),
        {node: tuple((k, f"{node}.{k}") for k in sorted(ks)) for node, ks in keys.items()},
        frozenset(lists),
        frozenset(ordered),
    )


_ABSENT = object()


def string_paths_within(data: Any, plan: PathPlan, ints: bool = False) -> dict[str, list[Any]]:
    """`string_paths(data, ints)` restricted to the plan's wanted paths (each with the same values in the same
    order), descending only where a wanted path leads. `data` is a JSON value (string keys)."""
    out: dict[str, list[Any]] = {}
    wanted, plan_keys, lists, ordered = plan.wanted, plan.keys, plan.lists, plan.ordered
    stack: list[tuple[str, Any]] = [("$", data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str) or (ints and type(node) is int):
            if path in wanted:
                out.setdefault(path, []).append(node)
        elif isinstance(node, dict):
            children = plan_keys.get(path)
            if children is None:
                continue
            if path in ordered:  # children may reach the same path: the document's order
                named = dict(children)
                found = [(named[k], v) for k, v in node.items() if k in named]
                stack.extend(reversed(found))
            else:  # children reach disjoint paths: any order gives the same lists
                for key, child in children:
                    value = node.get(key, _ABSENT)
                    if value is not _ABSENT:
                        stack.append((child, value))
        elif isinstance(node, list) and path in lists:
            child = f"{path}[*]"
            for value in reversed(node):
                stack.append((child, value))
    return out


def _leads(child: str, target: str) -> bool:
    """Whether node path `child` is `target` or on the way to it."""
    return target.startswith(child) and (len(target) == len(child) or target[len(child)] in ".[")


def records_at(data: Any, path: str, fields: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The records (objects) at `path` of `data` holding a string at every key of `fields`, in document
    order, each as its values at those keys (a record binding's candidates; `RecordBinding`)."""
    out: list[tuple[str, ...]] = []
    stack: list[tuple[str, Any]] = [("$", data)]
    while stack:
        at, node = stack.pop()
        if isinstance(node, dict):
            if at == path:
                values = tuple(node.get(f) for f in fields)
                if all(isinstance(v, str) for v in values):
                    out.append(values)  # type: ignore[arg-type]
                continue
            for key, value in reversed(list(node.items())):
                child = f"{at}.{key}"
                if _leads(child, path):
                    stack.append((child, value))
        elif isinstance(node, list):
            child = f"{at}[*]"
            if _leads(child, path):
                for value in reversed(node):
                    stack.append((child, value))
    return out


def record_paths(data: Any) -> list[tuple[str, dict[str, str]]]:
    """Every object of `data` with its path (as `string_paths` writes it) and its string-valued keys."""
    out: list[tuple[str, dict[str, str]]] = []
    stack: list[tuple[str, Any]] = [("$", data)]
    while stack:
        at, node = stack.pop()
        if isinstance(node, dict):
            strings = {str(k): v for k, v in node.items() if isinstance(v, str) and str(k)
                       and "[" not in str(k) and "]" not in str(k)}  # fmt: skip
            if strings:
                out.append((at, strings))
            for key, value in reversed(list(node.items())):
                if (k := str(key)) and "[" not in k and "]" not in k:
                    stack.append((f"{at}.{k}", value))
        elif isinstance(node, list):
            for value in reversed(node):
                stack.append((f"{at}[*]", value))
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
    return tool + "\x00" + _KEY_JSON.encode(arguments)


_KEY_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
"""`json.dumps(…, sort_keys=True, separators=(",", ":"), default=str)`, its encoder made once."""
