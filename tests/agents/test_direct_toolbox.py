"""The direct path to an in-process world (`DirectToolbox`, D149) and the MCP path give identical episodes: the
demo's clinic tasks, oracle episodes on a small bench build, and τ² airline oracle episodes judged by τ²'s reward;
plus the pieces one by one (listing, texts, errors, change reports, timeouts)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from mcp import Client

from toolshift.agents.chat import ProposedCall
from toolshift.agents.config import RunConfig, make_agent, make_user
from toolshift.agents.demo import demo_tasks
from toolshift.agents.loop import run_episode
from toolshift.agents.toolbox import DirectToolbox, McpToolbox
from toolshift.agents.worlds import InProcessSession, in_process, world_opener
from toolshift.models import Task
from toolshift.world import Tool, World, load_domain
from toolshift.world.mcp.serve import WorldServer

TIMED = {"timestamp", "start_time", "end_time", "duration"}


def _untimed(value: Any) -> Any:
    """An episode's JSON without its clock readings (start, end, duration, each message's time): the rest must match."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMED}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


async def _episodes(world: str, tasks: list[Task], via: str) -> list[dict[str, Any]]:
    opener = world_opener(world, via=via)  # type: ignore[arg-type]
    config = RunConfig(world=world, model="oracle")
    out = []
    for task in tasks:
        episode = await run_episode(
            task, make_agent(config, task, 0), make_user(config, task, 0), opener, episode_id=f"{task.id}:0"
        )
        out.append(_untimed(episode.model_dump(mode="json")))
    return out


def _same_on_both_paths(world: str, tasks: list[Task]) -> list[dict[str, Any]]:
    direct = asyncio.run(_episodes(world, tasks, "direct"))
    mcp = asyncio.run(_episodes(world, tasks, "mcp"))
    for d, m in zip(direct, mcp, strict=True):
        assert d == m
    return direct


def test_the_demo_tasks_give_identical_episodes_directly_and_over_mcp():
    episodes = _same_on_both_paths("clinic", demo_tasks())
    assert [e["outcome"]["success"] for e in episodes] == [True, True, True]
    assert all(e["messages"] for e in episodes)


@pytest.mark.slow
def test_a_small_bench_build_gives_identical_oracle_episodes_directly_and_over_mcp(tmp_path):
    from toolshift.bench.build import build_domain, read_tasks, write_manifest

    build_domain(tmp_path, "payroll", seed=0, per_domain=4)
    write_manifest(tmp_path, ["payroll"], 0, 4)
    tasks = read_tasks(tmp_path / "domains" / "payroll" / "tasks.jsonl")
    assert tasks
    episodes = _same_on_both_paths("payroll", tasks)
    assert sum(e["outcome"]["success"] for e in episodes) >= 1


@pytest.mark.slow
def test_tau2_airline_oracle_episodes_are_identical_directly_and_over_mcp():
    from toolshift.world.tau2.domains import tau2_world
    from toolshift.world.tau2.tasks import import_tasks

    why = tau2_world("tau2-airline").unavailable()
    if why is not None:
        pytest.skip(f"tau2-airline unavailable: {why}")

    tasks = import_tasks("tau2-airline").tasks[:6]
    episodes = _same_on_both_paths("tau2-airline", tasks)
    assert any(e["outcome"]["success"] for e in episodes)
    assert any(len(e["messages"]) > 4 for e in episodes)


# --- the pieces --------------------------------------------------------------------------------------


async def _both(
    world: World, calls: list[ProposedCall]
) -> tuple[list[Any], list[Any], DirectToolbox, McpToolbox]:
    other = world.fork()
    direct = DirectToolbox(world)
    async with Client(WorldServer(other, shared_state=True).server, mode="legacy") as client:
        mcp = McpToolbox(client)
        listed = (await direct.list_tools(), await mcp.list_tools())
        assert listed[0] == listed[1]
        got_direct = [await direct.call(c) for c in calls]
        got_mcp = [await mcp.call(c) for c in calls]
    return got_direct, got_mcp, direct, mcp


def test_texts_errors_and_change_reports_are_the_same_as_over_mcp():
    world = World(load_domain("clinic"))
    calls = [
        ProposedCall(id="a", name="get_patient", arguments={"patient_id": "PAT-00001"}),
        ProposedCall(id="b", name="get_patient", arguments={"patient_id": "PAT-99999"}),  # not_found
        ProposedCall(id="c", name="get_patient", arguments={"patient_id": 7}),  # the client's schema check
        ProposedCall(id="d", name="get_pateint", arguments={}),  # unknown tool
        ProposedCall(id="e", name="update_patient", arguments={"patient_id": "PAT-00001", "phone": "555"}),
        ProposedCall(id="f", name="update_patient", arguments={"patient_id": "PAT-00002", "email": "2024"}),
        ProposedCall(id="g", name="search_patients", arguments={"full_name": "é", "limit": 3}),
        ProposedCall(id="h", name="get_patient", arguments=None, parse_error="not JSON", raw_arguments="{"),
    ]
    direct, mcp, dbox, mbox = asyncio.run(_both(world, calls))
    assert direct == mcp
    assert [o.kind for o in direct] == [
        "ok", "domain_error", "bad_arguments", "unknown_tool", "ok", "domain_error", "ok", "bad_arguments",
    ]  # fmt: skip
    assert dbox.reported == mbox.reported and dbox.reported
    assert dbox.unreported == mbox.unreported == 0


def test_a_handler_that_is_not_ours_runs_off_the_loop_so_the_tool_timeout_still_fires():
    world = World(load_domain("clinic"))
    release = threading.Event()

    def blocking(runtime: Any, args: dict[str, Any]) -> dict[str, bool]:
        release.wait(60)
        return {"slept": True}

    world.add_tool(Tool("slow_read", "Blocks.", {"type": "object", "properties": {}}, "read", blocking))

    async def main() -> Any:
        box = DirectToolbox(world, tool_timeout=0.2)
        await box.list_tools()
        try:
            return await box.call(ProposedCall(id="x", name="slow_read", arguments={}))
        finally:
            release.set()

    outcome = asyncio.run(main())
    assert outcome.kind == "timeout" and "timed out after 0.2 s" in outcome.text


def test_in_process_sessions_are_direct_by_default_and_mcp_on_request():
    async def main() -> tuple[Any, Any]:
        async with in_process("clinic")() as direct, in_process("clinic", via="mcp")() as mcp:
            return direct.client, mcp.client

    direct, mcp = asyncio.run(main())
    assert direct is None and mcp is not None
    assert InProcessSession.__dataclass_fields__["client"]
