"""Declared output-format changes: each encodes a tool's result in a new shape and decodes it back exactly.

A one-to-one "format change" wraps a tool's handler with `encode`; the capability check decodes
the new tool's output and requires it to equal the source's output. A codec whose decode is not an
exact inverse on some gold input (a date-looking string that is not a date, money with more than
two decimals, a field name that does not survive the round trip) makes the check fail, and the
transformation is rejected with that reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
ISO_DATETIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}:\d{2}(?::\d{2})?)$")
DMY_DATE = re.compile(r"^(\d{2})/(\d{2})/(\d{4})$")
DMY_DATETIME = re.compile(r"^(\d{2})/(\d{2})/(\d{4}) (\d{2}:\d{2}(?::\d{2})?)$")
MONEY = re.compile(r"^(-?\d+)\.(\d{2})$")


def _walk(value: Any, leaf: Callable[[str | None, Any], Any], key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, leaf, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, leaf, key) for v in value]
    return leaf(key, value)


def _rekey(value: Any, rename: Callable[[str], str]) -> Any:
    if isinstance(value, dict):
        return {rename(k): _rekey(v, rename) for k, v in value.items()}
    if isinstance(value, list):
        return [_rekey(v, rename) for v in value]
    return value


def _dates_encode(_key: str | None, v: Any) -> Any:
    if isinstance(v, str):
        if m := ISO_DATE.match(v):
            return f"{m[3]}/{m[2]}/{m[1]}"
        if m := ISO_DATETIME.match(v):
            return f"{m[3]}/{m[2]}/{m[1]} {m[4]}"
    return v


def _dates_decode(_key: str | None, v: Any) -> Any:
    if isinstance(v, str):
        if m := DMY_DATE.match(v):
            return f"{m[3]}-{m[2]}-{m[1]}"
        if m := DMY_DATETIME.match(v):
            return f"{m[3]}-{m[2]}-{m[1]}T{m[4]}"
    return v


def snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def camel_to_snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m[1].lower(), name)


@dataclass(frozen=True)
class Codec:
    """A named, declared output-format change: `encode` on the way out, `decode` to check it."""

    name: str
    description: str
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


def money_codec(money_fields: frozenset[str], currency: str = "USD") -> Codec:
    """Money fields as `{"amount": "12.50", "currency": "USD"}` instead of a number."""

    def enc(key: str | None, v: Any) -> Any:
        if key in money_fields and isinstance(v, int | float) and not isinstance(v, bool):
            return {"amount": f"{v:.2f}", "currency": currency}
        return v

    def encode(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: enc(k, v) if not isinstance(v, dict | list) else encode(v) for k, v in value.items()}
        if isinstance(value, list):
            return [encode(v) for v in value]
        return value

    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"amount", "currency"} and isinstance(value["amount"], str):
                m = MONEY.match(value["amount"])
                if m:
                    return float(value["amount"])
            return {k: decode(v) for k, v in value.items()}
        if isinstance(value, list):
            return [decode(v) for v in value]
        return value

    return Codec(
        "money", f"money amounts are objects {{amount: '12.50', currency: '{currency}'}}", encode, decode
    )


CODECS: dict[str, Codec] = {
    "nest": Codec(
        "nest",
        "the result is nested under `data`, with `api_version` beside it",
        lambda v: {"data": v, "api_version": 2},
        lambda v: v["data"] if isinstance(v, dict) and "data" in v else v,
    ),
    "dates": Codec(
        "dates",
        "dates are DD/MM/YYYY and date-times DD/MM/YYYY HH:MM",
        lambda v: _walk(v, _dates_encode),
        lambda v: _walk(v, _dates_decode),
    ),
    "camel": Codec(
        "camel",
        "field names are camelCase",
        lambda v: _rekey(v, snake_to_camel),
        lambda v: _rekey(v, camel_to_snake),
    ),
}


def codec(name: str, money_fields: frozenset[str] = frozenset()) -> Codec:
    """The codec called `name` (`money` needs the domain's money field names)."""
    if name == "money":
        return money_codec(money_fields)
    return CODECS[name]


CODEC_NAMES: tuple[str, ...] = ("nest", "dates", "camel", "money")
