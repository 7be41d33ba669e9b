"""`toolshift run` on BFCL and AgentDojo worlds: the oracle over MCP, judged by the benchmarks' own checks."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from toolshift.agents.config import RunConfig, make_agent, make_user
from toolshift.agents.loop import run_episode
from toolshift.agents.policies import DONE_TEXT
from toolshift.agents.worlds import world_opener
from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.taskfile import read_tasks, write_tasks
from toolshift.traces.store import iter_episodes


def _run(task, world):
    config = RunConfig(world=world, model="oracle")
    return asyncio.run(
        run_episode(
            task, make_agent(config, task, 0), make_user(config, task, 0), world_opener(world), episode_id="e"
        )
    )


def test_bfcl_oracle_episodes_over_in_memory_mcp_get_bfcls_full_marks_and_a_wrong_agent_does_not():
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from toolshift.agents.policies import ScriptedCall, ScriptedPolicy
    from toolshift.world.external import export_tasks

    tasks = export_tasks(
        "bfcl", limit=2
    ).tasks  # two of each category, holdout and missing-parameter turns too
    assert len(tasks) == 8
    for task in tasks:
        episode = _run(task, "bfcl")
        assert episode.outcome.judged_by == "bfcl-multi-turn-checker"
        assert episode.outcome.success is True, (task.id, episode.outcome.info)
        assert episode.outcome.info["delta_cover"] is True
        assert episode.termination_reason == "user_stop"
        assert [m.content for m in episode.messages if m.role == "user" and not m.tool_calls] == [
            t.text for t in task.turns
        ]
    # The same world and user with an agent that skips the turns' calls: BFCL says no.
    task = tasks[0]
    config = RunConfig(world="bfcl", model="oracle")
    idle = ScriptedPolicy("idle", [ScriptedCall("ls", {})])
    episode = asyncio.run(
        run_episode(task, idle, make_user(config, task, 0), world_opener("bfcl"), episode_id="i")
    )
    assert episode.outcome.success is False and episode.outcome.info["error_type"].startswith("multi_turn:")


def test_a_call_that_breaks_the_schema_goes_to_bfcl_as_written_so_world_and_checker_agree():
    """BFCL's own possible answer for entry 173 passes a string where its doc says integer. BFCL's harness
    runs it; so must ours, or the checker (which re-executes the calls) and the world would disagree."""
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from toolshift.world.external import bfcl

    task = bfcl.task_for(bfcl.entry("multi_turn_base_173"))
    assert any(g.arguments == {"ticket_id": "ticket_001"} for g in task.gold_path)
    episode = _run(task, "bfcl")
    info = episode.outcome.info
    assert episode.outcome.success is True and info["delta_cover"] is True, info
    assert info["failed_calls"] == 0 and info["missing_changes"] == 0


def test_a_miss_func_holdout_function_is_offered_from_its_holdout_turn_on_as_in_bfcl():
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from toolshift.world.external import bfcl

    task = bfcl.task_for(bfcl.entry("multi_turn_miss_func_0"))  # BFCL holds `sort` out until turn 3
    assert [t.new_tools for t in task.turns] == [[], [], [], ["sort"], []]
    config = RunConfig(world="bfcl", model="oracle")
    oracle = make_agent(config, task, 0)
    offered: list[tuple[int, bool]] = []  # (user turn, `sort` offered) at every model call

    class Recording:  # a measuring instrument around the oracle: what the loop offers at each call
        name = oracle.name

        async def complete(self, messages, tools):
            turn = sum(1 for m in messages if m.get("role") == "user") - 1
            offered.append((turn, any(t.name == "sort" for t in tools)))
            return await oracle.complete(messages, tools)

    episode = asyncio.run(
        run_episode(task, Recording(), make_user(config, task, 0), world_opener("bfcl"), episode_id="h")
    )
    assert episode.outcome.success is True and episode.outcome.info["delta_cover"] is True
    assert {turn for turn, _ in offered} == {0, 1, 2, 3, 4}
    assert all(shown == (turn >= 3) for turn, shown in offered), offered


def test_agentdojo_wall_clock_stamps_are_left_out_of_the_reference_diff_so_it_agrees_with_agentdojo():
    """AgentDojo stamps the invitation email `create_calendar_event` sends with `datetime.now()`."""
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    from toolshift.world.external import agentdojo
    from toolshift.world.external.objects import ObjectWorld

    task = agentdojo.task_for("workspace.user_task_6")
    world = ObjectWorld(agentdojo.load_domain("workspace.user_task_6"))
    before = world.snapshot()
    for g in task.gold_path:
        world.call(g.tool, g.arguments)
    stamped = {c.field for c in world.changes_since(before) if c.field.endswith("/timestamp")}
    assert stamped and not stamped & {c.field for c in task.expected_changes}
    assert len(task.expected_changes) == len(world.changes_since(before)) - len(stamped)
    episode = _run(task, "agentdojo")
    assert episode.outcome.success is True and episode.outcome.info["delta_cover"] is True


def test_agentdojo_oracle_answers_with_the_ground_truth_output():
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    from toolshift.world.external import export_tasks

    tasks = export_tasks("agentdojo", limit=2).tasks
    assert len(tasks) == 8
    for task in tasks:
        episode = _run(task, "agentdojo")
        assert episode.outcome.judged_by == "agentdojo-utility" and episode.outcome.success is True, task.id
        assert episode.outcome.info["delta_cover"] is True, task.id
        last = [m for m in episode.messages if m.role == "assistant"][-1]
        assert last.content == (task.turns[0].reply or DONE_TEXT)
        assert "Emma Johnson" in episode.messages[0].content  # AgentDojo's system message as the policy


def test_toolshift_run_against_served_bfcl_and_agentdojo_worlds_over_http(tmp_path):
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    from toolshift.world.external import export_tasks, open_world
    from toolshift.world.mcp.serve import WorldServer, http_server_thread

    runner = CliRunner()
    for family, subset in (("bfcl", "base"), ("agentdojo", "travel")):
        (task,) = export_tasks(family, subsets=[subset], limit=1).tasks
        tasks_file = write_tasks(tmp_path / f"{family}.jsonl", [task])
        server = WorldServer(open_world(f"{family}:{task.id}"))
        with http_server_thread(server) as url:
            result = runner.invoke(app, ["run", "--world", url, "--tasks", str(tasks_file), "--model", "oracle",
                                         "--out", str(tmp_path / f"run-{family}")])  # fmt: skip
        assert result.exit_code == 0, result.output
        (episode,) = list(iter_episodes(next((tmp_path / f"run-{family}").glob("run-*.episodes.jsonl"))))
        assert episode.outcome.success is True and episode.outcome.judged_by == task.judge, episode.outcome
        assert episode.world_diff == task.expected_changes  # folded from the changes the world reported


def test_cli_exports_tasks_runs_a_family_and_refuses_mismatched_worlds(tmp_path):
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    runner = CliRunner()
    tasks_file = tmp_path / "bfcl.jsonl"
    result = runner.invoke(
        app, ["world", "tasks", "bfcl", "--subset", "long_context", "--limit", "2", "--out", str(tasks_file)]
    )
    assert result.exit_code == 0, result.output
    assert [t.id for t in read_tasks(tasks_file)] == [
        "multi_turn_long_context_0",
        "multi_turn_long_context_1",
    ]
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["run", "--world", "bfcl", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(next(out.glob("run-*.results.json")).read_text())
    assert summary["success"]["mean"] == 1.0
    assert json.loads((out / "bfcl.catalog.json").read_text())["domain"] == "bfcl"
    result = runner.invoke(
        app,
        [
            "run",
            "--world",
            "bfcl:multi_turn_base_0",
            "--tasks",
            str(tasks_file),
            "--model",
            "oracle",
            "--out",
            str(out),
        ],
    )
    assert isinstance(result.exception, BadInputError) and result.exception.exit_code == 2
    assert "runs in world bfcl:multi_turn_long_context_0" in str(result.exception)
    result = runner.invoke(
        app,
        ["run", "--world", "agentdojo", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(out)],
    )
    assert isinstance(result.exception, BadInputError) and "not one of agentdojo's tasks" in str(
        result.exception
    )
    result = runner.invoke(app, ["world", "domains"])
    assert result.exit_code == 0 and "bfcl" in result.output and "agentdojo" in result.output
