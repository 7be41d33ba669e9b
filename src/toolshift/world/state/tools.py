"""The tool abstraction: a named, schema-described, effect-labelled handler, and the result of calling it.

A `Tool` is a small dataclass so a catalog can be changed after compilation: tools are added,
removed, renamed (`Tool.renamed`) or wrapped with new handlers (`Tool.wrapped`, or
`dataclasses.replace(tool, handler=...)`). A handler takes `(runtime, args)` — the runtime is the
world's `toolshift.world.state.runtime.Runtime` (database connection, row helpers, `call` for composing
other tools) — and returns a JSON-serialisable result or raises `ToolError`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from toolshift.models import RowChange
from toolshift.world.limits import INTEGER_BOUND, MAX_ARGUMENT_DEPTH, MAX_STRING_CHARS
from toolshift.world.toolerror import shorten

if TYPE_CHECKING:
    from toolshift.world.state.runtime import Runtime

ToolEffect = Literal["read", "write"]
Handler = Callable[["Runtime", dict[str, Any]], Any]


def argument_problem(args: dict[str, Any]) -> tuple[str, str] | None:
    """The first argument value a world cannot store faithfully, as `(path, reason)`, or None.

    JSON Schema accepts NaN, infinities, integers of any size, lone surrogates and strings of any length;
    SQLite and JSON do not. Paths are `/`-joined like the schema validator's. Walks without recursion, so
    any nesting depth gets an answer. Flat arguments of short strings, booleans, None and in-range numbers
    (almost every call) are answered in one pass without building paths.
    """
    if _plainly_storable(args):
        return None
    stack: list[tuple[str, Any, int]] = [(str(k), v, 1) for k, v in reversed(args.items())]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            if not -INTEGER_BOUND <= value < INTEGER_BOUND:
                return path, "integer out of range: a world keeps integers in 64 bits (-2^63 to 2^63 - 1)"
        elif isinstance(value, float):
            if not math.isfinite(value):
                return path, f"must be a finite number, not {value!r}"
        elif isinstance(value, str):
            if problem := _string_problem(value):
                return path, problem
        elif isinstance(value, dict | list):
            if depth >= MAX_ARGUMENT_DEPTH:
                return path.split("/", 1)[0], f"nested deeper than {MAX_ARGUMENT_DEPTH} levels"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            children = []
            for k, v in items:
                key = str(k)
                if isinstance(k, str) and (problem := _string_problem(k)):
                    return f"{path}/{shorten(key, 80)}", f"key {problem}"
                children.append((f"{path}/{key}", v, depth + 1))
            stack.extend(reversed(children))
    return None


_SHORT = 2048
"""A string this short cannot be over `MAX_STRING_CHARS` (asserted below)."""
assert _SHORT <= MAX_STRING_CHARS


def _plainly_storable(args: dict[str, Any]) -> bool:
    for v in args.values():
        kind = type(v)
        if kind is str:
            if len(v) > _SHORT or not v.isascii():  # a lone surrogate is not ASCII: the full walk checks it
                return False
        elif kind is int:
            if not -INTEGER_BOUND <= v < INTEGER_BOUND:
                return False
        elif kind is float:
            if not math.isfinite(v):
                return False
        elif kind is not bool and v is not None:
            return False
    return True


def integral_floats(schema: dict[str, Any], args: dict[str, Any]) -> tuple[str, str] | None:
    """Make `1.0` an `int` where the schema says integer (JSON Schema counts it as one), in place; the first
    such value beyond 64 bits as `(name, reason)` (`1e308` passes the schema, then overflows SQLite)."""
    props = schema.get("properties") or {}
    for name, value in list(args.items()):
        if not isinstance(value, float):
            continue
        kind = (props.get(name) or {}).get("type") if isinstance(props.get(name), dict) else None
        if kind == "integer" or (isinstance(kind, list) and "integer" in kind and "number" not in kind):
            if not -INTEGER_BOUND <= value < INTEGER_BOUND:
                return name, "integer out of range: a world keeps integers in 64 bits (-2^63 to 2^63 - 1)"
            args[name] = int(value)
    return None


def nonfinite_path(value: Any) -> str | None:
    """The `/`-joined path of the first NaN or infinity in a value (a tool's result, a row it writes), or None."""
    if not _any_nonfinite(value):
        return None
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return path or "result"
        if isinstance(v, dict):
            stack.extend((f"{path}/{k}" if path else str(k), x) for k, x in v.items())
        elif isinstance(v, list | tuple):
            stack.extend((f"{path}/{i}" if path else str(i), x) for i, x in enumerate(v))
    return None


def _any_nonfinite(value: Any) -> bool:
    """Whether a NaN or infinity is anywhere in `value` (no paths built: the common answer is no)."""
    stack = [value]
    isfinite = math.isfinite
    while stack:
        v = stack.pop()
        kind = type(v)
        if kind is dict:
            for x in v.values():
                t = type(x)
                if t is str or t is int or t is bool or x is None:
                    continue
                stack.append(x)
        elif kind is float:
            if not isfinite(v):
                return True
        elif kind is list or kind is tuple:
            stack.extend(v)
        elif isinstance(v, float):
            if not isfinite(v):
                return True
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
    return False


def _string_problem(text: str) -> str | None:
    if len(text) > MAX_STRING_CHARS:
        return f"{len(text):,} characters; at most {MAX_STRING_CHARS:,} are accepted"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"not valid Unicode: a lone surrogate at character {exc.start}"
    return None


@dataclass
class Tool:
    """One callable tool of a world's catalog."""

    name: str
    description: str
    input_schema: dict[str, Any]
    effect: ToolEffect
    handler: Handler
    destructive: bool = False
    """Deletes or irreversibly changes rows (MCP `destructiveHint`)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Where the tool came from: `{"kind": "get"|...|"relation"|"action", "entity": ..., ...}`."""

    @property
    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations derived from the effect."""
        read = self.effect == "read"
        return {
            "title": self.name.replace("_", " "),
            "readOnlyHint": read,
            "destructiveHint": (not read) and self.destructive,
            "idempotentHint": read or self.meta.get("kind") in ("update", "delete"),
            "openWorldHint": False,
        }

    @property
    def params(self) -> list[str]:
        return list(self.input_schema.get("properties", {}))

    @property
    def required(self) -> list[str]:
        return list(self.input_schema.get("required", []))

    def renamed(self, name: str, description: str | None = None) -> Tool:
        """A copy under another name (the handler is shared)."""
        return dataclasses.replace(
            self, name=name, description=self.description if description is None else description
        )

    def wrapped(
        self,
        wrapper: Callable[[Handler, Runtime, dict[str, Any]], Any],
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        effect: ToolEffect | None = None,
    ) -> Tool:
        """A copy whose handler is `wrapper(original_handler, runtime, args)`."""
        inner = self.handler

        def handler(rt: Runtime, args: dict[str, Any]) -> Any:
            return wrapper(inner, rt, args)

        return dataclasses.replace(
            self,
            name=name or self.name,
            description=self.description if description is None else description,
            input_schema=self.input_schema if input_schema is None else input_schema,
            effect=effect or self.effect,
            handler=handler,
            meta={**self.meta, "wraps": self.name},
        )

    def listing(self) -> dict[str, Any]:
        """The tool as an MCP / function-calling listing entry (name, description, inputSchema)."""
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


@dataclass
class CallResult:
    """What one call did: its result or structured error, and the row changes it made (empty on error)."""

    tool: str
    ok: bool
    result: Any = None
    error: dict[str, str] | None = None
    changes: list[RowChange] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form: `{ok, result}` or `{ok, error}`, plus `changes`."""
        body: dict[str, Any] = {"tool": self.tool, "ok": self.ok}
        if self.ok:
            body["result"] = self.result
        else:
            body["error"] = self.error
        body["changes"] = [c.model_dump(mode="json") for c in self.changes]
        return body

    def payload(self) -> Any:
        """What a caller sees: the result, or `{code, message}` on error."""
        return self.result if self.ok else self.error
