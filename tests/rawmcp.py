"""Raw JSON-RPC to real MCP server processes (stdio lines, HTTP POSTs), for the malformed-request tests of the
world server and the gateway: the clients, the named cases and the request strategy they share."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from typing import Any

import httpx
from hypothesis import strategies as st

REPLY_WAIT = 600.0
"""Liveness bound for one reply (a missing reply fails here instead of hanging); never a speed check."""
INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class RawStdio:
    """A server process spoken to in raw lines."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.buffer = b""
        assert self.exchange(json.dumps(INIT).encode(), ["init"])["init"].get("result")
        self.send(INITIALIZED)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def exchange(self, line: bytes, ids: list[Any]) -> dict[Any, dict[str, Any]]:
        """Send one line; wait for one reply per id (and fail on any reply to another id)."""
        self.send(line)
        replies: dict[Any, dict[str, Any]] = {}
        deadline = time.monotonic() + REPLY_WAIT
        while len(replies) < len(ids):
            message = json.loads(self._line(deadline))
            rid = message.get("id")
            assert rid in ids and rid not in replies, f"unexpected reply {message} (waiting for {ids})"
            replies[rid] = message
        return replies

    def _line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            assert ready, f"no reply within {REPLY_WAIT:.0f} s (server alive: {self.proc.poll() is None})"
            chunk = os.read(fd, 1 << 20)
            assert chunk, f"the server closed its stdout (exit code {self.proc.poll()})"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=120)


class RawHttp:
    """A server process spoken to in raw POSTs on one session."""

    def __init__(self, argv: list[str], port: int) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.http = httpx.Client(timeout=REPLY_WAIT)
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        deadline = time.monotonic() + REPLY_WAIT
        while True:
            try:
                r = self.http.post(self.url, json=INIT, headers=headers)
                break
            except httpx.TransportError:
                assert self.proc.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        assert r.status_code == 200, r.text
        self.headers = {
            **headers,
            "mcp-session-id": r.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        self.http.post(self.url, content=INITIALIZED, headers=self.headers)

    def exchange(self, body: bytes, ids: list[Any]) -> dict[Any, dict[str, Any]]:
        r = self.http.post(self.url, content=body, headers=self.headers)
        payload = r.json()
        replies = payload if isinstance(payload, list) else [payload]
        got = {m.get("id"): m for m in replies}
        assert sorted(map(str, got)) == sorted(map(str, ids)) and len(replies) == len(ids), (
            r.status_code,
            payload,
        )
        return got

    def close(self) -> None:
        self.http.close()
        self.proc.terminate()
        self.proc.wait(timeout=120)


def _call(rid: Any, params: str) -> bytes:
    return (
        '{"jsonrpc":"2.0","id":' + json.dumps(rid) + ',"method":"tools/call","params":' + params + "}"
    ).encode()


DEEP = "[" * 100_000 + "]" * 100_000
NAMED_CASES: dict[str, tuple[bytes, list[Any], int]] = {
    "batch": (
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"ping"},'
        b'{"jsonrpc":"2.0","method":"notifications/x"}]',
        [1, "b"],
        -32600,
    ),
    "params a list": (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[1,2]}', [3], -32602),
    "params a string": (b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":"x"}', [4], -32602),
    "lone surrogate in the tool name": (_call(5, '{"name":"get_\\ud800","arguments":{}}'), [5], -32602),
    "lone surrogate in an argument": (
        _call(6, '{"name":"search_patients","arguments":{"full_name":"\\udc00"}}'),
        [6],
        -32602,
    ),
    "invalid UTF-8": (
        _call(7, '{"name":"get_patient\xff","arguments":{}}').replace(b"\xc3\xbf", b"\xff"),
        [7],
        -32602,
    ),
    "100,000 levels deep": (
        _call(8, '{"name":"get_patient","arguments":{"patient_id":' + DEEP + "}}"),
        [8],
        -32600,
    ),
    "900 levels deep": (
        _call(9, '{"name":"get_patient","arguments":{"patient_id":' + "[" * 900 + "]" * 900 + "}}"),
        [9],
        -32600,
    ),
    "not JSON": (b'{"jsonrpc":"2.0","id":10,"method":"ping",', [10], -32700),
    "id an object": (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', [None], -32600),
    "no method": (b'{"jsonrpc":"2.0","id":12}', [12], -32600),
    "method a number": (b'{"jsonrpc":"2.0","id":13,"method":5}', [13], -32600),
    "wrong jsonrpc": (b'{"jsonrpc":"1.0","id":14,"method":"ping"}', [14], -32600),
    "no jsonrpc": (b'{"id":15,"method":"ping"}', [15], -32600),
    "5 MB body": (
        _call(16, '{"name":"get_patient","arguments":{"note":"' + "x" * 5_000_000 + '"}}'),
        [16],
        -32600,
    ),
    "params null": (b'{"jsonrpc":"2.0","id":17,"method":"tools/call","params":null}', [17], -32602),
}


_texts = st.text(st.characters(categories=["L", "N", "P", "Cs"]), max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3),
    max_leaves=12,
)
_OMIT = object()
_message = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]),
        "method": st.sampled_from(["tools/call", "tools/list", "ping", "no/such"]) | _json,
        "params": st.fixed_dictionaries(
            {"name": st.sampled_from(["get_patient", "search_patients"]) | _texts},
            optional={"arguments": _json, "_meta": _json},
        )
        | _json,
    },
)
