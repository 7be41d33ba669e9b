"""Learning: habits, required arguments, binding paths, lists, bare calls, constants, training-set rules."""

from __future__ import annotations

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import START_SITE
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, call, episode, user_walk


def walks(n: int = 6, **kw):
    return timelines(
        [user_walk(f"e{i}", f"t{i}", f"u{i}", [f"R{i}A", f"R{i}B"], **kw) for i in range(n)], AIRLINE
    )


def test_binding_path_and_laplace_score():
    flow = learn_flow(walks(), AIRLINE)
    binding = flow.tools["get_reservation_details"].bindings["reservation_id"]
    assert (binding.source, binding.path) == ("get_user_details", "$.reservations[*]")
    assert (binding.agree, binding.n) == (12, 12)
    assert binding.chance == pytest.approx(13 / 14)
    assert flow.tools["get_user_details"].unbound == ["user_id"]
    assert flow.tools["get_user_details"].binding_chance() == 0.0


def test_habits_next_step_and_reach():
    flow = learn_flow(walks(), AIRLINE)
    site = flow.sites["get_user_details"]
    assert site.occurrences == 6
    assert site.next == {"get_reservation_details": 6}
    assert site.reach == {"get_reservation_details": 6}
    # After the first reservation the agent reads the second next; after the second it reads nothing more.
    assert flow.sites["get_reservation_details"].next == {"get_reservation_details": 6}
    assert flow.sites["get_reservation_details"].occurrences == 12
    assert flow.sites[START_SITE].reach == {"get_reservation_details": 6, "get_user_details": 6}


def test_reach_stops_at_the_agents_write_not_next_step():
    steps = [
        ("user", "hi"),
        ("turn", [call("get_user_details", {"user_id": "u"}, {"reservations": ["A", "B"]})]),
        ("turn", [call("think", {"thought": "x"}, "")]),
        ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"})]),
        ("turn", [call("cancel_reservation", {"reservation_id": "A"}, "ok")]),
        ("turn", [call("get_reservation_details", {"reservation_id": "B"}, {"id": "B"})]),
    ]
    flow = learn_flow(timelines([episode("e", "t", steps)], AIRLINE), AIRLINE)
    assert flow.sites["get_user_details"].next == {}
    assert flow.sites["get_user_details"].reach == {"get_reservation_details": 1}
    assert flow.sites["think"].reach == {"get_reservation_details": 1}
    assert flow.sites["cancel_reservation"].reach == {"get_reservation_details": 1}


def test_most_recent_output_holding_the_path():
    steps = [
        ("turn", [call("get_user_details", {"user_id": "u1"}, {"reservations": ["OLD"]})]),
        ("turn", [call("get_user_details", {"user_id": "u2"}, {"reservations": ["NEW"]})]),
        ("turn", [call("get_reservation_details", {"reservation_id": "NEW"}, {"id": "NEW"})]),
    ]
    flow = learn_flow(timelines([episode("e", "t", steps)], AIRLINE), AIRLINE)
    b = flow.tools["get_reservation_details"].bindings["reservation_id"]
    assert (b.path, b.agree, b.n) == ("$.reservations[*]", 1, 1)


def test_required_means_passed_in_90_percent_of_calls():
    eps = []
    for i in range(10):
        args = {"origin": "JFK", "destination": "LAX"} | ({"date": "d"} if i < 5 else {})
        eps.append(episode(f"e{i}", f"t{i}", [("turn", [call("search_flights", args, [])])]))
    flow = learn_flow(timelines(eps, AIRLINE), AIRLINE)
    assert flow.tools["search_flights"].required == ["destination", "origin"]


def listing(i: int, names: list[str], priced: list[str]):
    return episode(f"e{i}", f"t{i}", [
        ("turn", [call("list_hotels", {}, {"hotels": [{"name": n} for n in names]})]),
        ("turn", [call("price_hotels", {"names": priced}, {n: 100 for n in priced})]),
    ])  # fmt: skip


def test_list_binding_is_format_2_and_format_1_leaves_it_out():
    eps = [listing(i, [f"H{i}", f"K{i}"], [f"H{i}", f"K{i}"]) for i in range(4)] + [
        listing(9, ["A", "B"], ["A"])
    ]
    flow = learn_flow(timelines(eps, AIRLINE), AIRLINE)
    assert flow.format == 2
    b = flow.tools["price_hotels"].lists["names"]
    assert (b.source, b.path, b.agree, b.n) == ("list_hotels", "$.hotels[*].name", 4, 5)
    flat = learn_flow(timelines(eps, AIRLINE), AIRLINE, flow_format=1)
    assert flat.format == 1 and not flat.tools["price_hotels"].lists
    assert flat.tools["price_hotels"].unbound == ["names"]


def test_bare_chance_for_searches_the_agent_narrows():
    eps = [episode(f"e{i}", f"t{i}", [("turn", [call("search_tasks", {("name" if i % 2 else "board"): "x"}, [])])])
           for i in range(8)]  # fmt: skip
    eps.append(episode("z", "tz", [("turn", [call("list_all_airports", {}, ["JFK"])])]))
    flow = learn_flow(timelines(eps, AIRLINE), AIRLINE)
    search = flow.tools["search_tasks"]
    assert search.required == [] and search.bare is not None
    assert (search.bare.bare, search.bare.calls) == (0, 8)
    assert search.binding_chance() == pytest.approx(1 / 10)
    assert flow.tools["list_all_airports"].bare is None
    assert flow.tools["list_all_airports"].binding_chance() == 1.0


def test_constants_never_a_string_with_a_digit_or_at():
    eps = [episode(f"e{i}", f"t{i}", [("turn", [call("search_flights", {
        "cabin": "economy", "code": "X1", "mail": "a@b", "limit": 50, "origin": f"o{i}"}, [])])]) for i in range(3)]  # fmt: skip
    flow = learn_flow(timelines(eps, AIRLINE), AIRLINE, constants=True)
    assert set(flow.tools["search_flights"].constants) == {"cabin", "limit"}
    assert learn_flow(timelines(eps, AIRLINE), AIRLINE).tools["search_flights"].constants == {}


def test_successful_runs_only_by_default_and_empty_training_set_is_an_error():
    failed = walks(3, success=False)
    with pytest.raises(BadInputError, match="empty training set"):
        learn_flow(failed, AIRLINE)
    assert learn_flow(failed, AIRLINE, learn_from_all=True).learned_from.episodes == 3
    mixed = walks(2) + walks(3, success=False)
    assert learn_flow(mixed, AIRLINE).learned_from.episodes == 2


def test_a_deeply_nested_tool_result_in_a_valid_episode_is_read_as_text():
    """A result nested past the JSON bounds (here 50,000 levels) is text, never a RecursionError."""
    deep = "[" * 50_000 + "]" * 50_000
    steps = [
        ("turn", [call("get_user_details", {"user_id": "u"}, deep)]),
        ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"})]),
    ]
    (timeline,) = timelines([episode("e", "t", steps)], AIRLINE)
    assert timeline.calls[0].output == deep
    flow = learn_flow([timeline], AIRLINE)
    assert flow.tools["get_reservation_details"].unbound == ["reservation_id"]
