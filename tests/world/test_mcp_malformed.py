"""Raw bytes to real server processes (`toolshift world serve`, stdio and HTTP): every request with an id is
answered, whatever is wrong with it, and nothing a tool raises ends the server."""

from __future__ import annotations

import json
import math
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.world.serve import free_port

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
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


def _serve_argv(transport: str, port: int | None = None) -> list[str]:
    argv = [sys.executable, "-m", "toolshift", "world", "serve", "clinic", "--transport", transport]
    return argv + (["--port", str(port)] if port else [])


@pytest.fixture(scope="module", params=["stdio", "http"])
def raw_server(request) -> Iterator[RawStdio | RawHttp]:
    if request.param == "stdio":
        server: RawStdio | RawHttp = RawStdio(_serve_argv("stdio"))
    else:
        port = free_port()
        server = RawHttp(_serve_argv("http", port), port)
    yield server
    server.close()


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
}


@pytest.mark.parametrize("case", list(NAMED_CASES))
def test_each_malformed_request_gets_an_error_under_its_id(raw_server, case):
    body, ids, code = NAMED_CASES[case]
    replies = raw_server.exchange(body, ids)
    for rid in ids:
        error = replies[rid]["error"]
        assert error["code"] == code and len(error["message"]) < 300, error
    assert (
        raw_server.exchange(b'{"jsonrpc":"2.0","id":"alive","method":"ping"}', ["alive"])["alive"]["result"]
        == {}
    )


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


@settings(
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(messages=st.lists(_message, min_size=1, max_size=3), batch=st.booleans(), depth=st.integers(0, 300))
def test_any_request_with_an_id_gets_exactly_one_reply(raw_server, messages, batch, depth):
    """Requests of any shape (bad envelopes, params of any type, lone surrogates, deep nesting), alone or in a
    batch: one reply per id, from a server that keeps answering."""
    ids = [f"r{time.monotonic_ns()}-{i}" for i in range(len(messages))]
    texts = []
    for rid, message in zip(ids, messages, strict=True):
        text = json.dumps({"id": rid, **message})
        if depth:  # nest an argument `depth` levels deep, past any JSON encoder's recursion limit
            text = text[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
        texts.append(text)
    if batch or len(texts) == 1:
        body = "[" + ",".join(texts) + "]" if batch else texts[0]
        replies = raw_server.exchange(body.encode(), ids)
    else:
        replies = {}
        for rid, text in zip(ids, texts, strict=True):
            replies.update(raw_server.exchange(text.encode(), [rid]))
    assert set(replies) == set(ids)
    for reply in replies.values():
        assert ("result" in reply) != ("error" in reply)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tool_raising_systemexit_or_any_baseexception_does_not_end_the_server(transport):
    argv = [sys.executable, str(HERE / "raising_world_server.py"), transport]
    if transport == "stdio":
        server: RawStdio | RawHttp = RawStdio(argv)
    else:
        port = free_port()
        server = RawHttp([*argv, str(port)], port)
    try:
        for i, tool in enumerate(["exit_now", "generator_exit", "escape", "exit_now"]):
            reply = server.exchange(_call(i, json.dumps({"name": tool, "arguments": {}})), [i])[i]
            result = reply["result"]
            body = json.loads(result["content"][0]["text"])
            assert result["isError"] and body["code"] == "internal_error" and tool in body["message"]
        reply = server.exchange(
            _call("after", '{"name":"get_patient","arguments":{"patient_id":"PAT-00001"}}'), ["after"]
        )
        assert reply["after"]["result"]["isError"] is False
        assert server.proc.poll() is None
    finally:
        server.close()


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ('{"medication_id":"MED-001","unit_price":Infinity}', "unit_price"),
        ('{"medication_id":"MED-001","unit_price":-Infinity}', "unit_price"),
        ('{"medication_id":"MED-001","unit_price":NaN}', "unit_price"),
        ('{"medication_id":"MED-001","unit_price":1e999}', "unit_price"),
        ('{"medication_id":"MED-001","strength_mg":9223372036854775808}', "strength_mg"),
        ('{"medication_id":"MED-001","name":"' + "n" * 20_000 + '"}', "name"),
    ],
)
def test_unstorable_arguments_over_mcp_are_invalid_arguments_and_nothing_changes(raw_server, args, field):
    rid = f"bad-{time.monotonic_ns()}"
    reply = raw_server.exchange(_call(rid, '{"name":"update_medication","arguments":' + args + "}"), [rid])[
        rid
    ]
    result = reply["result"]
    body = json.loads(result["content"][0]["text"])
    assert result["isError"] and body["code"] == "invalid_arguments" and f"'{field}'" in body["message"]
    assert result["_meta"]["toolshift/changes"] == [] and len(body["message"]) < 300
    check = _call("get", '{"name":"get_medication","arguments":{"medication_id":"MED-001"}}')
    medication = json.loads(raw_server.exchange(check, ["get"])["get"]["result"]["content"][0]["text"])
    assert math.isfinite(medication["unit_price"]) and medication["strength_mg"] < 2**63
