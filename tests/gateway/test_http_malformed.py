"""Raw JSON-RPC to a real `toolshift gateway serve` process, over HTTP and stdio: every malformed request with a
readable id is answered under that id with a short message, as `world serve` answers it, and the gateway keeps
answering."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rawmcp import NAMED_CASES, RawHttp, RawStdio, _message
from toolshift.world.mcp.serve import free_port

pytestmark = pytest.mark.slow


def _gateway_argv(transport: str, port: int | None = None) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "toolshift",
        "gateway",
        "serve",
        "--world",
        "clinic",
        "--transport",
        transport,
    ]
    return argv + (["--port", str(port)] if port else [])


@pytest.fixture(scope="module", params=["http", "stdio"])
def raw_gateway(request) -> Iterator[RawStdio | RawHttp]:
    if request.param == "stdio":
        server: RawStdio | RawHttp = RawStdio(_gateway_argv("stdio"))
    else:
        port = free_port()
        server = RawHttp(_gateway_argv("http", port), port)
    yield server
    server.close()


@pytest.mark.parametrize("case", list(NAMED_CASES))
def test_each_malformed_request_gets_a_short_error_under_its_id(raw_gateway, case):
    body, ids, code = NAMED_CASES[case]
    replies = raw_gateway.exchange(body, ids)
    for rid in ids:
        error = replies[rid]["error"]
        assert error["code"] == code and len(error["message"]) < 300, error
    alive = raw_gateway.exchange(b'{"jsonrpc":"2.0","id":"alive","method":"ping"}', ["alive"])
    assert alive["alive"]["result"] == {}


@settings(
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(messages=st.lists(_message, min_size=1, max_size=3), batch=st.booleans(), depth=st.integers(0, 300))
def test_any_request_with_an_id_gets_exactly_one_reply_under_it(raw_gateway, messages, batch, depth):
    """Bad envelopes, params of any type, lone surrogates, deep nesting, alone or batched: one reply per id."""
    ids = [f"g{time.monotonic_ns()}-{i}" for i in range(len(messages))]
    texts = []
    for rid, message in zip(ids, messages, strict=True):
        text = json.dumps({"id": rid, **message})
        if depth:
            text = text[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
        texts.append(text)
    if batch or len(texts) == 1:
        body = "[" + ",".join(texts) + "]" if batch else texts[0]
        replies = raw_gateway.exchange(body.encode(), ids)
    else:
        replies = {}
        for rid, text in zip(ids, texts, strict=True):
            replies.update(raw_gateway.exchange(text.encode(), [rid]))
    assert set(replies) == set(ids)
    for reply in replies.values():
        assert ("result" in reply) != ("error" in reply)
        if "error" in reply:
            assert len(reply["error"]["message"]) < 300, reply
