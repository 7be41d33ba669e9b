"""The split by task: deterministic, 40% held out at fixed positions of every ten, natural id order."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from toolshift.traces.episode import Episode
from toolshift.traces.split import split_by_domain, split_tasks, task_order_key


def test_positions_of_every_ten_are_held_out():
    split = split_tasks([str(i) for i in range(30)])
    assert sorted(int(t) for t, s in split.items() if s == "test") == [
        2,
        5,
        7,
        9,
        12,
        15,
        17,
        19,
        22,
        25,
        27,
        29,
    ]


def test_numeric_ids_order_numerically():
    assert sorted(["10", "9", "100", "1"], key=task_order_key) == ["1", "9", "10", "100"]
    assert sorted(["t-10", "t-2", "s-1"], key=task_order_key) == ["s-1", "t-2", "t-10"]
    split = split_tasks([str(i) for i in range(12)])
    assert split["10"] == "train" and split["9"] == "test"


@given(st.sets(st.text(min_size=1, max_size=8), min_size=1, max_size=200), st.randoms())
def test_same_split_whatever_the_input_order(ids, rng):
    shuffled = list(ids)
    rng.shuffle(shuffled)
    assert split_tasks(shuffled) == split_tasks(sorted(ids))


@given(st.integers(1, 500))
def test_share_is_forty_percent_of_every_full_ten(n):
    split = split_tasks([f"task-{i}" for i in range(n)])
    held = sum(1 for s in split.values() if s == "test")
    full, rest = divmod(n, 10)
    assert held == 4 * full + sum(1 for p in (2, 5, 7, 9) if p < rest)


def test_adding_later_tasks_moves_no_existing_task():
    before = split_tasks([str(i) for i in range(47)])
    after = split_tasks([str(i) for i in range(80)])
    assert all(after[t] == s for t, s in before.items())


def test_split_by_domain_splits_each_domain_alone():
    rng = random.Random(0)
    eps = [
        Episode(id=f"{d}{i}{k}", task_id=str(i), domain=d)
        for d in ("a", "b")
        for i in range(20)
        for k in range(2)
    ]
    rng.shuffle(eps)
    split = split_by_domain(eps)
    assert len(split) == 40
    for d in ("a", "b"):
        assert sum(1 for (dom, _), s in split.items() if dom == d and s == "test") == 8
