"""`--executor ray` on a local cluster: the same episodes, the same file, the same resume."""

from __future__ import annotations

import asyncio

import pytest

from toolshift.agents.config import RunConfig
from toolshift.agents.runner import plan_run, run_local

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    from toolshift.agents.ray_executor import connect, shutdown

    connect(None, num_cpus=2)
    yield ray
    shutdown()


def _outcomes(episodes):
    return sorted(
        (e.task_id, e.trial, e.outcome.success, tuple(c.identity() for c in e.world_diff)) for e in episodes
    )


def test_ray_matches_local_and_resumes(ray_cluster, tasks, tmp_path):
    from toolshift.agents.ray_executor import run_ray

    config = RunConfig(world="clinic", model="oracle")
    local = plan_run(config, tasks, 2, tmp_path / "local")
    asyncio.run(run_local(local))
    remote = plan_run(config, tasks, 2, tmp_path / "ray")
    first = remote.todo[:1]
    remote.todo = first
    run_ray(remote, concurrency=2)  # an interrupted run: one episode finished
    resumed = plan_run(config, tasks, 2, tmp_path / "ray")
    assert len(resumed.todo) == 3
    done = run_ray(resumed, concurrency=2)
    assert len(done) == 3 and all(e.source["executor"] == "ray" for e in done)
    final = plan_run(config, tasks, 2, tmp_path / "ray")
    assert final.todo == []
    assert _outcomes(final.current_episodes()) == _outcomes(local.current_episodes())
    assert {e.id for e in final.current_episodes()} == {e.id for e in local.current_episodes()}


def test_cli_ray_executor(ray_cluster, tasks_file, tmp_path):
    from typer.testing import CliRunner

    from toolshift.cli import app
    from toolshift.traces.store import iter_episodes

    args = ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(tmp_path),
            "--executor", "ray", "--concurrency", "2"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (path,) = tmp_path.glob("run-*.episodes.jsonl")
    assert len(list(iter_episodes(path))) == 3
    assert "invalid tasks" in result.output
