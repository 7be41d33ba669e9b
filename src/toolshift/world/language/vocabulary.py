"""What interpreted action code may call and apply: the builtins, the methods, the operators.

Each entry takes the call's `Budget` first and goes through `toolshift.world.language.bounds`, so what it
costs is charged and what it makes is bounded before it is made (D55). The interpreter
(`toolshift.world.language.interpreter`) refuses at load any name, method or operator not listed here.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from toolshift.world.language import bounds
from toolshift.world.language.bounds import Budget, cost
from toolshift.world.toolerror import ToolError

MISSING = object()


def _keyed(b: Budget, key: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def charged_key(x: Any) -> Any:
        v = key(x)
        cost(b, v)
        return v

    return charged_key


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def impl(b: Budget, *args: Any, key: Any = None, default: Any = MISSING) -> Any:
        if len(args) == 1:
            seq: list[Any] = bounds.items(b, args[0], compared=key is None)
        else:
            seq = list(args)
            for x in seq if key is None else ():
                cost(b, x)
        kw: dict[str, Any] = {} if key is None else {"key": _keyed(b, key)}
        if default is not MISSING:
            kw["default"] = default
        return pick(seq, **kw) if len(args) == 1 else pick(*seq, **kw)

    return impl


def _sorted(b: Budget, iterable: Any, *, key: Any = None, reverse: bool = False) -> list[Any]:
    seq = bounds.items(b, iterable, compared=key is None)
    bounds.sort_steps(b, len(seq))
    return sorted(seq, key=None if key is None else _keyed(b, key), reverse=reverse)


def _sum(b: Budget, iterable: Any, start: Any = 0) -> Any:
    if type(start) not in (int, float, bool):
        raise ToolError("invalid_code", "sum() in action code adds numbers; its start must be a number")
    return sum(bounds.charged(b, iterable), start)


def _numeric(convert: Callable[..., Any]) -> Callable[..., Any]:
    def impl(b: Budget, *args: Any, **kw: Any) -> Any:
        for x in args:
            cost(b, x)
        return convert(*args, **kw)

    return impl


BUILTINS: dict[str, tuple[Callable[..., Any], frozenset[str]]] = {
    "abs": (lambda b, x: abs(x), frozenset()),
    "all": (lambda b, it: all(bounds.charged(b, it)), frozenset()),
    "any": (lambda b, it: any(bounds.charged(b, it)), frozenset()),
    "bool": (lambda b, *x: bool(*x), frozenset()),
    "float": (_numeric(float), frozenset()),
    "int": (_numeric(int), frozenset({"base"})),
    "len": (lambda b, x: len(x), frozenset()),
    "max": (_extreme(max), frozenset({"key", "default"})),
    "min": (_extreme(min), frozenset({"key", "default"})),
    "round": (lambda b, x, ndigits=None: bounds.round_(b, x, ndigits), frozenset({"ndigits"})),
    "sorted": (_sorted, frozenset({"key", "reverse"})),
    "str": (lambda b, x="": bounds.to_text(b, x, "s"), frozenset()),
    "sum": (_sum, frozenset({"start"})),
}
"""Builtin name → (implementation taking the frame first, keyword arguments it accepts)."""
KEY_TAKERS = frozenset({"sorted", "max", "min"})


def _str_method(method: Callable[..., Any]) -> Callable[..., Any]:
    def impl(b: Budget, s: str, *args: Any, **kw: Any) -> Any:
        b.charge(len(s) >> 6)
        for x in args:
            cost(b, x)
        out = method(s, *args, **kw)
        if type(out) is str:
            bounds.new_str(b, len(out))
        elif type(out) is list:
            b.charge(len(out))
        return out

    return impl


def _replace(b: Budget, s: str, old: str, new: str, count: int = -1) -> str:
    if type(old) is str and type(new) is str and type(count) is int:
        hits = s.count(old) if old else len(s) + 1
        hits = hits if count < 0 else min(hits, count)
        bounds.new_str(b, len(s) + hits * (len(new) - len(old)))
    return s.replace(old, new, count)


def _join(b: Budget, sep: str, iterable: Any) -> str:
    parts = bounds.items(b, iterable)
    if all(type(p) is str for p in parts):
        bounds.new_str(b, sum(len(p) for p in parts) + len(sep) * max(len(parts) - 1, 0))
    return sep.join(parts)


def _dict_get(b: Budget, d: dict[Any, Any], *args: Any) -> Any:
    if args:
        cost(b, args[0])
    return d.get(*args)


def _append(b: Budget, items: list[Any], x: Any) -> None:
    b.charge(1)
    items.append(x)


METHODS: dict[str, dict[type, Callable[..., Any]]] = {
    "get": {dict: _dict_get},
    "append": {list: _append},
    "replace": {str: _replace},
    "join": {str: _join},
    **{
        name: {str: _str_method(getattr(str, name))}
        for name in ("strip", "lstrip", "rstrip", "lower", "upper", "startswith", "endswith", "split")
    },
}
"""Method name → receiver type → implementation taking the budget and the receiver first."""

COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda x, y: x in y,
    ast.NotIn: lambda x, y: x not in y,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def _sized(op: Callable[[Any, Any], Any]) -> Callable[[Budget, Any, Any], Any]:
    def impl(b: Budget, x: Any, y: Any) -> Any:
        out = op(x, y)
        if type(out) in (set, frozenset):
            b.charge(len(out))
        return out

    return impl


BINARY: dict[type, Callable[[Budget, Any, Any], Any]] = {
    ast.Add: bounds.add,
    ast.Sub: _sized(operator.sub),
    ast.Mult: bounds.multiply,
    ast.Div: lambda b, x, y: x / y,
    ast.FloorDiv: lambda b, x, y: x // y,
    ast.Mod: bounds.modulo,
    ast.Pow: bounds.power,
    ast.BitAnd: _sized(operator.and_),
    ast.BitOr: bounds.union,
    ast.BitXor: _sized(operator.xor),
}
UNARY: dict[type, Callable[[Any], Any]] = {
    ast.Not: operator.not_,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
}
