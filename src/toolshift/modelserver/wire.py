"""The three wire APIs harnesses speak to a model, read into one chat and written back from one reply.

OpenAI Chat Completions, the OpenAI Responses API and the Anthropic Messages API each carry the same things
in their own shapes: instructions, the conversation (user text, the model's earlier text and tool calls, tool
results) and the tools on offer. A request is read into the OpenAI-style chat every `ChatModel` takes
(`toolshift.agents.chat`) and the tools as `ToolDef`s; the model's `ModelReply` is written back as that
API's response, whole or as its server-sent events. Tools a model cannot call through a function (Codex's
`web_search`, Anthropic's server tools) are not offered to the model and are counted as left out; tools
grouped in a Responses `namespace` are offered under `<namespace>__<name>` and their calls given back under
the namespace again. Pure functions over JSON: the server (`toolshift.modelserver.server`) does the I/O.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from toolshift.agents.chat import ModelReply, ToolDef

Api = Literal["chat", "responses", "anthropic"]
APIS: tuple[Api, ...] = ("chat", "responses", "anthropic")


class WireError(ValueError):
    """A request this API's shape does not allow: answered 400 naming the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass
class WireRequest:
    """A request read from any wire API: the chat, the tools offered, and what the answer must look like."""

    api: Api
    model: str
    messages: list[dict[str, Any]]
    tools: list[ToolDef]
    stream: bool = False
    include_usage: bool = False
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Flat tool name → (namespace, name) for tools a Responses request grouped in a namespace."""
    left_out: list[str] = field(default_factory=list)
    """Tools of kinds the model cannot call through a function (not offered to it)."""

    @property
    def system_chars(self) -> int:
        """Characters of instructions the harness sent (system and developer messages)."""
        return sum(len(m.get("content") or "") for m in self.messages if m["role"] == "system")

    @property
    def tools_chars(self) -> int:
        """Characters of the tool definitions offered, as JSON."""
        return sum(len(json.dumps([t.name, t.description, t.input_schema])) for t in self.tools)


def _text_of(content: Any, where: str) -> str:
    """The text of a message's content: a string, or the text parts of a list (images and files skipped)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise WireError(where, "content must be a string or a list of parts")
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireError(where, "must be an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise WireError(where, "must be a list")
    return value


def _schema(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"type": "object", "properties": {}}


def _arguments_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {})


