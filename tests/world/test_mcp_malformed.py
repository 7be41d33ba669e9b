"""Raw bytes to real server processes (`toolshift world serve`, stdio and HTTP): every request with an id is
answered, whatever is wrong with it, and nothing a tool raises ends the server."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rawmcp import NAMED_CASES, RawHttp, RawStdio, _call, _message
from toolshift.world.mcp.serve import free_port

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent


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
