"""Per-site recalibration, the threshold per decision, the rule file, and choosing a rule on training tasks."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from toolshift.errors import BadInputError
from toolshift.flows.calibration import (
    Isotonic,
    SiteCalibrator,
    choose_min_count,
    fit_isotonic,
    fit_site_calibrator,
    position_bucket,
    site_key,
    site_reliability,
)
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.perdecision import FAMILIES, choose_rule
from toolshift.flows.pricing import Price
from toolshift.flows.replay import replay
from toolshift.flows.rule import Rule, learn_costs, load_rule, save_rule
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, user_walk


def _squared_error(m: Isotonic, x: list[float], y: list[float]) -> float:
    return sum((m(a) - b) ** 2 for a, b in zip(x, y, strict=True))


def test_isotonic_is_monotone_and_no_monotone_step_fits_better():
    rng = np.random.default_rng(3)
    x = [float(v) for v in rng.random(12)]
    y = [float(rng.random() < v) for v in x]
    m = fit_isotonic(x, y)
    grid = np.linspace(0, 1, 50)
    values = [m(g) for g in grid]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(values))
    # Brute force over monotone 0/1-valued step maps on the sorted points: none beats the isotonic fit.
    order = np.argsort(x)
    xs, ys = [x[i] for i in order], [y[i] for i in order]
    fitted = sum((m(a) - b) ** 2 for a, b in zip(xs, ys, strict=True))
    for cut in range(len(xs) + 1):
        step = [0.0] * cut + [1.0] * (len(xs) - cut)
        assert fitted <= sum((s - b) ** 2 for s, b in zip(step, ys, strict=True)) + 1e-9


def test_sites_and_buckets():
    assert [position_bucket(p) for p in (0, 2, 3, 5, 6, 40)] == ["0-2", "0-2", "3-5", "3-5", "6+", "6+"]
    assert site_key("get_x", 0, 4) == "get_x|agent|3-5"
    assert site_key("get_x", 2, 0) == "get_x|lookup|0-2"


def _two_sites(n: int) -> list[tuple[str, str, float, bool]]:
    """Two sites both scored 0.5: one used 90% of the time, the other 10%."""
    rows = []
    for i in range(n):
        rows.append((f"t{i % 7}", "a|agent|0-2", 0.5, i % 10 != 0))
        rows.append((f"t{i % 7}", "b|agent|0-2", 0.5, i % 10 == 0))
    return rows


def test_a_miscalibrated_site_gets_its_own_map_and_its_ece_falls():
    rows = _two_sites(100)
    m, brier = choose_min_count(rows)
    assert m < 10**6 and brier[m] < brier[10**6]
    cal = fit_site_calibrator([(s, x, u) for _, s, x, u in rows], m)
    assert cal("a|agent|0-2", 0.5) > 0.8 and cal("b|agent|0-2", 0.5) < 0.2
    rel = site_reliability([(s, x, cal(s, x), u) for _, s, x, u in rows])
    assert all(r.ece_after < 0.05 < r.ece_before for r in rel)


def test_a_site_below_the_minimum_count_keeps_the_global_map():
    rows = [(s, x, u) for _, s, x, u in _two_sites(100)] + [("c|agent|6+", 0.5, True)] * 3
    cal = fit_site_calibrator(rows, 20)
    assert "c|agent|6+" not in cal.sites
    assert cal("c|agent|6+", 0.5) == pytest.approx(cal.global_map(0.5))


def _episodes(n: int = 12):
    return timelines(
        [user_walk(f"e{i}", str(i), f"u{i}", [f"R{i}A", f"R{i}B", f"R{i}C"][: 1 + i % 3]) for i in range(n)],
        AIRLINE,
    )


def test_the_price_of_a_decision_is_higher_early_than_late():
    costs = learn_costs(_episodes(), Price())
    assert costs.turns_left[1] > costs.turns_left[3]
    tool = "get_reservation_details"
    assert costs.theta(tool, 1) > costs.theta(tool, 3)
    rule = Rule("priced", lam=1.0, costs=costs)
    assert rule.bar(tool, 1) > rule.bar(tool, 3)


def test_a_rule_decides_on_the_recalibrated_score_against_its_bar():
    tl = _episodes()
    flow = learn_flow(tl, AIRLINE)
    plain = replay(tl, Decider(flow, "reach", 0.3))
    assert plain.made > 0
    never = SiteCalibrator(Isotonic((0.0, 1.0), (0.0, 0.0)), {}, 10)
    assert replay(tl, Decider(flow, "reach", rule=Rule("theta", 0.3, calibrator=never))).made == 0
    identity = SiteCalibrator(Isotonic((0.0, 1.0), (0.0, 1.0)), {}, 10)
    same = replay(tl, Decider(flow, "reach", rule=Rule("theta", 0.3, calibrator=identity)))
    assert (same.made, same.saved, same.detours) == (plain.made, plain.saved, plain.detours)
    # A bar above every score: nothing; the log records each lookup's model score and its bar.
    costs = learn_costs(tl, Price())
    high = replay(tl, Decider(flow, "reach", rule=Rule("priced", lam=100.0, costs=costs)), weigh_all=True)
    assert high.made == 0 and high.log and all(x.bar == pytest.approx(0.98) for x in high.log)


def test_the_rule_file_round_trips_and_a_bad_one_is_refused(tmp_path):
    tl = _episodes()
    cal = fit_site_calibrator([("a|agent|0-2", 0.2, False), ("a|agent|0-2", 0.8, True)], 1)
    rule = Rule("priced", lam=1.5, calibrator=cal, costs=learn_costs(tl, Price(5, 0.1, 1.25)))
    path = save_rule(rule, "next-step", tmp_path / "r.json")
    back, decider = load_rule(path)
    assert decider == "next-step" and back == rule
    raw = json.loads(path.read_text())
    for change, field in (({"format": "toolshift.flow-rule/9"}, "format"), ({"lam": -1}, "lam"),
                          ({"costs": None}, "costs")):  # fmt: skip
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(raw | change))
        with pytest.raises(BadInputError) as err:
            load_rule(bad)
        assert field in str(err.value)


def test_choose_rule_reads_only_the_tasks_it_is_given():
    tl = _episodes(12)
    choice = choose_rule(tl, AIRLINE, walk_ranks=0, price=Price(), deciders=("reach",), thetas=(0.3,),
                         lams=(1.0,))  # fmt: skip
    assert choice.folds == 12 and {t for t, *_ in choice.oof["reach"]} <= {t.task_id for t in tl}
    assert {c.family for c in choice.candidates} == set(FAMILIES)
    assert all(c.ceiling == choice.candidates[0].ceiling for c in choice.candidates)
    rule = choice.rule("reach", FAMILIES[-1])
    assert rule.kind == "priced" and rule.calibrator is not None
