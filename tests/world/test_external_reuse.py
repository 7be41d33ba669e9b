"""What fresh BFCL worlds share (D151) changes no result: clones, kept views and the shared initial snapshot."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")

from toolshift.world.external import bfcl
from toolshift.world.external.objects import ObjectWorld, view_changes

ENTRIES = [
    f"multi_turn_{c}_{i}"
    for c in ("base", "long_context", "miss_func", "miss_param")
    for i in range(0, 200, 13)
]


def _gold(entry_id):
    e = bfcl.entry(entry_id)
    return [bfcl.parse_call(text, e) for turn in e.ground_truth for text in turn]


class Uncached(ObjectWorld):
    """The world before D151: every call views the objects before and after, snapshots copy by deepcopy."""

    def call(self, name, args=None):  # type: ignore[no-untyped-def]
        self._view = None
        return super().call(name, args)

    def snapshot(self):  # type: ignore[no-untyped-def]
        from toolshift.world.external.objects import ObjectSnapshot

        state = bfcl.BfclState(copy.deepcopy(self._state.instances))  # type: ignore[attr-defined]
        return ObjectSnapshot(self.name, self._state.view(), state)


@pytest.mark.parametrize("entry_id", ENTRIES)
def test_gold_replay_is_the_same_on_a_pickled_clone_with_kept_views(entry_id):
    domain = bfcl.load_domain(entry_id)
    fresh, old = (
        ObjectWorld(domain),
        Uncached(domain, state=bfcl.BfclState(copy.deepcopy(domain._loaded().instances))),
    )
    assert fresh._state.view() == old._state.view() == domain.initial_snapshot().view
    before_fresh, before_old = fresh.snapshot(), old.snapshot()
    assert before_fresh.view == before_old.view
    for name, args in _gold(entry_id):
        a, b = fresh.call(name, args), old.call(name, args)
        assert (a.ok, a.result, a.error, a.changes) == (b.ok, b.result, b.error, b.changes)
    assert fresh.changes_since(before_fresh) == old.changes_since(before_old)
    assert fresh._state.view() == old._state.view()
    # The shared snapshot restores the initial state and was not changed by the episode.
    fresh.restore(before_fresh)
    assert fresh.changes_since(before_old) == [] and domain.initial_snapshot().view == before_old.view


def test_reading_state_from_outside_drops_the_kept_view():
    world = ObjectWorld(bfcl.load_domain("multi_turn_base_0"))
    before = world.snapshot()
    fs = world.state.instances["GorillaFileSystem"]  # type: ignore[attr-defined]
    fs._current_dir.contents.clear()  # what an outside reader may do to the objects
    assert world.changes_since(before) == view_changes(before.view, world.state.view()) != []
    # A touched world no longer snapshots as the shared initial one.
    assert world.snapshot().view != before.view


def test_clone_gives_independent_objects():
    state = bfcl.load_domain("multi_turn_base_0").fresh_state()
    other = state.clone()
    assert other.view() == state.view()
    assert other.instances["GorillaFileSystem"] is not state.instances["GorillaFileSystem"]  # type: ignore[attr-defined]
    other.instances["GorillaFileSystem"].root.contents.clear()  # type: ignore[attr-defined]
    assert other.view() != state.view()
