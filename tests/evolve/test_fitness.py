"""The six fitness functions against values worked out by hand, and the feasibility gate."""

from __future__ import annotations

import math

import pytest

from toolshift.evolve.fitness import METRICS, metrics, score, target_difficulty


def test_the_bell_is_one_at_half_and_a_tenth_at_the_ends():
    assert target_difficulty(0.5) == 1.0
    assert target_difficulty(0.0) == pytest.approx(0.1)
    assert target_difficulty(1.0) == pytest.approx(0.1)
    # exp(-4 ln10 * 0.2^2) = 10^(-0.16)
    assert target_difficulty(0.3) == pytest.approx(10**-0.16)
    assert target_difficulty(0.7) == pytest.approx(10**-0.16)


@pytest.mark.parametrize(
    ("c", "length", "expected"),
    [
        # c = 0.5, L = 3: bell 1, c(1-c) 0.25, both bands hold, bonus 3
        (0.5, 3.0, (1.0, 0.25, 3.0, 3.0, 0.75, 3.0)),
        # c = 0.3, L = 4: bell 10^-0.16 ≈ 0.6918, c(1-c) = 0.21, relaxed band holds (edge), strict does not
        (0.3, 4.0, (10**-0.16, 0.21, 4.0, 0.0, 0.84, 4 * 10**-0.16)),
        # c = 0.6, L = 0.5: the bonus is max(1, L) = 1; 0.6 is inside the strict band (edge)
        (0.6, 0.5, (10**-0.04, 0.24, 1.0, 1.0, 0.24, 10**-0.04)),
        # c = 0.7, L = 2: relaxed edge holds, strict fails
        (0.7, 2.0, (10**-0.16, 0.21, 2.0, 0.0, 0.42, 2 * 10**-0.16)),
        # c = 0: nothing but the bell's floor of 0.1 (times the bonus 1)
        (0.0, 0.0, (0.1, 0.0, 0.0, 0.0, 0.0, 0.1)),
        # c = 1, L = 5: bell 0.1, c(1-c) 0, outside both bands; L × bell = 0.5
        (1.0, 5.0, (0.1, 0.0, 0.0, 0.0, 0.0, 0.5)),
        # c = 0.2, L = 6: bell 10^-0.36 ≈ 0.4365, c(1-c) 0.16, outside both bands
        (0.2, 6.0, (10**-0.36, 0.16, 0.0, 0.0, 0.96, 6 * 10**-0.36)),
    ],
)
def test_the_six_metrics(c, length, expected):
    got = metrics(c, length)
    assert list(got) == list(METRICS)
    for name, value in zip(METRICS, expected, strict=True):
        assert got[name] == pytest.approx(value), name


def test_rates_from_ten_attempts_hit_the_band_edges_exactly():
    for k, inside_relaxed, inside_strict in [
        (3, True, False),
        (4, True, True),
        (6, True, True),
        (7, True, False),
        (8, False, False),
    ]:
        fit = score([1.0] * k + [0.0] * (10 - k), [True] * k + [False] * (10 - k), [2.0] * k)
        assert (fit.raw["length_x_relaxed_band"] > 0) == inside_relaxed, k
        assert (fit.raw["length_x_strict_band"] > 0) == inside_strict, k


def test_length_counts_successful_attempts_only():
    fit = score([1.0, 0.0, 1.0, 0.0], [True, False, True, False], [2.0, 4.0])
    assert fit.completion == 0.5
    assert fit.length == 3.0
    assert fit.raw["length_x_target_difficulty"] == pytest.approx(3.0)
    assert fit.variance == pytest.approx(0.25)


def test_an_infeasible_task_scores_nothing():
    """No perfect attempt: the raw metrics are kept, but selection sees zeros."""
    fit = score([0.5, 0.5], [False, False], [])
    assert fit.completion == 0.5 and not fit.feasible
    assert fit.raw["target_difficulty"] == 1.0
    assert fit.scores == dict.fromkeys(METRICS, 0.0)
    assert fit.mean == 0.0


def test_partial_credit_variance_is_the_population_variance():
    fit = score([1.0, 0.5, 0.0], [True, False, False], [3.0])
    assert fit.completion == pytest.approx(0.5)
    assert fit.variance == pytest.approx((0.25 + 0 + 0.25) / 3)
    assert math.isclose(fit.mean, sum(fit.raw.values()) / 6)


def test_a_rate_outside_zero_one_is_an_error():
    with pytest.raises(ValueError):
        metrics(1.5, 1.0)
