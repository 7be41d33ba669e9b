"""Solver attempts: judged by the world, resumed attempt by attempt, and abandoned from outside when they block."""

from __future__ import annotations

import time

import pytest

from toolshift.agents.chat import ModelReply
from toolshift.evolve import solver as solver_module
from toolshift.evolve.engine import Engine
from toolshift.evolve.solver import SolverConfig, attempt_record, solve
from toolshift.evolve.store import EvolveConfig, RunStore
from toolshift.evolve.verify import verify
from toolshift.traces.store import iter_episodes

from .builders import spec_of


class BlockingAgent:
    """A measuring instrument for timeouts: its model call blocks its thread (no await), so the episode's own
    asyncio timeout cannot fire; only the deadline enforced from outside ends the attempt."""

    name = "blocking"

    async def complete(self, messages, tools):
        time.sleep(6)
        return ModelReply(text="done")


def test_the_noisy_oracle_is_judged_by_the_world(tmp_path, cancel):
    verified = verify("x", "clinic", spec_of(cancel))
    episodes = solve(
        verified, SolverConfig(model="noisy-oracle:0.5", attempts=12), tmp_path / "x.episodes.jsonl"
    )
    records = [attempt_record(e, verified.task, False) for e in episodes]
    assert [r.trial for r in records] == list(range(12))
    assert {r.success for r in records} == {True, False}
    for r, e in zip(records, episodes, strict=True):
        # success is exactly Δgold ⊆ Δagent on the world the episode changed
        made = {(c.table, c.key, c.field, c.after) for c in e.world_diff}
        assert r.success == (("appointment", "APT-00003", "status", "cancelled") in made)
        assert r.tool_calls == (2 if r.success else 1)


def test_attempts_already_made_are_not_made_again(tmp_path, cancel):
    verified = verify("x", "clinic", spec_of(cancel))
    path = tmp_path / "x.episodes.jsonl"
    solve(verified, SolverConfig(model="noisy-oracle:0.5", attempts=3), path)
    first = [e.id for e in iter_episodes(path)]
    solve(verified, SolverConfig(model="noisy-oracle:0.5", attempts=5), path)
    ids = [e.id for e in iter_episodes(path)]
    assert ids[:3] == first and len(ids) == 5 == len(set(ids))


@pytest.mark.timeout(120)
def test_a_blocked_attempt_is_abandoned_by_the_outside_deadline(tmp_path, cancel, monkeypatch):
    monkeypatch.setattr(solver_module, "_agent", lambda config, run, task, trial: BlockingAgent())
    config = EvolveConfig(
        generations=0, solver=SolverConfig(model="noisy-oracle:1", attempts=2, episode_timeout=1.0)
    )
    store = RunStore(tmp_path / "run")
    store.create(config, [cancel])
    record = Engine(store, config).run()[0]
    assert record.status == "rejected" and record.stage == "solve"
    assert record.reason == "only 0 of 2 attempts were judged (timeout (harness): 2)"
    episodes = list(iter_episodes(store.episodes_path(cancel.id)))
    assert all("did not finish within" in e.outcome.info["hung"] for e in episodes)
