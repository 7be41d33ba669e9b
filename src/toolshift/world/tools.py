"""The tool abstraction: a named, schema-described, effect-labelled handler, and the result of calling it.

A `Tool` is a small dataclass so a catalog can be changed after compilation: tools are added,
removed, renamed (`Tool.renamed`) or wrapped with new handlers (`Tool.wrapped`, or
`dataclasses.replace(tool, handler=...)`). A handler takes `(runtime, args)` — the runtime is the
world's `toolshift.world.runtime.Runtime` (database connection, row helpers, `call` for composing
other tools) — and returns a JSON-serialisable result or raises `ToolError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from toolshift.models import RowChange

if TYPE_CHECKING:
    from toolshift.world.runtime import Runtime

ToolEffect = Literal["read", "write"]
Handler = Callable[["Runtime", dict[str, Any]], Any]


class ToolError(Exception):
    """A domain failure reported to the caller as `{code, message}`; the call's transaction rolls back."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


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
