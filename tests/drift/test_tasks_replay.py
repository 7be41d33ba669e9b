"""Tasks on real servers judged by state: each gold path replays to exactly its Δgold on a fresh sandbox, on two
real versions each for the filesystem and git servers, through the agent loop as an oracle episode too (D363)."""

from __future__ import annotations

from collections import Counter

import pytest

from toolshift.drift.capabilities import resolve
from toolshift.drift.replay import PathReplay, real_world, replay
from toolshift.drift.servers import TASK_SERVERS
from toolshift.drift.tasks import DriftTask, make_tasks

from .servers import listing, real, run


def test_every_task_server_has_thirty_tasks_from_templates_stating_their_facts():
    for server in TASK_SERVERS:
        tasks = make_tasks(server)
        assert len(tasks) >= 30, server
        assert len({t.template for t in tasks}) >= 7
        splits = Counter(t.task.split for t in tasks)
        assert splits["train"] >= 10 and splits["test"] >= 10
        for t in tasks:
            assert all(v in t.task.instruction.intent for v in t.task.instruction.facts.values())


def _task(server: str, task_id: str):
    return next(t for t in make_tasks(server) if t.id == task_id)


async def _oracle_episode(inst, task, steps):
    from toolshift.agents.loop import EpisodeLimits, run_episode
    from toolshift.agents.users import ScriptedUser

    agent = PathReplay(list(task.task.instruction.facts), steps)
    return await run_episode(
        task.task, agent, ScriptedUser(task.task.public_request, task.task.instruction), real_world(inst),
        episode_id="oracle", limits=EpisodeLimits(max_turns=20, result_chars=100_000),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("server", "versions", "task_id", "tools"),
    [
        ("filesystem", ("0.6.2", "2026.8.31"), "fs-copy-1",
         (("read_file", "write_file"), ("read_text_file", "write_file"))),
        ("filesystem", ("0.6.2", "2026.8.31"), "fs-folder-file-1",
         (("create_directory", "write_file"), ("create_directory", "write_file"))),
        ("git", ("0.6.2", "2026.10.19"), "git-commit-file-2", (("git_add", "git_commit"), ("git_add", "git_commit"))),
    ],
)  # fmt: skip
def test_a_gold_path_replays_to_exactly_its_delta_on_two_real_versions(server, versions, task_id, tools):
    """Δgold from the newest version's reference path replayed on a fresh sandbox (its defining version, as the
    suite makes it); then each version's own reference path, through the agent loop, makes exactly that Δgold."""
    task = _task(server, task_id)
    resolved = {v: resolve(server, list(task.program), listing(server, v)) for v in versions}
    for version, expected in zip(versions, tools, strict=True):
        assert resolved[version].ok and tuple(s.tool for s in resolved[version].steps) == expected
    made = run(replay(real(server, versions[-1]), resolved[versions[-1]]))
    assert made.errors == [] and made.changes
    gold = DriftTask(
        task.task.model_copy(update={"expected_changes": made.changes}), task.program, task.template
    )
    for version in versions:
        ep = run(_oracle_episode(real(server, version), gold, resolved[version].steps))
        assert ep.outcome.success is True and ep.outcome.info["strict_success"] is True, (
            version,
            ep.outcome.info,
        )
        assert ep.outcome.info["missing_changes"] == 0 and ep.world_diff == made.changes, version
    tables = {c.table for c in made.changes}
    assert tables <= ({"file", "dir"} if server == "filesystem" else {"index", "ref"})


def test_a_version_without_a_capability_is_marked_not_failed():
    task = _task("git", "git-start-branch-1")
    res = resolve("git", list(task.program), listing("git", "0.6.2"))
    assert not res.ok and res.missing == "checkout: no git_checkout"


@pytest.mark.parametrize(
    ("server", "version", "task_id", "table"),
    [
        ("memory", "2026.8.31", "mem-remember-relate-1", "relation"),
        ("sqlite", "2025.4.25", "sql-add-product-1", "products"),
    ],
)
def test_the_memory_graph_and_the_database_are_judged_by_state(server, version, task_id, table):
    inst = real(server, version)
    task = _task(server, task_id)
    res = resolve(server, list(task.program), listing(server, version))
    made = run(replay(inst, res))
    assert made.errors == [] and table in {c.table for c in made.changes}
    again = run(replay(inst, res))
    assert again.changes == made.changes  # a fresh sandbox each time: the same Δ
