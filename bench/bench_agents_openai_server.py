"""The OpenAI path against llama-cpp-python's server on the embedded GGUF: prompt tokens and turn latency."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from toolshift.agents.chat import ProposedCall
from toolshift.agents.embedded import gguf_path
from toolshift.agents.loop import system_prompt
from toolshift.agents.openai_backend import OpenAIChatModel, to_openai, tool_param
from toolshift.agents.retry import RetryPolicy
from toolshift.agents.toolbox import McpToolbox
from toolshift.agents.users import END_TOOL
from toolshift.agents.worlds import world_opener
from toolshift.report.benchlog import record

ALIAS = "smollm2"
MAX_TOKENS = 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(log: Path) -> tuple[subprocess.Popen, str, float]:
    port = _free_port()
    started = time.perf_counter()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", ALIAS,
             "--chat_format", "chatml-function-calling", "--n_ctx", "8192", "--host", "127.0.0.1",
             "--port", str(port), "--verbose", "False"],
            stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return proc, url, time.perf_counter() - started
        except httpx.HTTPError:
            time.sleep(0.25)


async def measure(url: str) -> list[tuple[str, str, str]]:
    async with world_opener("clinic")() as world:
        tools = [*(await McpToolbox(world.client).list_tools()), END_TOOL]
        system = system_prompt(world.title, world.policy)
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "I need to cancel my appointment."},
    ]
    model = OpenAIChatModel(ALIAS, base_url=url, api_key="x", max_tokens=MAX_TOKENS, temperature=0,
                            request_timeout=1800, retry=RetryPolicy(attempts=1))  # fmt: skip
    # The request as it was before tool_choice was sent: this server then leaves the tools out.
    old = await model._client.chat.completions.create(
        model=ALIAS, messages=to_openai(messages), tools=[tool_param(t) for t in tools], max_tokens=MAX_TOKENS
    )
    start = time.perf_counter()
    first = await model.complete(messages, tools)
    cold = time.perf_counter() - start
    call = (
        first.calls[0]
        if first.calls
        else ProposedCall("call_0", "get_appointment", {"appointment_id": "APT-00003"})
    )
    turn = [
        {
            "role": "assistant",
            "content": first.text,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments or {})},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": call.id,
            "content": '{"code": "not_found", "message": "no such id"}',
        },
    ]
    start = time.perf_counter()
    second = await model.complete(messages + turn, tools)
    warm = time.perf_counter() - start
    return [
        ("prompt tokens, clinic first turn, without tool_choice (before)", f"{old.usage.prompt_tokens}", "—"),
        ("prompt tokens, clinic first turn, tool_choice auto (after)", f"{first.prompt_tokens}", "—"),
        ("first turn (cold prompt), seconds", f"{cold:.1f}", "—"),
        ("second turn after a tool call (prompt prefix cached), seconds", f"{warm:.1f}", "—"),
        (
            "completion tokens, first / second turn",
            f"{first.completion_tokens} / {second.completion_tokens}",
            "—",
        ),
    ]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, startup = start_server(Path(tmp) / "server.log")
        try:
            rows = asyncio.run(measure(url))
        finally:
            proc.terminate()
            proc.wait(15)
    record(
        "agents: openai:smollm2 against llama-cpp-python's server",
        [("server start (model load)", f"{startup:.1f} s", "—"), *rows],
        note="python -m llama_cpp.server (0.3.36), embedded SmolLM2-135M Q4_1, --chat_format "
        "chatml-function-calling, n_ctx 8192, one thread; clinic's 41 tools + end_conversation, "
        f"max_tokens {MAX_TOKENS}, temperature 0.",
    )


if __name__ == "__main__":
    main()
