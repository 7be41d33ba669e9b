"""External worlds: an MCP URL (streamable HTTP) and a run killed mid-way with SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolshift.agents.loop import run_episode
from toolshift.agents.policies import oracle
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.traces.store import iter_episodes
from toolshift.world import World
from toolshift.world.mcp.serve import WorldServer, http_server_thread


def test_world_over_http_url_is_judged_from_reported_changes(tasks):
    server = WorldServer(World.load("clinic"))
    with http_server_thread(server) as url:
        opener = world_opener(url)
        for task in tasks:
            episode = asyncio.run(
                run_episode(
                    task,
                    oracle(task),
                    ScriptedUser(task.public_request, task.instruction),
                    opener,
                    episode_id="h",
                )
            )
            assert episode.outcome.success is True, episode.outcome
            assert episode.world_diff == task.expected_changes
            assert (
                "Riverside" in episode.messages[0].content
            )  # the policy arrives as the server's instructions


@pytest.mark.slow
def test_a_killed_run_loses_nothing_it_finished(tasks_file: Path, tmp_path: Path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "toolshift", "run", "--world", "clinic", "--tasks", str(tasks_file),
            "--model", "oracle", "--trials", "150", "--concurrency", "2", "--out", str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600  # a hang guard, never a speed limit
    path = None
    while time.monotonic() < deadline:
        found = list(out.glob("run-*.episodes.jsonl"))
        if found and len(found[0].read_text().splitlines()) > 20:
            path = found[0]
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    assert path is not None, "the run wrote nothing in 600 s"
    before = {e.id for e in iter_episodes(path, skip_bad=True)}
    assert 20 <= len(before) < 450
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert f"{450 - len(before)} to run, {len(before)} already done" in done.stdout.replace("\n", " ")
    after = list(iter_episodes(path))
    assert len(after) == 450 and len({e.id for e in after}) == 450
    assert before <= {e.id for e in after}
