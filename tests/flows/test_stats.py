"""Statistics and pricing: calibration metrics, bootstrap intervals over tasks, θ*, calls to unlisted tools."""

from __future__ import annotations

import numpy as np
import pytest

from toolshift.errors import BadInputError
from toolshift.flows.calibration import auc, calibrate, expected_calibration_error
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.pricing import Price, detour_cost, saved_turn_value, value_replay
from toolshift.flows.replay import replay
from toolshift.flows.statistics import saved_difference, saved_share
from toolshift.flows.timeline import Unlisted, timelines
from toolshift.intervals import bootstrap_ratio, paired_ratio_difference

from .builders import AIRLINE, call, episode, user_walk


def test_calibration_metrics():
    scores = np.array([0.1, 0.1, 0.9, 0.9])
    used = np.array([0.0, 0.0, 1.0, 1.0])
    assert expected_calibration_error(scores, used) == pytest.approx(0.1)
    assert auc(scores, used) == 1.0
    assert auc(np.array([0.5, 0.5]), np.array([1.0, 0.0])) == 0.5
    assert auc(scores, np.ones(4)) is None
    c = calibrate([0.1, 0.1, 0.9, 0.9], [False, False, True, True])
    assert c.brier == pytest.approx(0.01) and c.used_rate == 0.5


def test_bootstrap_ratio_and_paired_difference():
    num, den = [1, 2, 3, 0], [10, 10, 10, 10]
    interval = bootstrap_ratio(num, den, seed=1)
    assert interval.mean == pytest.approx(0.15) and interval.low <= 0.15 <= interval.high and interval.n == 4
    assert bootstrap_ratio(num, den, seed=1) == interval
    same = paired_ratio_difference(num, num, den)
    assert (same.mean, same.low, same.high) == (0.0, 0.0, 0.0)


def test_replay_intervals_cluster_by_task():
    tl = timelines([user_walk(f"e{i}", f"t{i % 3}", f"u{i}", ["A", "B"]) for i in range(9)], AIRLINE)
    flow = learn_flow(tl, AIRLINE)
    reach, step = (replay(tl, Decider(flow, k, 0.3)) for k in ("reach", "next-step"))
    share = saved_share(reach)
    assert share.n == 3 and share.mean == pytest.approx(reach.saved / reach.turns)
    diff = saved_difference(reach, step)
    assert diff.mean == pytest.approx((reach.saved - step.saved) / reach.turns)


def test_pricing():
    assert Price.parse("5,0.1,1.25") == Price(5, 0.1, 1.25)
    with pytest.raises(BadInputError):
        Price.parse("5,0.1")
    with pytest.raises(BadInputError):
        Price.parse("-1,1,1")
    # A detour's result is written once and read in every later LLM turn.
    assert detour_cost(100, 3, Price(0, 1, 1)) == 300
    assert detour_cost(100, 3, Price(5, 0.1, 1.25)) == pytest.approx(125 + 20)
    assert detour_cost(100, 0, Price()) == 0
    tl = timelines([user_walk(f"e{i}", f"t{i}", f"u{i}", ["A", "B"]) for i in range(4)], AIRLINE)
    t = tl[0]
    assert t.tokens_estimated
    value = saved_turn_value(t, 2, Price(0, 1, 1))
    assert value == pytest.approx(t.turn_prompt_tokens[2])
    cached = saved_turn_value(t, 2, Price(0, 0.1, 1))
    assert cached == pytest.approx(
        t.turn_prompt_tokens[1] * 0.1 + t.turn_prompt_tokens[2] - t.turn_prompt_tokens[1]
    )
    result = replay(tl, Decider(learn_flow(tl, AIRLINE), "reach", 0.3))
    v = value_replay(result, tl, Price())
    assert v.beta > 0 and 0 <= v.theta_star < 1
    assert v.utility == pytest.approx(v.saved_value - v.detour_cost)


def test_calls_to_tools_missing_from_the_catalog_are_neither_and_their_episodes_stay():
    good = user_walk("g", "t1", "u", ["A"])
    made_up = episode("b", "t2", [
        ("turn", [call("get_user_details", {"user_id": "u"}, {"reservations": ["A"]})]),
        ("turn", [call("teleport", {"to": "moon"}, "ok")]), ("turn", [call("teleport", {}, "")]),
        ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"})]),
    ])  # fmt: skip
    unlisted = Unlisted()
    kept = timelines([good, made_up], AIRLINE, unlisted)
    assert [t.episode_id for t in kept] == ["g", "b"]
    assert [c.effect for c in kept[1].calls] == ["read", "neither", "neither", "read"]
    assert unlisted.episodes == 1 and unlisted.by_tool == {"teleport": 2}
    assert "teleport (2)" in unlisted.describe() and "neither" in unlisted.describe()
    # A made-up call is no write: the read after it is still reached from the first read.
    flow = learn_flow(kept, AIRLINE, unlisted=unlisted)
    assert flow.sites["get_user_details"].reach.get("get_reservation_details") == 2
    assert flow.learned_from.unlisted == {"teleport": 2}
