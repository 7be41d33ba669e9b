"""A model served over the wire APIs harnesses speak: OpenAI chat completions, Responses, Anthropic Messages.

`ModelHost` puts one `ChatModel` (the embedded SmolLM2 by default, or any endpoint toolshift reaches) behind
`/v1/chat/completions`, `/v1/responses` and `/v1/messages`, tool calls included, whole or streamed, so a
harness CLI or an agent SDK runs here with no key and no network. Calls are answered one at a time (the
embedded model decodes one conversation at a time) and each is logged (`ModelCall`: what the harness sent —
its instructions' and tools' size — and what the model read and wrote), which is how an episode learns a
harness's model calls, tokens and prompt size. A call budget makes the calls past it answer with a fixed
text and no tool call, so a harness's turn ends there (the episode's turn limit).

Bound to loopback (a request whose Host is not loopback gets 421, as every toolshift server); bound beyond
loopback it needs a bearer token. `serving` runs the app on the caller's event loop (an episode's), on a port
of its own (`toolshift.agents.serving`), and stops it when the block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from toolshift.agents.chat import ChatModel, ModelConfigError, ModelReply
from toolshift.agents.serving import serving_app
from toolshift.modelserver.wire import (
    Api,
    WireRequest,
    error_body,
    read_request,
    response_body,
    response_events,
)

MAX_REQUEST_BYTES = 16 << 20
"""The largest request body read (a long harness conversation with its tool catalog is well under 1 MiB)."""
BUDGET_REPLY = "I have reached the turn limit for this conversation."
"""What a call past the budget answers, with no tool call: the harness's turn ends on it."""
LOCAL_KEY = "toolshift-local"
"""The API key harnesses are given for a local server (they insist on one; a loopback server checks none)."""


@dataclass
class ModelCall:
    """One model call as the server saw it."""

    api: str
    at: float
    """Seconds since the host started."""
    seconds: float
    system_chars: int
    """Characters of instructions the harness sent (its system prompt, developer messages)."""
    tools_chars: int
    tools: int
    left_out: int
    """Tools of kinds the model cannot call (a harness's web search, an API's server tools)."""
    messages: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tool_calls: int = 0
    called: list[str] = field(default_factory=list)
    """The tools the model called (a harness's own, or the episode's MCP tools under the harness's names)."""
    text_chars: int = 0
    over_budget: bool = False
    error: str | None = None
    served_seconds: float = 0.0
    """The whole request as the server handled it: reading, the model's answer (`seconds`), writing."""


