"""Parent and inspiration sampling: global and local bests, seeded, checked on random archives."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.evolve.archive import (
    Mutation,
    ProgramRecord,
    choose_inspirations,
    choose_parent,
    global_best,
    local_bests,
    rankings,
)
from toolshift.evolve.fitness import METRICS, score


def _record(i: int, root: str, k: int, n: int, length: float, evaluated: bool = True) -> ProgramRecord:
    fit = score([1.0] * k + [0.0] * (n - k), [True] * k + [False] * (n - k), [length] * k)
    return ProgramRecord(
        id=f"p{i:03d}", root=root, domain="clinic", mutation=Mutation(proposer="seed"),
        status="evaluated" if evaluated else "rejected", completion=fit.completion, length=fit.length,
        metrics=fit.raw, feasible=fit.feasible, variance=fit.variance,
    )  # fmt: skip


_rows = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 10), st.floats(0, 8), st.booleans()),
    min_size=1,
    max_size=25,
)


def _archive(rows) -> list[ProgramRecord]:
    return [_record(i, root, k, 10, length, evaluated) for i, (root, k, length, evaluated) in enumerate(rows)]


@settings(deadline=None, max_examples=150)
@given(rows=_rows, seed=st.integers(0, 10**6), k=st.integers(0, 7))
def test_inspirations_are_distinct_evaluated_bests(rows, seed, k):
    archive = _archive(rows)
    parent = archive[0]
    chosen = choose_inspirations(archive, parent, random.Random(seed), k)
    pool = [r for r in archive if r.evaluated and r.id != parent.id]
    ids = [r.id for r, _ in chosen]
    assert len(ids) == len(set(ids)) == min(k, len(pool))
    assert parent.id not in ids
    ranks = rankings(pool)
    for r, source in chosen:
        assert r.evaluated
        ranking = ranks["mean" if source == "global" else source.removeprefix("local:")]
        # each draw takes the next best of its ranking, so nothing is deeper in it than k
        assert [x.id for x in ranking].index(r.id) < k
    again = choose_inspirations(archive, parent, random.Random(seed), k)
    assert [r.id for r, _ in again] == ids


@settings(deadline=None, max_examples=150)
@given(rows=_rows, seed=st.integers(0, 10**6))
def test_a_parent_is_a_global_or_local_best_of_its_lineage(rows, seed):
    archive = _archive(rows)
    for root in {r.root for r in archive if r.evaluated}:
        parent, why = choose_parent(archive, root, random.Random(seed), explore=0.0)
        lineage = [r for r in archive if r.root == root and r.evaluated]
        assert parent in lineage
        feasible = [r for r in lineage if r.feasible]
        if not feasible:
            assert why.startswith("explore")
            continue
        bests = {global_best(feasible).id} | {r.id for r in local_bests(feasible).values()}
        assert parent.id in bests
        if why == "global best":
            assert parent.mean == max(r.mean for r in feasible)
        else:
            metric = why.removeprefix("local best (").removesuffix(")")
            assert metric in METRICS
            assert parent.scores[metric] == max(r.scores[metric] for r in feasible)


def test_both_kinds_of_best_are_chosen_over_many_steps():
    archive = [_record(0, "a", 5, 10, 1.0), _record(1, "a", 3, 10, 7.0), _record(2, "a", 10, 10, 9.0)]
    whys = {choose_parent(archive, "a", random.Random(s), explore=0.0)[1].split(" (")[0] for s in range(200)}
    assert whys == {"global best", "local best"}
    picks = {choose_parent(archive, "a", random.Random(s), explore=0.0)[0].id for s in range(200)}
    # c = 0.5 is the global best; c = 0.3 with L = 7 wins the length-weighted metrics
    assert picks == {"p000", "p001"}


def test_rejected_and_infeasible_programs_rank_last():
    archive = [
        _record(0, "a", 0, 10, 0.0),
        _record(1, "a", 5, 10, 2.0, evaluated=False),
        _record(2, "a", 9, 10, 1.0),
    ]
    assert global_best(archive).id == "p002"
    chosen = choose_inspirations(archive, archive[2], random.Random(1), 5)
    assert [r.id for r, _ in chosen] == ["p000"]