def _merge_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One system message first (the harness's instructions in order), then the conversation."""
    system = [m["content"] for m in messages if m["role"] == "system" and m.get("content")]
    rest = [m for m in messages if m["role"] != "system"]
    return ([{"role": "system", "content": "\n\n".join(system)}] if system else []) + rest


def _name_tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every tool result the name of the call it answers (a chat model reads which tool spoke)."""
    names: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            names[str(call.get("id"))] = call["function"]["name"]
        if m["role"] == "tool" and not m.get("name"):
            m["name"] = names.get(str(m.get("tool_call_id")), "tool")
    return messages


def _call_message(calls: list[dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls
        ],
    }


# --- OpenAI Chat Completions ------------------------------------------------------------------------


def read_chat(body: dict[str, Any]) -> WireRequest:
    """A `/v1/chat/completions` request."""
    messages: list[dict[str, Any]] = []
    for i, raw in enumerate(_list(body.get("messages"), "messages")):
        m = _object(raw, f"messages[{i}]")
        role = m.get("role")
        where = f"messages[{i}].content"
        if role in ("system", "developer"):
            messages.append({"role": "system", "content": _text_of(m.get("content"), where)})
        elif role == "user":
            messages.append({"role": "user", "content": _text_of(m.get("content"), where)})
        elif role == "assistant":
            calls = []
            for k, c in enumerate(_list(m.get("tool_calls"), f"messages[{i}].tool_calls")):
                fn = _object(_object(c, f"messages[{i}].tool_calls[{k}]").get("function"), "function")
                calls.append(
                    {"id": str(c.get("id") or f"call_{i}_{k}"), "name": str(fn.get("name")),
                     "arguments": _arguments_text(fn.get("arguments"))}
                )  # fmt: skip
            text = _text_of(m.get("content"), where)
            messages.append(_call_message(calls, text) if calls else {"role": "assistant", "content": text})
        elif role == "tool":
            messages.append(
                {"role": "tool", "tool_call_id": str(m.get("tool_call_id")), "name": m.get("name"),
                 "content": _text_of(m.get("content"), where)}
            )  # fmt: skip
        else:
            raise WireError(f"messages[{i}].role", f"unknown role {role!r}")
    if not messages:
        raise WireError("messages", "at least one message is needed")
    tools, left_out = [], []
    for i, raw in enumerate(_list(body.get("tools"), "tools")):
        t = _object(raw, f"tools[{i}]")
        if t.get("type", "function") != "function":
            left_out.append(str(t.get("type")))
            continue
        fn = _object(t.get("function"), f"tools[{i}].function")
        tools.append(
            ToolDef(str(fn.get("name")), str(fn.get("description") or ""), _schema(fn.get("parameters")))
        )
    options = body.get("stream_options") if isinstance(body.get("stream_options"), dict) else {}
    return WireRequest(
        "chat", str(body.get("model") or ""), _name_tool_results(_merge_system(messages)), tools,
        stream=bool(body.get("stream")), include_usage=bool(options.get("include_usage")), left_out=left_out,
    )  # fmt: skip


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def chat_response(request: WireRequest, reply: ModelReply) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if not reply.calls else (reply.text or None),
    }
    if reply.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _reply_arguments(c)}}
            for c in reply.calls
        ]
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.calls else "stop",
                     "logprobs": None}],
        "usage": _chat_usage(reply),
    }  # fmt: skip


def _chat_usage(reply: ModelReply) -> dict[str, int]:
    prompt, completion = reply.prompt_tokens or 0, reply.completion_tokens or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _reply_arguments(call: Any) -> str:
    if call.arguments is not None:
        return json.dumps(call.arguments, ensure_ascii=False)
    return call.raw_arguments or "{}"


def chat_events(request: WireRequest, reply: ModelReply) -> Iterator[str]:
    """The response as `chat.completion.chunk` events, `[DONE]` last."""
    whole = chat_response(request, reply)
    base = {
        "id": whole["id"],
        "object": "chat.completion.chunk",
        "created": whole["created"],
        "model": request.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _sse(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    if reply.text:
        yield chunk({"content": reply.text})
    for i, call in enumerate(whole["choices"][0]["message"].get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": i, **call}]})
    yield chunk({}, whole["choices"][0]["finish_reason"])
    if request.include_usage:
        yield _sse(None, {**base, "choices": [], "usage": whole["usage"]})
    yield "data: [DONE]\n\n"


def _sse(event: str | None, data: dict[str, Any]) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n"


# --- OpenAI Responses -------------------------------------------------------------------------------


def read_responses(body: dict[str, Any]) -> WireRequest:
    """A `/v1/responses` request (stateless: `previous_response_id` is refused, as the server stores nothing)."""
    if body.get("previous_response_id"):
        raise WireError("previous_response_id", "this server stores no responses: send the whole input")
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": _text_of(body["instructions"], "instructions")})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    pending: list[dict[str, Any]] = []  # consecutive function calls: one assistant message

    def flush() -> None:
        if pending:
            messages.append(_call_message(list(pending)))
            pending.clear()

    for i, raw in enumerate(_list(items, "input")):
        item = _object(raw, f"input[{i}]")
        kind = item.get("type", "message")
        if kind in ("function_call", "custom_tool_call"):
            name = str(item.get("name"))
            if item.get("namespace"):
                name = f"{item['namespace']}__{name}"
            arguments = (
                item.get("arguments") if kind == "function_call" else json.dumps({"input": item.get("input")})
            )
            pending.append({"id": str(item.get("call_id") or item.get("id")), "name": name,
                            "arguments": _arguments_text(arguments)})  # fmt: skip
            continue
        flush()
        if kind == "message":
            role = item.get("role")
            text = _text_of(item.get("content"), f"input[{i}].content")
            if role in ("system", "developer"):
                messages.append({"role": "system", "content": text})
            elif role in ("user", "assistant"):
                messages.append({"role": role, "content": text})
            else:
                raise WireError(f"input[{i}].role", f"unknown role {role!r}")
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id")),
                             "content": _text_of(output, f"input[{i}].output")})  # fmt: skip
        # reasoning, web searches, compaction summaries and other items carry nothing a chat model reads
    flush()
    if not any(m["role"] != "system" for m in messages):
        raise WireError("input", "at least one input item is needed")
    tools, left_out, namespaced = [], [], {}
    for i, raw in enumerate(_list(body.get("tools"), "tools")):
        t = _object(raw, f"tools[{i}]")
        if t.get("type") == "function":
            tools.append(
                ToolDef(str(t.get("name")), str(t.get("description") or ""), _schema(t.get("parameters")))
            )
        elif t.get("type") == "namespace":
            for k, inner in enumerate(_list(t.get("tools"), f"tools[{i}].tools")):
                fn = _object(inner, f"tools[{i}].tools[{k}]")
                if fn.get("type", "function") != "function":
                    left_out.append(str(fn.get("type")))
                    continue
                flat = f"{t.get('name')}__{fn.get('name')}"
                namespaced[flat] = (str(t.get("name")), str(fn.get("name")))
                description = str(fn.get("description") or "")
                tools.append(ToolDef(flat, description, _schema(fn.get("parameters"))))
        else:
            left_out.append(str(t.get("type") or t.get("name")))
    return WireRequest(
        "responses", str(body.get("model") or ""), _name_tool_results(_merge_system(messages)), tools,
        stream=bool(body.get("stream")), namespaced=namespaced, left_out=left_out,
    )  # fmt: skip


def _response_items(request: WireRequest, reply: ModelReply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append(
            {"type": "message", "id": _new_id("msg_"), "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
        )  # fmt: skip
    for call in reply.calls:
        item = {"type": "function_call", "id": _new_id("fc_"), "call_id": call.id, "name": call.name,
                "arguments": _reply_arguments(call), "status": "completed"}  # fmt: skip
        if call.name in request.namespaced:
            item["namespace"], item["name"] = request.namespaced[call.name]
        items.append(item)
    return items


def responses_response(
    request: WireRequest, reply: ModelReply, *, items: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    prompt, completion = reply.prompt_tokens or 0, reply.completion_tokens or 0
    return {
        "id": _new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": request.model,
        "output": items if items is not None else _response_items(request, reply),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": reply.cached_prompt_tokens or 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }


def responses_events(request: WireRequest, reply: ModelReply) -> Iterator[str]:
    """The response as the Responses API's typed events, `response.completed` last."""
    items = _response_items(request, reply)
    whole = responses_response(request, reply, items=items)
    seq = iter(range(1_000_000))

    def event(kind: str, **data: Any) -> str:
        return _sse(kind, {"type": kind, "sequence_number": next(seq), **data})

    started = {**whole, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "content": []})  # fmt: skip
            empty = {"type": "output_text", "text": "", "annotations": []}
            yield event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=empty,
            )
            yield event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                        delta=text, logprobs=[])  # fmt: skip
            yield event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                        text=text, logprobs=[])  # fmt: skip
            yield event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
                        part=item["content"][0])  # fmt: skip
        else:
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "arguments": ""})  # fmt: skip
            yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                        delta=item["arguments"])  # fmt: skip
            yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                        arguments=item["arguments"], name=item["name"])  # fmt: skip
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=whole)


