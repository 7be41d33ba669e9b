"""The agent loop over a real world and real in-memory MCP: success, malformed calls, termination, timeouts."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.lowlevel import Server

from toolshift.agents.chat import ModelError, ModelReply, ProposedCall, ToolDef
from toolshift.agents.loop import EpisodeLimits, run_episode
from toolshift.agents.policies import ScriptedCall, ScriptedPolicy, oracle, replay
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.models import Task


def _user(task: Task) -> ScriptedUser:
    return ScriptedUser(task.public_request, task.instruction)


def _run(task: Task, agent: Any, limits: EpisodeLimits | None = None, opener: Any = None):
    return asyncio.run(
        run_episode(task, agent, _user(task), opener or world_opener("clinic"), episode_id="t", limits=limits)
    )


def test_oracle_solves_its_task_over_mcp(tasks):
    episode = _run(tasks[0], oracle(tasks[0]))
    assert episode.outcome.success is True
    assert episode.termination_reason == "user_stop"
    assert episode.world_diff == tasks[0].expected_changes
    roles = [m.role for m in episode.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    assert "Riverside" in episode.messages[0].content  # the domain's policy and title reach the prompt
    assert episode.messages[-1].tool_calls[0].name == "end_conversation"


def test_each_episode_gets_a_fresh_world(tasks):
    first = _run(tasks[0], oracle(tasks[0]))
    second = _run(tasks[0], oracle(tasks[0]))
    assert first.outcome.success and second.outcome.success  # a cancelled appointment would fail the second


def test_invalid_task_fails_under_the_oracle(impossible):
    episode = _run(impossible, oracle(impossible))
    assert episode.outcome.success is False
    assert episode.outcome.info["missing_changes"] == 1


def test_malformed_calls_are_recorded_and_the_episode_goes_on(tasks):
    task = tasks[0]

    class Clumsy:
        name = "clumsy"

        def __init__(self) -> None:
            self.script = [
                ProposedCall("c1", "no_such_tool", {}),
                ProposedCall("c2", "get_appointment", None, raw_arguments="{oops", parse_error="not JSON"),
                ProposedCall("c3", "get_appointment", {"appointment_id": 7}),
                ProposedCall("c4", "cancel_appointment", {"appointment_id": "APT-00003"}),
            ]
            self.seen: list[dict[str, Any]] = []

        async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
            self.seen = messages
            if self.script:
                return ModelReply(calls=[self.script.pop(0)])
            return ModelReply(calls=[ProposedCall("end", "end_conversation", {})])

    agent = Clumsy()
    episode = _run(task, agent)
    results = [m for m in episode.messages if m.role == "tool"]
    assert [m.error for m in results] == [True, True, True, False]
    assert "unknown tool 'no_such_tool'" in results[0].content
    assert "{oops" in results[1].content
    assert "appointment_id" in results[2].content
    assert episode.termination_reason == "agent_stop"
    assert episode.outcome.success is True
    assert episode.outcome.info["failed_calls"] == 3
    wire_errors = [m for m in agent.seen if m["role"] == "tool"]
    assert wire_errors[0]["content"].startswith("error: unknown tool")  # the model saw the errors


def test_max_turns_and_agent_error(tasks):
    task = tasks[0]
    looping = ScriptedPolicy("loop", [ScriptedCall("get_appointment", {"appointment_id": "APT-00003"})] * 50)
    episode = _run(task, looping, EpisodeLimits(max_turns=4))
    assert episode.termination_reason == "max_turns"
    assert episode.outcome.info["turns"] == 4
    assert episode.outcome.success is False

    class Broken:
        name = "broken"

        async def complete(self, messages, tools):
            raise ModelError("the endpoint gave up")

    episode = _run(task, Broken())
    assert episode.termination_reason == "agent_error"
    assert episode.outcome.success is False  # the agent's own failure is charged to it


def test_model_and_episode_timeouts(tasks):
    class Slow:
        name = "slow"

        def __init__(self, seconds: float) -> None:
            self.seconds = seconds

        async def complete(self, messages, tools):
            await asyncio.sleep(self.seconds)
            return ModelReply(calls=[ProposedCall("c", "get_appointment", {"appointment_id": "APT-00003"})])

    episode = _run(tasks[0], Slow(5), EpisodeLimits(model_timeout=0.2))
    assert episode.termination_reason == "timeout"
    assert episode.outcome.info["timeout"] == "model_call"
    episode = _run(tasks[0], Slow(0.05), EpisodeLimits(episode_timeout=0.5, max_turns=1000))
    assert episode.termination_reason == "timeout"
    assert episode.outcome.info["timeout"] == "episode"
    assert episode.world_diff == []  # the diff is still taken after a timeout
    assert episode.outcome.info["turns"] < 1000  # stopped by the clock, not by running out of turns


class Gate:
    """A tool call that blocks its thread until released, and whether it has returned."""

    def __init__(self) -> None:
        self.release, self.left = threading.Event(), threading.Event()

    def block(self, seconds: float) -> None:
        self.release.wait(seconds)
        self.left.set()


def _slow_tool_opener(delay: float, *, blocking: Gate | None = None):
    """A real MCP server whose only tool sleeps `delay` s: the world a timed-out tool call needs.

    With `blocking`, the tool blocks its thread (the event loop, in process) until the gate is released.
    """
    from contextlib import asynccontextmanager

    async def list_tools(ctx, params):
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="wait", description="Waits.", input_schema={"type": "object", "properties": {}}
                )
            ]
        )

    async def call_tool(ctx, params):
        if blocking is not None:
            blocking.block(delay)  # blocks the event loop, as a runaway in-process action would
        else:
            await asyncio.sleep(delay)
        return types.CallToolResult(content=[types.TextContent(text="waited")])

    server = Server("slow", on_list_tools=list_tools, on_call_tool=call_tool)

    class Session:
        policy, title = "", "Slow world"

        def __init__(self, client):
            self.client = client

        async def diff(self, reported):
            return []

    @asynccontextmanager
    async def opener():
        async with Client(server, mode="legacy") as client:
            yield Session(client)

    return opener


def test_timed_out_tool_call_returns_to_the_model_as_an_error(tasks):
    agent = ScriptedPolicy("waiter", [ScriptedCall("wait", {}), ScriptedCall("wait", {})])
    # The tool would answer after an hour: both calls are back only because their timeout fired.
    episode = _run(tasks[0], agent, EpisodeLimits(tool_timeout=0.2), opener=_slow_tool_opener(3600))
    results = [m for m in episode.messages if m.role == "tool"]
    assert len(results) == 2 and all(m.error for m in results)
    assert "timed out" in results[0].content
    assert episode.termination_reason == "user_stop"  # the episode went on past both timeouts


def test_replay_reproduces_a_recorded_episode(tasks):
    recorded = _run(tasks[1], oracle(tasks[1]))
    again = _run(tasks[1], replay(recorded))

    def calls(e):
        return [
            (c.name, c.arguments) for m in e.messages for c in (m.tool_calls or []) if m.role == "assistant"
        ]

    assert calls(again) == calls(recorded)
    assert again.world_diff == recorded.world_diff
    assert again.outcome.success is True


@pytest.mark.parametrize("domain", ["no_such_world"])
def test_unknown_world_is_a_clear_error(domain):
    from toolshift.errors import BadInputError

    with pytest.raises(BadInputError, match="unknown domain"):
        world_opener(domain)


def test_a_tool_that_blocks_the_loop_cannot_hang_the_run(tasks):
    from toolshift.agents.loop import EpisodeHung, run_isolated

    agent = ScriptedPolicy("waiter", [ScriptedCall("wait", {})])
    gate = Gate()
    opener = _slow_tool_opener(600, blocking=gate)
    limits = EpisodeLimits(tool_timeout=0.1, episode_timeout=0.2)

    async def run() -> None:
        await run_isolated(
            lambda: run_episode(tasks[0], agent, _user(tasks[0]), opener, episode_id="h", limits=limits),
            deadline=0.6,
        )

    try:
        with pytest.raises(EpisodeHung):
            asyncio.run(run())
        # The run came back while the tool still blocked its episode's loop.
        assert not gate.left.is_set()
    finally:
        gate.release.set()
