"""The OpenAI path against an endpoint scripted here, for what a real server cannot be made to do.

A scripted chat-completions endpoint injects a rate limit (429), malformed tool-call arguments, an unknown
model (404), a refused `max_tokens`, and records each request body exactly. Everything a real server can
show is tested against llama-cpp-python's own server in test_openai_server.py.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from toolshift.agents.chat import ModelConfigError
from toolshift.agents.openai_backend import OpenAIChatModel
from toolshift.cli import app
from toolshift.traces.store import iter_episodes

MODEL = "tiny-agent"
NEW_MODEL = "tiny-reasoner"


class Endpoint:
    """A chat-completions server whose 'model' solves the cancel task, after one malformed call and one 429.

    `NEW_MODEL` refuses `max_tokens` the way OpenAI's newer models do, naming `max_completion_tokens`.
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.rate_limited = False

    def reply(self, body: dict) -> JSONResponse:
        self.requests.append(body)
        if body["model"] == NEW_MODEL:
            if "max_tokens" in body:
                message = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                           "Use 'max_completion_tokens' instead.")  # fmt: skip
                error = {"message": message, "type": "invalid_request_error", "param": "max_tokens",
                         "code": "unsupported_parameter"}  # fmt: skip
                return JSONResponse({"error": error}, status_code=400)
            body = {**body, "model": MODEL}
            self.rate_limited = True
        if body["model"] != MODEL:
            return JSONResponse(
                {"error": {"message": f"The model `{body['model']}` does not exist"}}, status_code=404
            )
        if not self.rate_limited:
            self.rate_limited = True
            return JSONResponse(
                {"error": {"message": "slow down"}}, status_code=429, headers={"retry-after": "0"}
            )
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        script = [
            ("get_appointment", '{"appointment_id": "APT-00003"'),
            ("get_appointment", '{"appointment_id": "APT-00003"}'),
            ("cancel_appointment", '{"appointment_id": "APT-00003"}'),
        ]
        message: dict = {"role": "assistant", "content": None}
        if done < len(script):
            name, args = script[done]
            message["tool_calls"] = [
                {"id": f"call_{done}", "type": "function", "function": {"name": name, "arguments": args}}
            ]
            finish = "length" if done == 0 else "tool_calls"  # the malformed call is a reply cut short
        else:
            message["content"] = "Your appointment has been cancelled."
            finish = "stop"
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": MODEL,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 100 + done, "completion_tokens": 10, "total_tokens": 110 + done},
            }
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def endpoint() -> Iterator[tuple[str, Endpoint]]:
    state = Endpoint()

    async def completions(request: Request) -> JSONResponse:
        return state.reply(await request.json())

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])]),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}/v1", state
    server.should_exit = True
    thread.join(5)


def test_injected_rate_limit_and_malformed_call_in_a_run(
    endpoint, tasks_file: Path, tmp_path: Path, monkeypatch
):
    url, state = endpoint
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--world",
            "clinic",
            "--tasks",
            str(tasks_file),
            "--limit",
            "1",
            "--model",
            f"openai:{MODEL}",
            "--base-url",
            url,
            "--out",
            str(out),
            "--no-check",
            "--trials",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    (path,) = out.glob("run-*.episodes.jsonl")
    episodes = list(iter_episodes(path))
    assert len(episodes) == 3 and all(e.outcome.success for e in episodes)
    episode = next(e for e in episodes if e.trial == 0)
    assert episode.outcome.success is True and episode.termination_reason == "user_stop"
    tools = [m for m in episode.messages if m.role == "tool"]
    assert [m.error for m in tools] == [True, False, False]
    assert "not valid JSON" in tools[0].content and "cut at max_tokens=1024" in tools[0].content
    assistant = [m for m in episode.messages if m.role == "assistant"]
    assert [m.usage.prompt_tokens for m in assistant] == [100, 101, 102, 103]
    assert episode.model == MODEL
    sent = state.requests[-1]
    assert {t["function"]["name"] for t in sent["tools"]} >= {"cancel_appointment", "end_conversation"}
    assert sent["messages"][0]["role"] == "system" and "Riverside" in sent["messages"][0]["content"]
    assert state.rate_limited  # the 429 was retried, not recorded as a failure


def test_requests_carry_only_documented_fields(endpoint, tasks_file: Path, tmp_path: Path):
    """What goes on the wire: tool_choice with the tools, a max_tokens cap, never a null content."""
    url, state = endpoint
    out = tmp_path / "run"
    args = ["run", "--world", "clinic", "--tasks", str(tasks_file), "--limit", "1", "--model",
            f"openai:{MODEL}", "--base-url", url, "--out", str(out), "--no-check", "--max-tokens", "300"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    sent = [b for b in state.requests if b["model"] == MODEL]
    assert len(sent) >= 4 and all(b["tool_choice"] == "auto" and b["max_tokens"] == 300 for b in sent)
    documented = {"system": {"role", "content"}, "user": {"role", "content"},
                  "assistant": {"role", "content", "tool_calls"}, "tool": {"role", "tool_call_id", "content"}}  # fmt: skip
    last = sent[-1]["messages"]
    assert {m["role"] for m in last} == set(documented)
    for m in last:
        assert set(m) <= documented[m["role"]] and isinstance(m["content"], str), m
    calls = [m for m in last if m["role"] == "assistant" and m.get("tool_calls")]
    assert calls and all(m["content"] == "" for m in calls)
    assert all(set(c) == {"id", "type", "function"} for m in calls for c in m["tool_calls"])


def test_a_refused_max_tokens_is_sent_as_max_completion_tokens(endpoint):
    url, state = endpoint
    model = OpenAIChatModel(NEW_MODEL, base_url=url, api_key="x", max_tokens=77)

    async def twice():
        return [await model.complete([{"role": "user", "content": "hi"}], []) for _ in range(2)]

    replies = asyncio.run(twice())
    assert all(r.calls for r in replies)
    first, retried, second = state.requests
    assert first["max_tokens"] == 77 and "max_completion_tokens" not in first
    assert retried["max_completion_tokens"] == 77 and "max_tokens" not in retried
    assert second["max_completion_tokens"] == 77  # remembered: one refusal per client, not per request


def test_injected_unknown_model_and_unreachable_endpoint_are_clear_errors(
    endpoint, tasks_file: Path, tmp_path: Path
):
    url, _ = endpoint
    base = [
        "run",
        "--world",
        "clinic",
        "--tasks",
        str(tasks_file),
        "--limit",
        "1",
        "--out",
        str(tmp_path),
        "--no-check",
    ]
    result = CliRunner().invoke(app, [*base, "--model", "openai:no-such-model", "--base-url", url])
    assert isinstance(result.exception, ModelConfigError)
    assert "no-such-model" in str(result.exception) and "not found" in str(result.exception)
    closed = f"http://127.0.0.1:{_free_port()}/v1"
    result = CliRunner().invoke(app, [*base, "--model", "openai:x", "--base-url", closed])
    assert isinstance(result.exception, ModelConfigError) and "cannot reach" in str(result.exception)
    assert not list(tmp_path.glob("run-*"))  # a run that failed before its first episode leaves no run files
