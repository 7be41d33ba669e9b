"""The OpenAI path against llama-cpp-python's own OpenAI-compatible server on the embedded SmolLM2 GGUF.

The server is the real counterpart (`python -m llama_cpp.server`, the `server` extra of the pinned
llama-cpp-python), started once per module on a free loopback port and killed in teardown. Generation is
kept short (`--max-tokens`, `--max-turns`): these tests check what is sent and that calls reach the world,
not whether a 135M model solves a task.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from peers import llama_server as start_llama_server
from toolshift.agents.config import RunConfig, make_model
from toolshift.agents.openai_backend import OpenAIChatModel
from toolshift.agents.retry import RetryPolicy
from toolshift.agents.tasks import task_from_path
from toolshift.cli import app
from toolshift.models import UserInstruction
from toolshift.taskfile import write_tasks
from toolshift.traces.store import iter_episodes

pytestmark = pytest.mark.slow

ALIAS = "smollm2"

FRONT_DESK = """\
format: toolshift.domain/1
name: front_desk
title: Harbour Street Dental
description: A dental practice's appointment book.
seed: 3
policy: |
  - Look up the appointment by its id before changing it.
  - To cancel an appointment, update its status to cancelled.
entities:
  - name: appointment
    description: A booked appointment.
    key: appointment_id
    id_format: "APT-{:05d}"
    rows: 10
    lookup: [patient_name]
    fields:
      - {name: appointment_id, type: string, description: The appointment's id.}
      - {name: patient_name, type: string, description: The patient's full name., gen: {kind: person_name}}
      - name: status
        type: enum
        values: [scheduled, cancelled]
        default: scheduled
        required: false
        description: scheduled or cancelled.
"""
"""A real world, compiled and served like the clinic, with 6 tools (≈1,000 prompt tokens): the clinic's 41
tools are ≈6,650 prompt tokens, minutes of prompt evaluation for this server on a loaded 2-core machine."""


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m llama_cpp.server` on the embedded GGUF with tool calling; yields its /v1 URL."""
    with start_llama_server(
        tmp_path_factory.mktemp("llama-server"),
        "--model_alias",
        ALIAS,
        "--chat_format",
        "chatml-function-calling",
        "--n_ctx",
        "4096",
    ) as url:
        yield url


def test_a_conversation_after_tool_calls_is_accepted(llama_server: str):
    """The request after a tool call carries the assistant's call and the tool's result. This server refused
    the assistant's `"content": null` (HTTP 500, a validation error) and an omitted content (HTTP 500, its
    chat template reads the field); every turn of an episode after the first sends such a message."""
    model = OpenAIChatModel(
        ALIAS, base_url=llama_server, api_key="x", max_tokens=1, retry=RetryPolicy(attempts=1)
    )
    call = {"id": "call_0", "type": "function",
            "function": {"name": "get_appointment", "arguments": '{"appointment_id": "APT-00003"}'}}  # fmt: skip
    messages = [
        {"role": "system", "content": "You are a clinic's agent."},
        {"role": "user", "content": "Please cancel appointment APT-00003."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "name": "get_appointment", "content": '{"status": "booked"}'},
        {"role": "assistant", "content": None},  # a turn that said nothing
        {"role": "user", "content": "Go on."},
    ]  # fmt: skip
    reply = asyncio.run(model.complete(messages, []))
    assert reply.prompt_tokens is not None and reply.prompt_tokens > 20
    assert reply.completion_tokens == 1
    assert reply.cached_prompt_tokens is None  # this server does not report `prompt_tokens_details`


def test_cached_prompt_tokens_are_read_from_the_sdks_usage():
    """`usage.prompt_tokens_details.cached_tokens`, as the openai SDK parses it, becomes `cached_prompt_tokens`."""
    from openai.types import CompletionUsage
    from openai.types.completion_usage import PromptTokensDetails

    from toolshift.agents.openai_backend import cached_tokens

    usage = CompletionUsage.model_validate(
        {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
         "prompt_tokens_details": {"cached_tokens": 1920}}
    )  # fmt: skip
    assert isinstance(usage.prompt_tokens_details, PromptTokensDetails)
    assert cached_tokens(usage) == 1920
    assert cached_tokens(CompletionUsage(prompt_tokens=5, completion_tokens=1, total_tokens=6)) is None
    assert cached_tokens(None) is None


def test_max_tokens_from_the_run_configuration_caps_a_reply(llama_server: str):
    config = RunConfig(world="clinic", model=f"openai:{ALIAS}", base_url=llama_server, max_tokens=8)
    model = make_model(config.model, config, seed=0)
    messages = [{"role": "user", "content": "Write a very long story about a lighthouse keeper."}]
    reply = asyncio.run(model.complete(messages, []))
    assert reply.completion_tokens is not None and 1 <= reply.completion_tokens <= 8
    assert RunConfig(world="clinic", model="embedded").max_tokens > 0  # a cap by default


def test_run_against_llama_cpp_server_reaches_the_world(
    llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`toolshift run --model openai:…` with TOOLSHIFT_BASE_URL: the model's tool calls are executed by the world."""
    spec = tmp_path / "front_desk.yaml"
    spec.write_text(FRONT_DESK, encoding="utf-8")
    task = task_from_path(
        str(spec),
        "cancel",
        "Please cancel my appointment APT-00003.",
        UserInstruction(intent="Cancel appointment APT-00003.", facts={"appointment id": "APT-00003"}),
        [("update_appointment", {"appointment_id": "APT-00003", "status": "cancelled"})],
    ).model_copy(update={"domain": "front_desk"})
    tasks = write_tasks(tmp_path / "front_desk.tasks.jsonl", [task])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("TOOLSHIFT_BASE_URL", llama_server)
    out = tmp_path / "run"
    args = ["run", "--world", str(spec), "--tasks", str(tasks), "--model", f"openai:{ALIAS}",
            "--max-turns", "2", "--max-tokens", "48", "--temperature", "0", "--no-check", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (config_path,) = [p for p in out.glob("run-*.json") if not p.name.endswith(".results.json")]
    config = json.loads(config_path.read_text())["config"]
    assert config["base_url"] == llama_server and config["max_tokens"] == 48
    (path,) = out.glob("run-*.episodes.jsonl")
    (episode,) = list(iter_episodes(path))
    assert episode.termination_reason != "agent_error", episode.outcome.info
    assistant = [m for m in episode.messages if m.role == "assistant"]
    assert len(assistant) >= 2  # the second request carried the first turn back to the server
    # Not reported by this server: absent from the record (unknown), never a made-up 0.
    assert all(m.usage.cached_prompt_tokens is None for m in assistant)
    # The world's tools are in the prompt (≈1,000 tokens), not only the conversation (≈150).
    assert assistant[0].usage.prompt_tokens > 600
    by_world = [m for m in episode.messages if m.role == "tool" and not m.content.startswith("error: ")]
    assert by_world, [m.content for m in episode.messages if m.role == "tool"]
    assert episode.world_diff is not None and episode.outcome.success is not None
