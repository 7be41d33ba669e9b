"""The Anthropic backend against a local HTTP endpoint speaking the Messages API with tool use."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolshift.agents.loop import run_episode
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener

pytest.importorskip("anthropic")


def _serve(handler):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def messages(request: Request) -> JSONResponse:
        return handler(await request.json())

    server = uvicorn.Server(
        uvicorn.Config(
            Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])]),
            port=port,
            log_level="warning",
        )
    )
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, f"http://127.0.0.1:{port}"


def test_anthropic_messages_with_tool_use_solve_a_task(tasks, monkeypatch):
    from toolshift.agents.anthropic_backend import AnthropicChatModel

    seen: list[dict] = []

    def handler(body: dict) -> JSONResponse:
        seen.append(body)
        results = [
            b
            for m in body["messages"]
            if m["role"] == "user"
            for b in m["content"]
            if b["type"] == "tool_result"
        ]
        if len(results) == 0:
            content = [
                {
                    "type": "tool_use",
                    "id": "tu_1",
                    "name": "cancel_appointment",
                    "input": {"appointment_id": "APT-00003"},
                }
            ]
        else:
            content = [{"type": "text", "text": "Your appointment is cancelled."}]
        return JSONResponse({"id": "msg", "type": "message", "role": "assistant", "model": body["model"],
                             "content": content, "stop_reason": "end_turn", "stop_sequence": None,
                             "usage": {"input_tokens": 50, "output_tokens": 7}})  # fmt: skip

    server, url = _serve(handler)
    try:
        task = tasks[0]
        model = AnthropicChatModel("claude-haiku-4-5", base_url=url, api_key="test")
        episode = asyncio.run(
            run_episode(
                task,
                model,
                ScriptedUser(task.public_request, task.instruction),
                world_opener("clinic"),
                episode_id="a",
            )
        )
    finally:
        server.should_exit = True
    assert episode.outcome.success is True and episode.termination_reason == "user_stop"
    assert seen[0]["system"].startswith("You are a customer-service agent")
    assert seen[0]["tool_choice"] == {"type": "auto"} and seen[0]["max_tokens"] == 1024
    assert seen[1]["messages"][-1]["content"][0]["tool_use_id"] == "tu_1"
    assistant = [m for m in episode.messages if m.role == "assistant"]
    assert assistant[0].cost == pytest.approx((50 * 1.0 + 7 * 5.0) / 1e6)


def test_anthropic_rate_limits_are_retried_and_a_wrong_model_is_named():
    from toolshift.agents.anthropic_backend import AnthropicChatModel
    from toolshift.agents.chat import ModelConfigError
    from toolshift.agents.retry import RetryPolicy

    calls: list[str] = []

    def handler(body: dict) -> JSONResponse:
        calls.append(body["model"])
        if body["model"] != "claude-haiku-4-5":
            return JSONResponse({"type": "error", "error": {"type": "not_found_error", "message": "no such model"}},
                                status_code=404)  # fmt: skip
        if len(calls) == 1:
            return JSONResponse({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
                                status_code=429, headers={"retry-after": "0"})  # fmt: skip
        return JSONResponse({"id": "msg", "type": "message", "role": "assistant", "model": body["model"],
                             "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn",
                             "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}})  # fmt: skip

    server, url = _serve(handler)
    seen_limits: list[float | None] = []
    try:
        fast = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05)
        model = AnthropicChatModel("claude-haiku-4-5", base_url=url, api_key="test", retry=fast,
                                   on_rate_limit=lambda: seen_limits.append(None))  # fmt: skip
        reply = asyncio.run(model.complete([{"role": "user", "content": "hi"}], []))
        assert reply.text == "hello" and calls == ["claude-haiku-4-5"] * 2 and len(seen_limits) == 1
        wrong = AnthropicChatModel("claude-nope", base_url=url, api_key="test", retry=fast)
        with pytest.raises(ModelConfigError, match="'claude-nope' not found"):
            asyncio.run(wrong.complete([{"role": "user", "content": "hi"}], []))
        assert calls[-1] == "claude-nope" and calls.count("claude-nope") == 1  # not retried
    finally:
        server.should_exit = True


def test_blank_text_never_becomes_an_empty_block():
    """The Messages API refuses empty and whitespace-only text blocks (HTTP 400)."""
    from toolshift.agents.anthropic_backend import to_anthropic

    call = {"id": "tu_1", "type": "function", "function": {"name": "get_x", "arguments": "{}"}}
    system, turns = to_anthropic([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "  "},
        {"role": "assistant", "content": "\n", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "tu_1", "name": "get_x", "content": ""},
        {"role": "assistant", "content": None},
        {"role": "system", "content": " "},
        {"role": "user", "content": "thanks"},
    ])  # fmt: skip
    assert system == "Be brief."
    blocks = [b for t in turns for b in t["content"]]
    assert all(b["text"].strip() for b in blocks if b["type"] == "text")
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert {"type": "tool_result", "tool_use_id": "tu_1"} in turns[2]["content"]


def test_run_configuration_sets_the_anthropic_endpoint_and_cap(monkeypatch):
    from toolshift.agents.config import RunConfig, make_model, resolve_endpoints

    seen: list[dict] = []

    def handler(body: dict) -> JSONResponse:
        seen.append(body)
        return JSONResponse({"id": "msg", "type": "message", "role": "assistant", "model": body["model"],
                             "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn",
                             "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}})  # fmt: skip

    server, url = _serve(handler)
    try:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        endpoints = resolve_endpoints(
            "anthropic:claude-haiku-4-5", "scripted", environ={"ANTHROPIC_BASE_URL": url}
        )
        assert endpoints == {"base_url": None, "anthropic_base_url": url}
        config = RunConfig(world="clinic", model="anthropic:claude-haiku-4-5", max_tokens=99, **endpoints)
        reply = asyncio.run(
            make_model(config.model, config, seed=0).complete([{"role": "user", "content": "hi"}], [])
        )
    finally:
        server.should_exit = True
    assert reply.text == "hello" and seen[0]["max_tokens"] == 99