# --- Anthropic Messages -----------------------------------------------------------------------------

SERVER_TOOL_PREFIXES = (
    "web_search",
    "web_fetch",
    "bash_",
    "text_editor",
    "computer_",
    "code_execution",
    "memory_",
)


def read_anthropic(body: dict[str, Any]) -> WireRequest:
    """A `/v1/messages` request."""
    messages: list[dict[str, Any]] = []
    if body.get("system"):
        messages.append({"role": "system", "content": _text_of(body["system"], "system")})
    for i, raw in enumerate(_list(body.get("messages"), "messages")):
        m = _object(raw, f"messages[{i}]")
        role, content = m.get("role"), m.get("content")
        if role not in ("user", "assistant"):
            raise WireError(f"messages[{i}].role", f"unknown role {role!r}")
        blocks = (
            [{"type": "text", "text": content}]
            if isinstance(content, str)
            else _list(content, f"messages[{i}].content")
        )
        texts, calls = [], []
        for k, raw_block in enumerate(blocks):
            block = _object(raw_block, f"messages[{i}].content[{k}]")
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text") or ""))
            elif kind == "tool_use" and role == "assistant":
                calls.append({"id": str(block.get("id")), "name": str(block.get("name")),
                              "arguments": _arguments_text(block.get("input"))})  # fmt: skip
            elif kind == "tool_result" and role == "user":
                text = _text_of(block.get("content"), f"messages[{i}].content[{k}].content")
                messages.append(
                    {"role": "tool", "tool_call_id": str(block.get("tool_use_id")), "content": text}
                )
        text = "\n".join(t for t in texts if t)
        if role == "assistant":
            messages.append(_call_message(calls, text) if calls else {"role": "assistant", "content": text})
        elif text:
            messages.append({"role": "user", "content": text})
    if not any(m["role"] != "system" for m in messages):
        raise WireError("messages", "at least one message is needed")
    tools, left_out = [], []
    for i, raw in enumerate(_list(body.get("tools"), "tools")):
        t = _object(raw, f"tools[{i}]")
        kind = str(t.get("type") or "custom")
        if kind != "custom" or "input_schema" not in t:
            left_out.append(kind if kind != "custom" else str(t.get("name")))
            continue
        tools.append(
            ToolDef(str(t.get("name")), str(t.get("description") or ""), _schema(t.get("input_schema")))
        )
    return WireRequest(
        "anthropic", str(body.get("model") or ""), _name_tool_results(_merge_system(messages)), tools,
        stream=bool(body.get("stream")), left_out=left_out,
    )  # fmt: skip


