"""The reference-path DP: it equals exhaustive search, prefers merged blocks, avoids split ones, and uses
a block only where the task allows it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.bench.reference import (
    Implementation,
    brute_force_path,
    optimal_path,
)

FUNCS = ["a", "b", "c"]


def impl(id_: str, covers: str, calls: int, cost: float) -> Implementation:
    return Implementation(
        id=id_, covers=tuple(covers), tools=tuple(f"{id_}.{k}" for k in range(calls)), cost=cost
    )


def test_merged_block_wins_on_steps_and_split_loses():
    impls = [
        impl("a1", "a", 1, 1.5),
        impl("b1", "b", 1, 1.2),
        impl("ab", "ab", 1, 2.9),
        impl("b_split", "b", 3, 0.4),
    ]
    step = optimal_path(list("abab"), impls, "step")
    cost = optimal_path(list("abab"), impls, "cost")
    assert step is not None and cost is not None
    assert step.implementation_ids == ("ab", "ab")
    assert step.steps == 2
    # on cost the cheap split of b beats the merged block
    assert cost.implementation_ids == ("a1", "b_split", "a1", "b_split")
    assert cost.cost == 3.8


def test_no_cover_is_none():
    assert optimal_path(list("abc"), [impl("a1", "a", 1, 1), impl("b1", "b", 1, 1)], "step") is None


def test_empty_sequence_is_an_empty_path():
    path = optimal_path([], [impl("a1", "a", 1, 1)], "cost")
    assert path is not None and path.blocks == () and path.cost == 0


def test_a_block_the_task_does_not_allow_is_never_used():
    impls = [impl("a1", "a", 1, 1), impl("b1", "b", 1, 1), impl("ab", "ab", 1, 1)]
    free = optimal_path(list("abab"), impls, "step")
    assert free is not None and free.implementation_ids == ("ab", "ab")
    # the merge is usable for the first a,b but not the second (its b needs what its a returns)
    path = optimal_path(list("abab"), impls, "step", lambda i, start: i.id != "ab" or start == 0)
    assert path is not None and path.implementation_ids == ("ab", "a1", "b1")
    assert optimal_path(list("ab"), [impl("ab", "ab", 1, 1)], "step", lambda i, s: False) is None


implementations = st.lists(
    st.builds(
        lambda covers, calls, cost: (covers, calls, cost),
        st.lists(st.sampled_from(FUNCS), min_size=1, max_size=3).map(tuple),
        st.integers(1, 3),
        st.integers(100, 900).map(lambda c: c / 100),
    ),
    min_size=1,
    max_size=7,
)


@settings(max_examples=300, deadline=None)
@given(
    seq=st.lists(st.sampled_from(FUNCS), min_size=0, max_size=7),
    raw=implementations,
    criterion=st.sampled_from(["step", "cost"]),
    forbidden=st.frozensets(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=6),
)
def test_dp_equals_brute_force(seq, raw, criterion, forbidden):
    impls = [
        Implementation(id=f"i{k}", covers=covers, tools=tuple(f"t{k}.{s}" for s in range(calls)), cost=cost)
        for k, (covers, calls, cost) in enumerate(raw)
    ]

    def usable(
        i: Implementation, start: int
    ) -> bool:  # some (implementation, position) pairs are not allowed
        return (int(i.id[1:]), start) not in forbidden

    dp = optimal_path(seq, impls, criterion, usable)
    bf = brute_force_path(seq, impls, criterion, usable)
    assert (dp is None) == (bf is None)
    if dp is not None and bf is not None:
        assert dp.implementation_ids == bf.implementation_ids
        assert dp.weight == bf.weight
        # a cover really covers the sequence, block after block
        assert [f for b in dp.blocks for f in b.impl.covers] == list(seq)
        assert all(b.start < b.end for b in dp.blocks)
        assert all(usable(b.impl, b.start) for b in dp.blocks)
