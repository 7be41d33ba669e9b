"""Read one YAML document strictly and within bounds: UTF-8 text, no duplicate keys, bounded size, depth and alias expansion.

PyYAML's `safe_load` keeps the last of two equal keys without a word and builds aliases as shared
objects, so a few hundred bytes of nested aliases (a "billion laughs") stand for millions of
values once anything walks them. Here the composed node graph is measured before anything is
constructed: every alias counts as the whole subtree it repeats (D58).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from toolshift.errors import BadInputError
from toolshift.fileio import read_bytes, unwritable

MAX_BYTES = 2 * 1024 * 1024
"""Largest YAML file read (the built-in specs are under 16 KB)."""
MAX_NODES = 200_000
"""Largest document, counting every alias as the subtree it repeats."""
MAX_DEPTH = 64

_MERGE = "tag:yaml.org,2002:merge"


MAX_INT_DIGITS = 4300
"""Longest integer read: Python's own limit for converting a string to an int (larger ones raise ValueError)."""


class _Refused(yaml.MarkedYAMLError):
    """What the strict loader refuses with a position: a repeated key, a huge integer, a non-finite number."""


class _StrictLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc,name-defined]
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:
                raise _Refused(
                    problem="a mapping key must be a plain value", problem_mark=key_node.start_mark
                ) from None
            if repeated:
                raise _Refused(problem=f"duplicate key {key!r}", problem_mark=key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_bounded_int(self, node: yaml.ScalarNode) -> int:
        digits = sum(c.isalnum() for c in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise _Refused(
                problem=f"an integer of {digits:,} digits (the limit is {MAX_INT_DIGITS:,})",
                problem_mark=node.start_mark,
            )
        return int(super().construct_yaml_int(node))

    def construct_finite_float(self, node: yaml.ScalarNode) -> float:
        value = float(super().construct_yaml_float(node))
        if not math.isfinite(value):
            raise _Refused(
                problem=f"{str(node.value)[:40]!r} is not a finite number (NaN and infinities are not read; D301)",
                problem_mark=node.start_mark,
            )
        return value


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_bounded_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _StrictLoader.construct_finite_float)


def _measure(root: yaml.Node, source: str) -> None:
    """Refuse a node graph that expands past MAX_NODES or nests past MAX_DEPTH (aliases expanded)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    on_path: set[int] = set()
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_NODES:
                raise _refuse(
                    source, node, f"the document expands to more than {MAX_NODES:,} values (aliases counted)"
                )
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _refuse(source, node, "an alias refers to a node that contains it")
        if depth > MAX_DEPTH:
            raise _refuse(source, node, f"nested more than {MAX_DEPTH} levels deep")
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in _children(node) if id(c) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _refuse(source: str, node: yaml.Node, why: str) -> BadInputError:
    mark = node.start_mark
    return BadInputError(f"{why} (at line {mark.line + 1}, column {mark.column + 1})", source=source)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def load_yaml(path: str | Path, *, what: str = "YAML file") -> Any:
    """The decoded document of a YAML file; every problem is a one-line `BadInputError` naming the file."""
    path = Path(path)
    source = str(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise BadInputError(f"cannot read {what}: {exc.strerror}", source=source) from None
    if size > MAX_BYTES:
        raise BadInputError(f"{what} is {size:,} bytes (the limit is {MAX_BYTES:,})", source=source)
    raw = read_bytes(path, what=what, max_bytes=MAX_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(
            f"{what} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})", source=source
        ) from None
    return parse_yaml(text, source)


def parse_yaml(text: str, source: str) -> Any:
    """The decoded document of YAML text (same rules as `load_yaml`)."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _measure(node, source)
        document = loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = _one_line(getattr(exc, "problem", None) or exc)
        if "invalid Unicode character escape" in problem:  # libyaml's words for a lone surrogate escape
            problem += " (a lone surrogate such as \\ud800, or past U+10FFFF: not text)"
        raise BadInputError(f"malformed YAML{at}: {problem}", source=source) from None
    except (
        ValueError,
        TypeError,
        OverflowError,
    ) as exc:  # a scalar its tag cannot hold: 2024-13-45, a bad chr()
        raise BadInputError(f"malformed YAML: {_one_line(exc)}", source=source) from None
    except RecursionError:
        raise BadInputError(
            f"malformed YAML: nested more than {MAX_DEPTH} levels deep", source=source
        ) from None
    finally:
        loader.dispose()
    found = unwritable(document)  # PyYAML's pure-Python scanner reads a lone surrogate escape as text
    if found is not None:
        raise BadInputError(f"malformed YAML: {found[1]}", source=source, field=found[0] or None)
    return document
