"""The evaluator's pooled replay worlds (D152) start every replay from the initial state."""

from __future__ import annotations

import pytest

from toolshift.world import World, load_domain
from toolshift.world.tau2.domains import tau2_world
from toolshift.world.tau2.evaluator import Call, _free, _replayed


@pytest.fixture
def airline_tasks():
    if tau2_world("tau2-airline").unavailable() is not None:
        pytest.skip("τ² airline data unavailable")
    from toolshift.world.tau2.tasks import import_tasks

    return [t for t in import_tasks("tau2-airline").tasks if t.expected_changes][:12]


def test_each_replay_starts_from_the_initial_state_and_ends_as_a_fresh_world_would(airline_tasks):
    spec = tau2_world("tau2-airline")
    domain = load_domain("tau2-airline")
    initial = spec.export(World(domain).conn)
    for task in airline_tasks * 2:  # the second pass reuses worlds the first one wrote on
        calls = [Call(g.tool, g.arguments) for g in task.gold_path]
        fresh = World(domain)
        expected = [fresh.call(c.name, c.arguments) for c in calls]
        with _replayed("tau2-airline", calls) as (world, changes):
            assert changes == [c for r in expected for c in r.changes] != []
            assert spec.export(world.conn) == spec.export(fresh.conn) != initial  # every record
        assert not world.conn.in_transaction
        assert spec.export(world.conn) == initial


def test_a_write_that_outlives_the_rollback_is_undone_by_a_restore(airline_tasks):
    task = airline_tasks[0]
    calls = [Call(g.tool, g.arguments) for g in task.gold_path]
    with _replayed("tau2-airline", calls) as (world, _):
        world.conn.execute("COMMIT")  # what a statement ending the transaction would do
    assert tau2_world("tau2-airline").export(world.conn) == tau2_world("tau2-airline").export(
        World(load_domain("tau2-airline")).conn
    )
    assert any(w is world for w, _ in _free["tau2-airline"])