@dataclass
class ModelHost:
    """One model behind the wire APIs, its calls logged; `budget`: how many calls it answers with the model."""

    model: ChatModel
    budget: int | None = None
    name: str | None = None
    calls: list[ModelCall] = field(default_factory=list)
    _lock: asyncio.Lock | None = None
    _started: float = field(default_factory=time.monotonic)

    @property
    def exhausted(self) -> bool:
        return any(c.over_budget for c in self.calls)

    @property
    def answered(self) -> int:
        """Calls the model answered (not refused for the budget, not failed)."""
        return sum(1 for c in self.calls if not c.over_budget and c.error is None)

    async def answer(self, request: WireRequest) -> ModelReply:
        """The model's reply to a request, logged; past the budget, the fixed reply without a call."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            spent = self.budget is not None and self.answered >= self.budget
            record = ModelCall(
                request.api, round(time.monotonic() - self._started, 3), 0.0, request.system_chars,
                request.tools_chars, len(request.tools), len(request.left_out), len(request.messages),
            )  # fmt: skip
            self.calls.append(record)
            if spent:
                record.over_budget = True
                return ModelReply(text=BUDGET_REPLY, prompt_tokens=0, completion_tokens=0)
            clock = time.perf_counter()
            try:
                reply = await self.model.complete(request.messages, request.tools)
            except Exception as exc:
                record.error = f"{type(exc).__name__}: {exc}"[:500]
                raise
            finally:
                record.seconds = round(time.perf_counter() - clock, 4)
            resolve_names(reply, request)
            record.prompt_tokens, record.completion_tokens = reply.prompt_tokens, reply.completion_tokens
            record.tool_calls, record.text_chars = len(reply.calls), len(reply.text or "")
            record.called = [c.name for c in reply.calls]
            return reply

    def log(self) -> list[dict[str, Any]]:
        return [asdict(c) for c in self.calls]


def resolve_names(reply: ModelReply, request: WireRequest) -> None:
    """Give a call the offered tool's own name when the model named it without the harness's prefix (a scripted
    model knows `get_order`, a harness offers `mcp__toolshift__get_order`): exactly one offered tool must end
    with `__<name>`; any other name is left for the harness to refuse."""
    offered = {t.name for t in request.tools}
    for call in reply.calls:
        if call.name in offered:
            continue
        matches = [name for name in offered if name.endswith(f"__{call.name}")]
        if len(matches) == 1:
            call.name = matches[0]


def _routes() -> Iterator[tuple[str, Api]]:
    for prefix in ("/v1", ""):
        yield f"{prefix}/chat/completions", "chat"
        yield f"{prefix}/responses", "responses"
        yield f"{prefix}/messages", "anthropic"


def model_app(host: ModelHost, *, bind: str = "127.0.0.1", token: str | None = None) -> Any:
    """The ASGI app: the three APIs (with and without the `/v1` prefix), `/v1/models`, `/health`."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from toolshift.world.mcp.http_guard import HostGate, TokenGate

    model_name = host.name or host.model.name

    def endpoint(api: Api) -> Any:
        async def handle(request: Request) -> Response:
            clock = time.perf_counter()
            try:
                return await answer(request)
            finally:
                if host.calls:
                    host.calls[-1].served_seconds = round(time.perf_counter() - clock, 4)

        async def answer(request: Request) -> Response:
            body = await request.body()
            if len(body) > MAX_REQUEST_BYTES:
                return JSONResponse(error_body(api, 413, f"request over {MAX_REQUEST_BYTES} bytes"), 413)
            try:
                wire = read_request(api, json.loads(body))
            except (
                ValueError,
                RecursionError,
            ) as exc:  # WireError, bad JSON, nesting past the parser's depth
                return JSONResponse(error_body(api, 400, str(exc)[:1000]), 400)
            if not wire.model:
                wire.model = model_name
            try:
                reply = await host.answer(wire)
            except ModelConfigError as exc:
                return JSONResponse(error_body(api, 500, f"model configuration: {exc}"), 500)
            except (
                Exception
            ) as exc:  # the model failed after its own retries: the harness sees a server error
                return JSONResponse(error_body(api, 500, f"{type(exc).__name__}: {exc}"[:1000]), 500)
            if wire.stream:  # the events are made here, before the timing ends: only their sending is after
                return StreamingResponse(list(response_events(wire, reply)), media_type="text/event-stream")
            return JSONResponse(response_body(wire, reply))

        return handle

    async def models(request: Request) -> JSONResponse:
        entry = {"id": model_name, "object": "model", "created": 0, "owned_by": "toolshift",
                 "type": "model", "display_name": model_name}  # fmt: skip
        return JSONResponse({"object": "list", "data": [entry], "has_more": False})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": model_name, "calls": len(host.calls)})

    routes = [Route(path, endpoint(api), methods=["POST"]) for path, api in _routes()]
    routes += [Route("/v1/models", models), Route("/models", models), Route("/health", health)]
    app = Starlette(routes=routes)
    return HostGate(TokenGate(app, token) if token else app, bind)


@contextlib.asynccontextmanager
async def serving(host: ModelHost, *, port: int = 0) -> AsyncIterator[str]:
    """Serve `host` on loopback for the length of the block; yields the base URL (`http://127.0.0.1:P`)."""
    async with serving_app(model_app(host), port=port, name="model") as url:
        yield url
