"""What interpreted action code may cost: one call's step budget, and the bounded operations that charge it.

Every operation of `toolshift.world.language.interpreter` whose cost or result size depends on the data
(string and list building, big integers, comparing or hashing containers, converting them to
text) goes through a function here that checks the size *before* making the value and charges
the call's `Budget`. A spec can therefore neither hang a call nor exhaust memory: it is stopped
with a `limit_exceeded` domain error and its transaction rolls back (D55).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from datetime import date
from typing import Any

from toolshift.world.toolerror import ToolError

STEP_BUDGET = 1_000_000
"""Steps one outermost call may use: about one per syntax node evaluated, per element, per 64 characters."""
MAX_STR = 1_000_000
"""Characters of one string interpreted code may make."""
MAX_ITEMS = 100_000
"""Elements of one list or tuple made by repetition or concatenation."""
MAX_INT_BITS = 4_096
"""Bits of an integer made by `*` or `**`."""
MAX_NDIGITS = 100
"""`round(x, n)` takes |n| up to this."""
MAX_NESTING = 100
"""Levels of containers in one value that is compared, hashed, printed or returned."""

ATOMS = frozenset({int, float, bool, type(None)})
"""Values whose comparison, hashing and printing cost a constant."""


class Budget:
    """The steps left to one outermost tool call (shared by the actions it calls)."""

    __slots__ = ("limit", "steps")

    def __init__(self, limit: int = STEP_BUDGET) -> None:
        self.steps = self.limit = limit

    def charge(self, n: int) -> None:
        self.steps -= n
        if self.steps < 0:
            raise ToolError(
                "limit_exceeded",
                f"the action was stopped after {self.limit:,} steps "
                "(a loop that does not end, or more work than one call may do)",
            )


def too_big(what: str, size: int, limit: int) -> ToolError:
    return ToolError("limit_exceeded", f"the action would make {what} of {size:,} (the limit is {limit:,})")


def measure(b: Budget, x: Any) -> int:
    """Charge the cost of walking `x` (shared parts counted each time) and return a bound on len(repr(x)).

    The walk is iterative and refuses values nested deeper than MAX_NESTING, so the C code that
    compares, hashes or prints the value afterwards cannot recurse out of its stack (hashing a
    tuple nested 250,000 deep crashes CPython 3.11).
    """
    t = type(x)
    if t in ATOMS:
        return 24 if t is not int else x.bit_length() // 3 + 2
    if t is str:
        b.charge(len(x) >> 6)
        return 4 * len(x) + 2 if x.isascii() else 10 * len(x) + 2
    size, nodes, stack = 0, 0, [(x, 1)]
    left = b.steps
    while stack:
        v, depth = stack.pop()
        nodes += 1
        t = type(v)
        if t is str:
            nodes += len(v) >> 6
            size += 4 * len(v) + 2 if v.isascii() else 10 * len(v) + 2
        elif t in ATOMS:
            size += 24 if t is not int else v.bit_length() // 3 + 2
        elif t in (list, tuple, set, frozenset, dict):
            if depth >= MAX_NESTING:
                raise ToolError(
                    "limit_exceeded", f"the action made a value nested more than {MAX_NESTING} levels deep"
                )
            if t is dict:
                size += 2 + 4 * len(v)
                stack.extend((k, depth + 1) for k in v)
                stack.extend((w, depth + 1) for w in v.values())
            else:
                size += 2 + 2 * len(v)
                stack.extend((w, depth + 1) for w in v)
        else:
            size += 64
        if nodes > left:
            break
    b.charge(nodes)
    return size


def cost(b: Budget, x: Any) -> None:
    """Charge what comparing, hashing or searching `x` costs (nothing for numbers and short strings)."""
    t = type(x)
    if t is str:
        if len(x) > 4096:
            b.charge(len(x) >> 6)
    elif t not in ATOMS:
        measure(b, x)


def new_str(b: Budget, n: int) -> None:
    """Before making a string of `n` characters."""
    if n > MAX_STR:
        raise too_big("a string", n, MAX_STR)
    b.charge(n >> 4)


def to_text(b: Budget, x: Any, conversion: str | None = None, spec: str = "") -> str:
    """What an f-string field makes of `x` (`conversion` `s`, `r`, `a` or none, then `format(x, spec)`), or
    `str(x)` with conversion `s`; refused before it would pass MAX_STR."""
    if type(x) is not str or conversion in ("r", "a"):
        est = measure(b, x)
        if est > MAX_STR:
            raise too_big("a string", est, MAX_STR)
    if conversion == "r":
        x = repr(x)
    elif conversion == "a":
        x = ascii(x)
    elif conversion == "s":
        x = str(x)
    out = format(x, spec)
    new_str(b, len(out))
    return out


def join_text(b: Budget, parts: list[str]) -> str:
    new_str(b, sum(len(p) for p in parts))
    return "".join(parts)


def _is_num(x: Any) -> bool:
    return type(x) in (int, float, bool)


def add(b: Budget, x: Any, y: Any) -> Any:
    tx, ty = type(x), type(y)
    if tx is str and ty is str:
        new_str(b, len(x) + len(y))
    elif tx in (list, tuple) and ty is tx:
        n = len(x) + len(y)
        if n > MAX_ITEMS:
            raise too_big(f"a {tx.__name__}", n, MAX_ITEMS)
        b.charge(n)
    return x + y


def multiply(b: Budget, x: Any, y: Any) -> Any:
    tx, ty = type(x), type(y)
    if tx in (int, bool) and ty in (int, bool):
        bits = x.bit_length() + y.bit_length()
        if bits > MAX_INT_BITS:
            raise too_big("an integer", bits, MAX_INT_BITS) from None
    elif tx in (str, list, tuple) and ty in (int, bool):
        _repeat(b, x, y)
    elif ty in (str, list, tuple) and tx in (int, bool):
        _repeat(b, y, x)
    return x * y


def _repeat(b: Budget, seq: Any, times: int) -> None:
    n = len(seq) * max(times, 0)
    if type(seq) is str:
        new_str(b, n)
    elif n > MAX_ITEMS:
        raise too_big(f"a {type(seq).__name__}", n, MAX_ITEMS)
    else:
        b.charge(n)


def power(b: Budget, x: Any, y: Any) -> Any:
    if type(x) in (int, bool) and type(y) in (int, bool) and y > 0 and abs(x) > 1:
        bits = x.bit_length() * y
        if bits > MAX_INT_BITS:
            raise too_big("an integer", bits, MAX_INT_BITS)
    return x**y


def modulo(b: Budget, x: Any, y: Any) -> Any:
    if type(x) is str:
        raise ToolError("invalid_code", "'%' formatting is not available in action code; use an f-string")
    return x % y


def union(b: Budget, x: Any, y: Any) -> Any:
    if type(x) in (set, frozenset, dict):
        b.charge(len(x) + len(y))
    return x | y


def sliced(b: Budget, value: Any, index: slice) -> Any:
    out = value[index]
    b.charge(len(out) >> 4 if type(out) is str else len(out))
    return out


def items(b: Budget, iterable: Iterable[Any], *, compared: bool = False) -> list[Any]:
    """The elements of `iterable` as a list, charged one step each (plus their size when `compared`)."""
    out = list(iterable)
    b.charge(len(out))
    if compared:
        for x in out:
            cost(b, x)
    return out


def charged(b: Budget, iterable: Iterable[Any]) -> Iterator[Any]:
    for x in iterable:
        b.charge(1)
        yield x


def sort_steps(b: Budget, n: int) -> None:
    if n > 1:
        b.charge(n * math.ceil(math.log2(n)))


def round_(b: Budget, x: Any, ndigits: Any = None) -> Any:
    if ndigits is None:
        return round(x)
    if type(ndigits) is int and abs(ndigits) > MAX_NDIGITS:
        raise too_big("round() to a number of digits", abs(ndigits), MAX_NDIGITS)
    return round(x, ndigits)


def jsonable(value: Any, b: Budget | None = None) -> Any:
    """An action's result as JSON values (tuples and sets → lists, dates → ISO, other objects → str).

    With a budget, every value converted costs a step, so a result built from shared parts cannot
    make an unbounded JSON document.
    """
    if b is not None:
        b.charge(1)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {_key_text(k, b): jsonable(v, b) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, b) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v, b) for v in value), key=str)
    if isinstance(value, date):
        return value.isoformat()
    return str(value) if b is None else to_text(b, value, "s")


def _key_text(key: Any, b: Budget | None) -> str:
    if type(key) is str:
        return key
    return str(key) if b is None else to_text(b, key, "s")
