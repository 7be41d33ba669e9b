"""A diff from a snapshot of this world's epoch compares the touched rows only (D153), and equals the full diff."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_diff_property import calls

from toolshift.world import World, load_domain


def full(world: World, snap) -> list:  # type: ignore[no-untyped-def]
    """The diff comparing every row: a snapshot against a snapshot never takes the touched rows' path."""
    now = world.snapshot()
    try:
        return world.diff(snap, now)
    finally:
        now.close()


steps = st.one_of(calls, st.just(("<snapshot>", {})), st.just(("<restore>", {})))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(steps, min_size=1, max_size=30), st.integers(0, 5))
def test_every_snapshot_diffs_as_the_full_diff_through_snapshots_and_restores(clinic_domain, sequence, pick):
    world = World(clinic_domain)
    snaps = [world.snapshot()]
    for name, args in sequence:
        if name == "<snapshot>":
            snaps.append(world.snapshot())
        elif name == "<restore>":
            world.restore(snaps[pick % len(snaps)])
        else:
            world.call(name, args)
        for snap in snaps:
            assert world.changes_since(snap) == full(world, snap)


def test_a_snapshot_of_an_earlier_epoch_takes_the_full_diff(clinic_domain):
    world = World(clinic_domain)
    first = world.snapshot()
    world.call("update_patient", {"patient_id": "PAT-00001", "phone": "1"})
    second = world.snapshot()
    world.restore(first)  # back to `first`: what changed before `second` is no longer among the touched rows
    world.call("update_patient", {"patient_id": "PAT-00002", "phone": "2"})
    assert second._epoch != world._epoch and first._epoch == world._epoch
    assert {c.key for c in world.changes_since(second)} == {"PAT-00001", "PAT-00002"}
    assert world.changes_since(second) == full(world, second)
    assert [c.key for c in world.changes_since(first)] == ["PAT-00002"]


def test_tau2_airline_gold_paths_diff_as_the_full_diff():
    from toolshift.world.tau2.domains import tau2_world
    from toolshift.world.tau2.tasks import import_tasks

    if tau2_world("tau2-airline").unavailable() is not None:
        import pytest

        pytest.skip("τ² airline data unavailable")
    world = World(load_domain("tau2-airline"))
    start = world.snapshot()
    changed = 0
    for task in import_tasks("tau2-airline").tasks[:25]:
        world.restore(start)
        for g in task.gold_path:
            world.call(g.tool, g.arguments)
        fast = world.changes_since(start)
        assert fast == full(world, start)
        changed += bool(fast)
    assert changed > 10
