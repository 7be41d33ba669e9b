"""Answer malformed JSON-RPC before the `mcp` SDK sees it: an error reply for every request that has an id.

The SDK drops a message it cannot validate (over stdio nothing is written back, so the client waits
for its timeout) or, over HTTP, answers with `id: null`, which a client cannot match to its request.
`screen` reads one raw message the way a tolerant parser would, finds each request's id, and returns
the error replies owed; a message the SDK will handle itself passes through (`None`). Checked: batches
(MCP has none since 2025-06-18; each request in one gets its own error), `params` that is not an
object, a bad `jsonrpc` / `method` / `id`, lone surrogates and invalid UTF-8, nesting beyond
`MAX_MESSAGE_DEPTH`, text that is not JSON (the id is still found when it sits at the top level),
and anything else the SDK's message model refuses.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import suppress
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from toolshift.fileio import encodes_utf8
from toolshift.world.limits import MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_BUSY = -32000
"""JSON-RPC server-defined error: no room for another session."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]', re.DOTALL)


def error_reply(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error object for `request_id` (None when the id is unknown)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def screen(raw: str | bytes) -> list[dict[str, Any]] | None:
    """The error replies owed for one raw message, or None when the SDK should handle it.

    A list of one reply for a single message; one per request (in order) for a batch.
    """
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # Kept, as lone surrogates, so the reply can still name the request and the field.
            text = raw.decode("utf-8", "surrogateescape")
    else:
        text = raw
    if not text.strip():
        return None
    try:
        message = json.loads(text)
    except RecursionError:
        return [error_reply(top_level_id(text), INVALID_REQUEST, _too_deep())]
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return [error_reply(top_level_id(text), PARSE_ERROR, f"Parse error: {reason}")]
    if isinstance(message, list):
        return _batch(message)
    reply = _check(message, text)
    return None if reply is None else [reply]


def _batch(items: list[Any]) -> list[dict[str, Any]]:
    why = "batches are not part of MCP (since 2025-06-18): send each request on its own"
    replies = [
        error_reply(item["id"], INVALID_REQUEST, why)
        for item in items
        if isinstance(item, dict) and "id" in item and _valid_id(item["id"])
    ]
    return replies or [error_reply(None, INVALID_REQUEST, why)]


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _check(message: Any, text: str) -> dict[str, Any] | None:
    if not isinstance(message, dict):
        return error_reply(None, INVALID_REQUEST, "a JSON-RPC message must be a JSON object")
    if "id" not in message:
        return None  # a notification: no reply is owed, and the SDK drops a malformed one
    if "method" not in message and ("result" in message or "error" in message):
        return None  # the client's answer to a server request: the SDK matches it or drops it
    rid = message["id"]
    if not _valid_id(rid):
        return error_reply(None, INVALID_REQUEST, '"id" must be a string or an integer')
    if message.get("jsonrpc") != "2.0":
        return error_reply(rid, INVALID_REQUEST, '"jsonrpc" must be "2.0"')
    if not isinstance(message.get("method"), str):
        return error_reply(rid, INVALID_REQUEST, '"method" must be a string')
    if "params" in message and not isinstance(message["params"], dict):
        return error_reply(rid, INVALID_PARAMS, '"params" must be a JSON object')
    problem = _deep_problem(message, text)
    if problem is not None:
        return error_reply(rid, *problem)
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "message"
        return error_reply(rid, INVALID_REQUEST, f"not a valid JSON-RPC request: {where}: {first['msg']}")
    return None


def _deep_problem(message: dict[str, Any], text: str) -> tuple[int, str] | None:
    """Nesting beyond the limit, or a string that is not valid Unicode, with its path; quick when neither can occur."""
    maybe_deep = text.count("[") + text.count("{") > MAX_MESSAGE_DEPTH
    try:
        text.encode("utf-8")
        maybe_surrogate = _SURROGATE_ESCAPE.search(text) is not None
    except UnicodeEncodeError:
        maybe_surrogate = True
    if not (maybe_deep or maybe_surrogate):
        return None
    stack: list[tuple[str, Any, int]] = [("", message, 1)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, str):
            if not encodes_utf8(value):
                return (
                    INVALID_PARAMS,
                    f"{path or 'message'}: not valid Unicode (a lone surrogate or invalid UTF-8)",
                )
        elif isinstance(value, dict | list):
            if depth > MAX_MESSAGE_DEPTH:
                return INVALID_REQUEST, _too_deep()
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                key = str(k)
                if isinstance(k, str) and not encodes_utf8(k):
                    return (
                        INVALID_PARAMS,
                        f"{path or 'message'}: a key is not valid Unicode (a lone surrogate)",
                    )
                stack.append((f"{path}.{key}" if path else key, v, depth + 1))
    return None


def _too_deep() -> str:
    return f"message nested deeper than {MAX_MESSAGE_DEPTH} levels"


def top_level_id(text: str) -> Any:
    """The `id` member of the top-level object in text too deep or too broken to parse, or None.

    Scans string and bracket tokens (strings skipped whole), so a request whose `params` cannot be read
    still gets its error under its own id.
    """
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            depth += 1
        elif token in ("}", "]"):
            depth -= 1
        elif depth == 1 and token == '"id"':
            rest = text[match.end() :].lstrip()
            if rest.startswith(":"):  # a key (a string value is never followed by a colon)
                value_at = len(text) - len(rest[1:].lstrip())
                try:
                    value, _ = json.JSONDecoder().raw_decode(text, value_at)
                except (ValueError, RecursionError):
                    return None
                return value if _valid_id(value) else None
    return None


class _StdinText(io.TextIOWrapper):
    """stdin as text whose close leaves fd 0 open; undecodable bytes become lone surrogates, which the
    screen reports as invalid UTF-8 under the request's id."""

    def __init__(self, buffer: io.BufferedReader) -> None:
        super().__init__(buffer, encoding="utf-8", errors="surrogateescape")

    def close(self) -> None:
        with suppress(ValueError):
            self.detach()


class ScreenedLines:
    """The lines of stdin the SDK is handed: a malformed message is answered here (an error per request id,
    written through the SDK's own writer) and never reaches the SDK, which would drop it without a reply.

    Lines are read at most `MAX_MESSAGE_BYTES` at a time; a longer one is refused under its id and skipped.
    """

    def __init__(self, source: io.TextIOBase) -> None:
        self.source = source
        self.replies: Any = None
        """The SDK's write stream, set once the transport is up."""

    @classmethod
    def stdin(cls) -> ScreenedLines:
        """Over this process's fd 0 (left open when done)."""
        return cls(_StdinText(io.BufferedReader(io.FileIO(0, closefd=False))))

    def __aiter__(self) -> ScreenedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anyio.to_thread.run_sync(self.source.readline, MAX_MESSAGE_BYTES + 1)
            if not line:
                raise StopAsyncIteration
            if len(line) > MAX_MESSAGE_BYTES and not line.endswith("\n"):
                replies = [
                    error_reply(
                        top_level_id(line[:65536]), -32600, f"message over {MAX_MESSAGE_BYTES:,} bytes"
                    )
                ]
                while (
                    rest := await anyio.to_thread.run_sync(self.source.readline, MAX_MESSAGE_BYTES)
                ) and not rest.endswith("\n"):
                    pass
            else:
                replies = screen(line)
            if replies is None:
                return line
            for reply in replies:
                await self._send(reply)

    async def _send(self, reply: dict[str, Any]) -> None:
        while self.replies is None:  # the transport yields its streams right after starting this reader
            await anyio.sleep(0.01)
        message = types.jsonrpc_message_adapter.validate_python(reply, by_name=False)
        await self.replies.send(SessionMessage(message))
