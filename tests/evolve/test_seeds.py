"""Seed sets: a build's sample by domain and by ground-truth length; bad call counts are one-line bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolshift.errors import BadInputError
from toolshift.evolve.seeds import parse_calls, sample_build


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    from toolshift.bench.build import build_domain, write_manifest

    out = tmp_path_factory.mktemp("build")
    build_domain(out, "clinic", seed=0, per_domain=8)
    write_manifest(out, ["clinic"], seed=0, per_domain=8)
    return out


def test_call_counts_are_numbers_and_ranges():
    assert parse_calls("1,5-7") == {1, 5, 6, 7}
    assert parse_calls(" 3 ") == {3}
    for bad in ("", "x", "5-3", "0", "1-65", "2-"):
        with pytest.raises(BadInputError, match="calls"):
            parse_calls(bad)


def test_the_sample_keeps_only_the_lengths_asked_for(build: Path):
    from toolshift.bench.build import load_tasks

    every = load_tasks(build)
    lengths = sorted({len(t.gold_path) for t in every})
    assert len(lengths) >= 2, lengths  # the filter must have something to leave out
    short = lengths[0]
    picked = sample_build(build, 100, calls={short})
    assert picked and {len(t.gold_path) for t in picked} == {short}
    assert {t.id for t in picked} == {t.id for t in every if len(t.gold_path) == short}
    assert sample_build(build, 1, calls={short}, seed=3) == sample_build(build, 1, calls={short}, seed=3)
    with pytest.raises(BadInputError, match="no tasks"):
        sample_build(build, 1, calls={64})
