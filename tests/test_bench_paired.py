"""bench/paired.py, the pairing every ratio in bench/ goes through: its order, its percentiles, its load record, and who uses it.

No timing is asserted: the sides under test report their own `Sample`s, so every figure is exact.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import paired  # noqa: E402
from paired import Paired, Sample, interleave, interleave_async, measure, percentile  # noqa: E402


def logging_side(log: list[tuple[str, object]], name: str, cost: dict[object, float] | None = None):
    def side(item: object) -> Sample | None:
        log.append((name, item))
        return None if cost is None else Sample(wall=cost[item], cpu=cost[item] / 2)

    return side


def test_interleave_runs_a_then_b_on_each_item_round_after_round():
    log: list[tuple[str, object]] = []
    run = interleave(logging_side(log, "A"), logging_side(log, "B"), ["x", "y", "z"], rounds=2)
    expected = [(side, item) for _ in range(2) for item in "xyz" for side in "AB"]
    assert log == expected
    assert len(run.a_samples) == len(run.b_samples) == 6


def test_interleave_async_keeps_the_same_order():
    log: list[tuple[str, object]] = []

    def async_side(name: str):
        async def side(item: object) -> None:
            log.append((name, item))

        return side

    asyncio.run(interleave_async(async_side("A"), async_side("B"), [1, 2], rounds=3))
    assert log == [(side, item) for _ in range(3) for item in (1, 2) for side in "AB"]


def test_a_sample_a_side_measured_itself_is_kept_and_other_return_values_are_timed_here():
    cost_a = {0: 1.0, 1: 3.0, 2: 2.0}
    cost_b = {0: 10.0, 1: 30.0, 2: 20.0}
    run = interleave(logging_side([], "A", cost_a), logging_side([], "B", cost_b), [0, 1, 2])
    assert run.values("a") == [1.0, 3.0, 2.0]
    assert run.values("b", "cpu") == [5.0, 15.0, 10.0]
    timed = interleave(lambda _: {"a result": 1}, lambda _: 42, [0])  # not Samples: timed by the pairing
    assert all(
        isinstance(s, Sample) and s.wall >= 0 and s.cpu >= 0 for s in timed.a_samples + timed.b_samples
    )
    assert len(measure(lambda _: "ignored", [0, 1], rounds=2)) == 4


def test_percentiles_are_linear_between_closest_ranks_as_documented():
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.9) == pytest.approx(3.7)  # h = 3 · 0.9 = 2.7: 3 + 0.7 · (4 − 3)
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.9) == pytest.approx(3.7)  # order of the samples does not matter
    assert percentile([5.0], 0.9) == 5.0
    assert percentile([1.0, 9.0], 0.0) == 1.0
    assert percentile([1.0, 9.0], 1.0) == 9.0
    with pytest.raises(ValueError):
        percentile([], 0.5)
    with pytest.raises(ValueError):
        percentile([1.0], 1.5)


@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=2, max_size=60))
def test_percentiles_agree_with_the_standard_librarys_inclusive_quantiles(values):
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    assert percentile(values, 0.5) == pytest.approx(statistics.median(values), rel=1e-9, abs=1e-9)
    assert percentile(values, 0.9) == pytest.approx(deciles[8], rel=1e-9, abs=1e-9)


def test_ratios_are_of_percentiles_b_over_a_and_the_load_is_read_at_start_and_end(monkeypatch):
    loads = iter([(3.5, 0.0, 0.0), (7.25, 0.0, 0.0)])
    monkeypatch.setattr(paired.os, "getloadavg", lambda: next(loads))
    a = {i: float(i + 1) for i in range(10)}  # 1 … 10
    b = {i: 4 * float(i + 1) if i < 9 else 100.0 for i in range(10)}  # 4 … 36, then 100
    run = interleave(
        logging_side([], "A", a), logging_side([], "B", b), list(range(10)), names=("ours", "theirs")
    )
    assert (run.load_start, run.load_end) == (3.5, 7.25)
    assert run.ratio(0.5) == pytest.approx(percentile(list(b.values()), 0.5) / 5.5) == pytest.approx(4.0)
    assert run.ratio(0.9) == pytest.approx(
        percentile(list(b.values()), 0.9) / percentile(list(a.values()), 0.9)
    )
    assert run.ratio(0.5, "cpu") == pytest.approx(4.0)
    rows = dict((figure, value) for figure, value, _ in run.rows("work", scale=1, unit="s"))
    assert rows["work: theirs / ours, p50/p50 · p90/p90"] == f"{run.ratio(0.5):.2f}× · {run.ratio(0.9):.2f}×"
    assert rows["work: ours, p50 / p90"] == f"{5.5:.3f} / {percentile(list(a.values()), 0.9):.3f} s"
    assert rows["work: pairs; load average (1 min) at start → end"] == "10; 3.50 → 7.25"
    assert "3.50 at start, 7.25 at end" in run.note()


def test_a_pairing_needs_work_on_both_sides():
    with pytest.raises(ValueError):
        interleave(lambda _: None, lambda _: None, [])
    with pytest.raises(ValueError):
        interleave(lambda _: None, lambda _: None, [1], rounds=0)
    assert Paired("a", "b").a_samples == []


RATIO_MARKERS = re.compile(r"\bratios?\b|\}×|\bfaster\b|\bslower\b|p50/p50")
PERCENTILE_HELPERS = re.compile(
    r"def (pct|percentile|median_ms|quantile)\b|statistics\.quantiles|int\(0\.\d+ \*"
)
USES_PAIRED = re.compile(r"^from paired import .*\b(interleave|interleave_async)\b", re.M)
KNOWN_RATIO_SCRIPTS = {
    "bench_agents_runner.py",  # Ray vs local, the same batch of episodes
    "bench_fileio.py",  # loads_json vs json.loads, the same text
    "bench_gateway.py",  # through the gateway vs the backend directly, the same call
    "bench_tau2_side_by_side.py",  # our full episode vs τ²-bench's; our replay vs τ-bench v1's
    "bench_world_actions.py",  # this tree vs a baseline tree, the same gold paths
    "bench_world_mcp.py",  # over MCP vs World.call, the same call
}


def scripts() -> dict[str, str]:
    return {
        p.name: p.read_text(encoding="utf-8") for p in sorted(BENCH.glob("*.py")) if p.name != "paired.py"
    }


def test_every_bench_script_that_prints_a_ratio_pairs_its_sides_through_paired():
    found = scripts()
    printing = {
        name for name, text in found.items() if RATIO_MARKERS.search(text) or USES_PAIRED.search(text)
    }
    assert printing >= KNOWN_RATIO_SCRIPTS  # the markers still see every ratio script known today
    unpaired = sorted(name for name in printing if not USES_PAIRED.search(found[name]))
    assert unpaired == [], (
        f"these bench scripts print a ratio without bench/paired.py's interleave: {unpaired}"
    )


def test_no_bench_script_computes_its_own_percentiles():
    own = sorted(name for name, text in scripts().items() if PERCENTILE_HELPERS.search(text))
    assert own == [], f"percentiles belong to bench/paired.py (one definition): {own}"


def test_the_readmes_ratios_are_the_headline_ratios_of_docs_benchmarks():
    root = BENCH.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    log = (root / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    headline = log.split("## Headline ratios (current)", 1)[1].split("\n### ", 1)[0]
    claimed = re.findall(r"\d+(?:\.\d+)?×", readme)
    assert claimed, "the README states no ratio"
    table = set(re.findall(r"\d+(?:\.\d+)?×", headline))
    assert [c for c in claimed if c not in table] == []
