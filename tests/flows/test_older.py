"""Older outputs (flow format 6, `Binding.back`): an argument bound from the output before the most recent one."""

from __future__ import annotations

import json

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import parse_flow, save_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import Catalog, timelines

from .builders import call, episode

TRAVEL = Catalog(
    domain="mini-travel",
    effects={"get_zipcode": "read", "estimate_distance": "read", "start_engine": "write"},
)


def _trip(eid: str, a: str, b: str) -> object:
    zips = {"Rivermist": "83214", "Stonebrook": "74532", "San Francisco": "94016", "Oakdale": "10001"}
    return episode(eid, eid, [
        ("user", f"how far is {a} from {b}?"),
        ("turn", [call("start_engine", {"mode": "START"}, {"engine": "running"})]),
        ("turn", [call("get_zipcode", {"city": a}, {"zipcode": zips[a]})]),
        ("turn", [call("get_zipcode", {"city": b}, {"zipcode": zips[b]})]),
        ("turn", [call("estimate_distance", {"cityA": zips[a], "cityB": zips[b]}, {"distance": 750.0})]),
        ("reply", "750 km"),
    ])  # fmt: skip


PAIRS = [("Rivermist", "Stonebrook"), ("San Francisco", "Rivermist"), ("Stonebrook", "Oakdale"),
         ("Oakdale", "San Francisco")]  # fmt: skip


def test_the_first_city_binds_to_the_output_before_the_newest():
    tl = timelines([_trip(f"e{i}", a, b) for i, (a, b) in enumerate(PAIRS)], TRAVEL)
    flow = learn_flow(tl, TRAVEL, learn_from_all=True, older=True)
    assert flow.format == 6
    first, second = (
        flow.tools["estimate_distance"].bindings["cityA"],
        flow.tools["estimate_distance"].bindings["cityB"],
    )
    assert (first.source, first.path, first.back, first.agree, first.n) == (
        "get_zipcode",
        "$.zipcode",
        1,
        4,
        4,
    )
    assert (second.back, second.agree) == (0, 4)
    # Without the option the first city binds to the newest output, which never agrees: it stays unbound.
    plain = learn_flow(tl, TRAVEL, learn_from_all=True)
    assert plain.format != 6 and "cityA" not in plain.tools["estimate_distance"].bindings


def test_the_replay_looks_the_distance_up_once_both_cities_are_in_view():
    train = timelines([_trip(f"e{i}", a, b) for i, (a, b) in enumerate(PAIRS)], TRAVEL)
    flow = learn_flow(train, TRAVEL, learn_from_all=True, older=True)
    test = timelines([_trip("t", "Rivermist", "San Francisco")], TRAVEL)
    r = replay(test, Decider(flow, "reach", 0.3), weigh_all=True)
    made = [x for x in r.log if x.made and x.tool == "estimate_distance"]
    assert [x.arguments for x in made] == [{"cityA": "83214", "cityB": "94016"}]
    assert r.saved == 1 and r.detours == 0


def test_format_6_bindings_round_trip_and_older_formats_may_not_bind_back(tmp_path):
    tl = timelines([_trip(f"e{i}", a, b) for i, (a, b) in enumerate(PAIRS)], TRAVEL)
    raw = json.loads(
        save_flow(learn_flow(tl, TRAVEL, learn_from_all=True, older=True), tmp_path / "f.json").read_text()
    )
    assert raw["tools"]["estimate_distance"]["bindings"]["cityA"]["back"] == 1
    assert "back" not in raw["tools"]["estimate_distance"]["bindings"]["cityB"]
    assert parse_flow(raw).tools["estimate_distance"].bindings["cityA"].back == 1
    raw["format"] = 5
    with pytest.raises(BadInputError, match="format 6"):
        parse_flow(raw)