def _anthropic_blocks(reply: ModelReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.calls:
        arguments = call.arguments if call.arguments is not None else {}
        blocks.append(
            {"type": "tool_use", "id": _tool_use_id(call.id), "name": call.name, "input": arguments}
        )
    return blocks


def _tool_use_id(call_id: str) -> str:
    return call_id if call_id.startswith("toolu_") else f"toolu_{call_id}"


def anthropic_response(
    request: WireRequest, reply: ModelReply, *, blocks: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": blocks if blocks is not None else _anthropic_blocks(reply),
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": reply.prompt_tokens or 0, "output_tokens": reply.completion_tokens or 0},
    }


def anthropic_events(request: WireRequest, reply: ModelReply) -> Iterator[str]:
    """The response as the Messages API's stream events, `message_stop` last."""
    blocks = _anthropic_blocks(reply)
    whole = anthropic_response(request, reply, blocks=blocks)
    start = {**whole, "content": [], "stop_reason": None, "usage": {**whole["usage"], "output_tokens": 0}}
    yield _sse("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}})  # fmt: skip
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": block["text"]}})  # fmt: skip
        else:
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {**block, "input": {}}})  # fmt: skip
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "input_json_delta",
                                                         "partial_json": json.dumps(block["input"])}})  # fmt: skip
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": whole["stop_reason"],
                                 "stop_sequence": None}, "usage": {"output_tokens": whole["usage"]["output_tokens"]}})  # fmt: skip
    yield _sse("message_stop", {"type": "message_stop"})


def read_request(api: Api, body: Any) -> WireRequest:
    body = _object(body, "request")
    if api == "chat":
        return read_chat(body)
    if api == "responses":
        return read_responses(body)
    return read_anthropic(body)


def response_body(request: WireRequest, reply: ModelReply) -> dict[str, Any]:
    if request.api == "chat":
        return chat_response(request, reply)
    if request.api == "responses":
        return responses_response(request, reply)
    return anthropic_response(request, reply)


def response_events(request: WireRequest, reply: ModelReply) -> Iterator[str]:
    if request.api == "chat":
        return chat_events(request, reply)
    if request.api == "responses":
        return responses_events(request, reply)
    return anthropic_events(request, reply)


def error_body(api: Api, status: int, message: str) -> dict[str, Any]:
    """An error in the API's own shape (the official SDKs raise their typed errors from these)."""
    if api == "anthropic":
        kind = "invalid_request_error" if status == 400 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = "invalid_request_error" if status == 400 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
