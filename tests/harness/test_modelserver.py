"""The model server's three wire APIs, checked with the official `openai` and `anthropic` SDK clients.

Behind the server: the oracle policy (a measuring instrument: it calls the task's gold path one call per model
call, then says it is done), so each answer is known; and once the embedded SmolLM2 itself, which must give a
well-formed answer on every API. Each test sends what a harness sends: instructions, the tools, the model's
earlier call and its result in that API's own shape, whole and streamed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from toolshift.agents.chat import ModelReply, ToolDef
from toolshift.agents.demo import demo_tasks
from toolshift.agents.policies import ConversationOracle
from toolshift.modelserver.server import BUDGET_REPLY, ModelHost, serving

TOOL = {
    "name": "get_appointment",
    "description": "Get an appointment by its id.",
    "schema": {
        "type": "object",
        "properties": {"appointment_id": {"type": "string"}},
        "required": ["appointment_id"],
    },
}


class Recorded:
    """A chat model wrapper keeping what each call was given (the chat and the tools, as the server read them)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.seen = inner, inner.name, []

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        self.seen.append((json.loads(json.dumps(messages)), [t.name for t in tools]))
        return await self.inner.complete(messages, tools)


def _oracle() -> Recorded:
    return Recorded(ConversationOracle(demo_tasks()[0]))  # get_appointment, cancel_appointment, then done


def _serve(model: Any, body: Any, budget: int | None = None) -> Any:
    async def go() -> Any:
        host = ModelHost(model, budget=budget, name="toolshift-test")
        async with serving(host) as url:
            return await body(url), host

    return asyncio.run(go())


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_completions_with_the_official_client(stream):
    from openai import AsyncOpenAI

    model = _oracle()
    tools = [{"type": "function", "function": {"name": TOOL["name"], "description": TOOL["description"],
                                               "parameters": TOOL["schema"]}}]  # fmt: skip

    async def body(url: str) -> Any:
        client = AsyncOpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0)
        messages: list[Any] = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Cancel APT-00003."},
        ]
        if stream:
            calls: dict[int, dict[str, str]] = {}
            usage = None
            chunks = await client.chat.completions.create(
                model="m", messages=messages, tools=tools, stream=True, stream_options={"include_usage": True}
            )
            async for chunk in chunks:
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    for delta in choice.delta.tool_calls or []:
                        entry = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                        entry["id"] += delta.id or ""
                        entry["name"] += delta.function.name or ""
                        entry["arguments"] += delta.function.arguments or ""
            assert usage is not None
            call = calls[0]
        else:
            first = await client.chat.completions.create(model="m", messages=messages, tools=tools)
            assert first.choices[0].finish_reason == "tool_calls"
            c = first.choices[0].message.tool_calls[0]
            call = {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        assert call["name"] == "get_appointment" and json.loads(call["arguments"]) == {
            "appointment_id": "APT-00003"
        }
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
            {"role": "tool", "tool_call_id": call["id"], "content": '{"status": "scheduled"}'},
        ]  # fmt: skip
        second = await client.chat.completions.create(model="m", messages=messages, tools=tools)
        return second.choices[0].message

    message, _ = _serve(model, body)
    assert message.tool_calls[0].function.name == "cancel_appointment"
    chat, offered = model.seen[-1]
    assert offered == ["get_appointment"]
    assert chat[0] == {"role": "system", "content": "Be brief."}
    assert chat[-1]["role"] == "tool" and chat[-1]["name"] == "get_appointment"  # the result knows its call


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_api_with_the_official_client(stream):
    from openai import AsyncOpenAI

    model = _oracle()
    tools = [{"type": "function", "name": TOOL["name"], "description": TOOL["description"],
              "parameters": TOOL["schema"], "strict": False}]  # fmt: skip

    async def body(url: str) -> Any:
        client = AsyncOpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0)
        request: dict[str, Any] = {"model": "m", "instructions": "Be brief.", "tools": tools,
                                   "input": [{"role": "user", "content": "Cancel APT-00003."}]}  # fmt: skip
        if stream:
            done = None
            async with client.responses.stream(**request) as events:
                async for event in events:
                    if event.type == "response.completed":
                        done = event.response
            assert done is not None
            first = done
        else:
            first = await client.responses.create(**request)
        call = next(item for item in first.output if item.type == "function_call")
        assert call.name == "get_appointment" and json.loads(call.arguments) == {
            "appointment_id": "APT-00003"
        }
        assert first.usage is not None
        request["input"] += [
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": '{"status": "scheduled"}'},
        ]
        return await client.responses.create(**request)

    second, _ = _serve(model, body)
    assert [item.name for item in second.output if item.type == "function_call"] == ["cancel_appointment"]
    chat, _ = model.seen[-1]
    assert chat[0]["role"] == "system" and chat[-1]["name"] == "get_appointment"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_api_with_the_official_client(stream):
    from anthropic import AsyncAnthropic

    model = _oracle()
    tools = [{"name": TOOL["name"], "description": TOOL["description"], "input_schema": TOOL["schema"]}]

    async def body(url: str) -> Any:
        client = AsyncAnthropic(base_url=url, api_key="any", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "Cancel APT-00003."}]
        request = {"model": "m", "max_tokens": 256, "system": "Be brief.", "tools": tools}
        if stream:
            async with client.messages.stream(messages=messages, **request) as events:
                first = await events.get_final_message()
        else:
            first = await client.messages.create(messages=messages, **request)
        assert first.stop_reason == "tool_use"
        use = next(block for block in first.content if block.type == "tool_use")
        assert use.name == "get_appointment" and use.input == {"appointment_id": "APT-00003"}
        messages += [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": use.id, "name": use.name, "input": use.input}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": '{"status": "x"}'}],
            },
        ]
        return await client.messages.create(messages=messages, **request)

    second, _ = _serve(model, body)
    assert [b.name for b in second.content if b.type == "tool_use"] == ["cancel_appointment"]
    chat, _ = model.seen[-1]
    assert chat[0] == {"role": "system", "content": "Be brief."} and chat[-1]["role"] == "tool"


def test_a_harness_namespace_is_offered_flat_and_answered_in_it():
    """Codex groups an MCP server's tools in a `namespace` tool; its calls come back under the namespace."""
    from openai import AsyncOpenAI

    model = _oracle()
    namespace = {"type": "namespace", "name": "mcp__toolshift", "description": "MCP server",
                 "tools": [{"type": "function", "name": TOOL["name"], "parameters": TOOL["schema"]}]}  # fmt: skip

    async def body(url: str) -> Any:
        client = AsyncOpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0)
        response = await client.post(
            "/responses", cast_to=httpx.Response,
            body={"model": "m", "input": "Cancel APT-00003.", "tools": [namespace, {"type": "web_search"}]},
        )  # fmt: skip
        return response.json()

    answer, host = _serve(model, body)
    call = answer["output"][0]
    assert (call["namespace"], call["name"]) == ("mcp__toolshift", "get_appointment")
    # offered flat; the oracle's bare name resolved to it
    assert model.seen[0][1] == ["mcp__toolshift__get_appointment"]
    assert host.calls[0].left_out == 1  # the web search tool is not offered to the model


def test_calls_past_the_budget_get_the_fixed_reply_and_the_host_says_so():
    from openai import AsyncOpenAI

    async def body(url: str) -> Any:
        client = AsyncOpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0)
        tools = [{"type": "function", "function": {"name": TOOL["name"], "parameters": TOOL["schema"]}}]
        messages = [{"role": "user", "content": "Cancel APT-00003."}]
        one = await client.chat.completions.create(model="m", messages=messages, tools=tools)
        two = await client.chat.completions.create(model="m", messages=messages, tools=tools)
        return one, two

    (one, two), host = _serve(_oracle(), body, budget=1)
    assert one.choices[0].message.tool_calls and two.choices[0].message.content == BUDGET_REPLY
    assert host.exhausted and host.answered == 1 and [c.over_budget for c in host.calls] == [False, True]


def test_bad_requests_get_the_apis_own_error_and_foreign_hosts_are_refused():
    async def body(url: str) -> Any:
        async with httpx.AsyncClient() as http:
            chat = await http.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": "hi"})
            claude = await http.post(f"{url}/v1/messages", json={"model": "m", "messages": [{"role": "bot"}]})
            broken = await http.post(f"{url}/v1/responses", content=b"{not json")
            foreign = await http.get(f"{url}/health", headers={"Host": "evil.example"})
            return chat, claude, broken, foreign

    (chat, claude, broken, foreign), _ = _serve(_oracle(), body)
    assert chat.status_code == 400 and "messages" in chat.json()["error"]["message"]
    assert claude.status_code == 400 and claude.json()["type"] == "error"
    assert broken.status_code == 400
    assert foreign.status_code == 421


@pytest.mark.slow
def test_the_embedded_model_answers_each_api_well_formed():
    """SmolLM2 behind the server: every API's answer parses in its official client, with its usage."""
    from anthropic import AsyncAnthropic
    from openai import AsyncOpenAI

    from toolshift.agents.embedded import EmbeddedModel

    async def body(url: str) -> Any:
        openai = AsyncOpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0)
        claude = AsyncAnthropic(base_url=url, api_key="any", max_retries=0)
        ask = "Please look up appointment APT-00003."
        chat = await openai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": ask}],
            tools=[{"type": "function", "function": {"name": TOOL["name"], "parameters": TOOL["schema"]}}],
        )  # fmt: skip
        responses = await openai.responses.create(
            model="m",
            input=ask,
            tools=[{"type": "function", "name": TOOL["name"], "parameters": TOOL["schema"]}],
        )
        messages = await claude.messages.create(
            model="m", max_tokens=200, messages=[{"role": "user", "content": ask}],
            tools=[{"name": TOOL["name"], "input_schema": TOOL["schema"]}],
        )  # fmt: skip
        return chat, responses, messages

    (chat, responses, messages), host = _serve(EmbeddedModel(seed=1), body)
    # a turn the grammar decides alone (one tool, one id in view) decodes nothing: its usage is 0, not missing
    assert chat.usage.prompt_tokens >= 0 and (
        chat.choices[0].message.content or chat.choices[0].message.tool_calls
    )
    assert responses.usage.input_tokens >= 0 and responses.output
    assert messages.usage.input_tokens >= 0 and messages.content
    assert [c.api for c in host.calls] == ["chat", "responses", "anthropic"]
