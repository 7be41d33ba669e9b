"""Record bindings (format 5): a read's arguments bound together from ONE record of an earlier output."""

from __future__ import annotations

import json

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.crossval import BINDINGS, choose_flow
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import load_flow, save_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import timelines
from toolshift.flows.values import records_at

from .builders import AIRLINE, call, episode

LEGS = [
    {"origin": "JFK", "destination": "SEA", "date": "2024-05-01"},
    {"origin": "SEA", "destination": "LAX", "date": "2024-05-03"},
    {"origin": "LAX", "destination": "JFK", "date": "2024-05-05"},
]


def legs(i: int) -> list[dict[str, str]]:
    """Three legs per task, each task its own cities and dates (so no value recurs across tasks)."""
    return [{k: f"{v}{i}" for k, v in leg.items()} for leg in LEGS]


def searches(eid: str, task: str, flights: list[dict[str, str]], searched: int) -> object:
    """The agent reads a reservation (its legs listed), then searches the first `searched` legs in order."""
    steps: list[tuple] = [
        ("user", "change my trip"),
        ("turn", [call("get_reservation_details", {"reservation_id": "R"}, {"id": "R", "flights": flights})]),
    ]
    for leg in flights[:searched]:
        args = {"origin": leg["origin"], "destination": leg["destination"], "date": leg["date"]}
        steps.append(("turn", [call("search_flights", args, [{"flight": "HAT1", **args}])]))
    steps.append(("reply", "done"))
    return episode(eid, task, steps)


def corpus():
    return timelines([searches(f"e{i}", f"t{i}", legs(i), 3) for i in range(6)], AIRLINE)


def test_records_at_keeps_each_objects_fields_together():
    data = {"flights": [*LEGS, {"origin": "X"}], "origin": "top"}
    assert records_at(data, "$.flights[*]", ("origin", "date")) == [
        ("JFK", "2024-05-01"),
        ("SEA", "2024-05-03"),
        ("LAX", "2024-05-05"),
    ]
    assert records_at(data, "$", ("origin",)) == [("top",)]
    assert records_at(data, "$.missing[*]", ("origin",)) == []


def test_learned_record_binds_the_three_fields_of_one_leg():
    flow = learn_flow(corpus(), AIRLINE, records=True)
    assert flow.format == 5
    record = flow.tools["search_flights"].record
    assert record is not None
    assert (record.source, record.path) == ("get_reservation_details", "$.flights[*]")
    assert record.fields == {"origin": "origin", "destination": "destination", "date": "date"}
    assert record.agree == record.n == 18
    assert flow.tools["search_flights"].bindings == {} and flow.tools["search_flights"].unbound == []
    # Without --records the same runs give a format-2 flow whose fields bind one by one.
    assert learn_flow(corpus(), AIRLINE).format in (1, 2)


def test_decider_proposes_one_legs_fields_then_the_next_leg():
    flow = learn_flow(corpus(), AIRLINE, records=True)
    session = Decider(flow, "reach", 0.0, AIRLINE).session()
    flights = legs(9)
    out = session.after_call(
        "get_reservation_details", {"reservation_id": "R"}, json.dumps({"flights": flights})
    )
    search = [lk for lk in out if lk.tool == "search_flights"]
    assert len(search) == 1 and search[0].arguments == flights[0]
    # The agent searched the first leg itself: the record binder moves to the second leg, every field with it.
    out = session.after_call("search_flights", flights[0], json.dumps([{"flight": "HAT1"}]))
    search = [lk for lk in out if lk.tool == "search_flights"]
    assert [lk.arguments for lk in search] == [flights[1]]


def test_record_walk_counts_how_far_the_agent_searches_the_legs():
    runs = [searches(f"a{i}", f"t{i}", legs(i), 1) for i in range(4)]
    runs += [searches(f"b{i}", f"t{4 + i}", legs(4 + i), 3) for i in range(4)]
    flow = learn_flow(timelines(runs, AIRLINE), AIRLINE, records=True, walk_ranks=3)
    walk = flow.tools["search_flights"].walk
    assert walk is not None and walk.argument == "date+destination+origin"
    after_search = walk.sites["search_flights"]
    # One leg searched: the second follows in the four full walks only.
    assert (after_search[1].n, after_search[1].reach) == (8, 4)
    # The replay of a full walk on those flows saves the second and third searches with a record walk.
    tl = timelines([searches("x", "tx", legs(20), 3)], AIRLINE)
    result = replay(tl, Decider(flow, "reach", 0.3, AIRLINE))
    assert result.saved >= 2 and result.detours == 0


def test_replay_with_records_saves_what_field_by_field_binding_cannot():
    train, test = corpus(), timelines([searches("x", "tx", legs(30), 3)], AIRLINE)
    with_records = replay(test, Decider(learn_flow(train, AIRLINE, records=True), "reach", 0.3, AIRLINE))
    alone = replay(test, Decider(learn_flow(train, AIRLINE), "reach", 0.3, AIRLINE))
    assert with_records.saved == 3 and with_records.detours == 0
    assert alone.saved < with_records.saved


def test_format_5_round_trips_and_older_formats_refuse_records(tmp_path):
    flow = learn_flow(corpus(), AIRLINE, records=True)
    path = save_flow(flow, tmp_path / "f.json")
    assert load_flow(path, AIRLINE) == flow
    raw = json.loads(path.read_text())
    raw["format"] = 4
    (tmp_path / "g.json").write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="format 5") as err:
        load_flow(tmp_path / "g.json")
    assert err.value.field == "format"
    raw["format"] = 5
    raw["tools"]["search_flights"]["record"]["agree"] = 99
    (tmp_path / "h.json").write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="agree"):
        load_flow(tmp_path / "h.json")
    # A flow without records is written exactly as before: no `record` key.
    plain = save_flow(learn_flow(corpus(), AIRLINE), tmp_path / "p.json")
    assert all("record" not in t for t in json.loads(plain.read_text())["tools"].values())


def test_choose_flow_tries_every_binding_option_and_keeps_one_only_when_it_cross_validates_better():
    tried: dict = {}
    _, sel, every = choose_flow(corpus(), AIRLINE, max_detours=0.5, folds=3, tried=tried)
    assert set(tried) == {(e, *o) for e in (False, True) for o in BINDINGS}

    def mean(s):
        return sum(b.share_of_ceiling for b in s.best.values()) / 2

    best = max(mean(s) for s in tried.values())
    chosen = (every, sel.records, sel.ints, sel.fallbacks)
    assert mean(tried[chosen]) == best
    # Ties go to the successful runs, then to fewer options: here field-by-field binding saves as much.
    order = [(e, *o) for e in (False, True) for o in BINDINGS]
    assert chosen == min((k for k, s in tried.items() if mean(s) == best), key=order.index)


def orders(eid: str, task: str, ids: list[int], opened: int) -> object:
    """The agent lists its orders (integer ids), then reads the first `opened` of them by id."""
    steps: list[tuple] = [
        ("user", "my orders"),
        ("turn", [call("search_tasks", {}, {"order_ids": ids, "count": len(ids)})]),
    ]
    for i in ids[:opened]:
        steps.append(("turn", [call("get_user_details", {"user_id": i}, {"id": i, "total": 7})]))
    steps.append(("reply", "done"))
    return episode(eid, task, steps)


def test_integer_ids_bind_only_with_ints_and_make_format_5():
    runs = timelines([orders(f"o{i}", f"t{i}", [100 + 10 * i, 101 + 10 * i], 2) for i in range(5)], AIRLINE)
    plain = learn_flow(runs, AIRLINE)
    assert plain.tools["get_user_details"].unbound == ["user_id"] and not plain.ints
    flow = learn_flow(runs, AIRLINE, ints=True)
    assert flow.format == 5 and flow.ints
    binding = flow.tools["get_user_details"].bindings["user_id"]
    assert (binding.source, binding.path, binding.agree) == ("search_tasks", "$.order_ids[*]", 10)
    # The replay reads both ids in order, from the listing (the count beside it is never taken for an id).
    test = timelines([orders("x", "tx", [7, 8], 2)], AIRLINE)
    result = replay(test, Decider(flow, "reach", 0.3, AIRLINE))
    assert result.saved == 2 and result.detours == 0
    assert replay(test, Decider(plain, "reach", 0.3, AIRLINE)).saved == 0


def test_ints_in_an_older_format_are_refused(tmp_path):
    runs = timelines([orders(f"o{i}", f"t{i}", [100 + i], 1) for i in range(3)], AIRLINE)
    path = save_flow(learn_flow(runs, AIRLINE, ints=True), tmp_path / "f.json")
    assert load_flow(path).ints
    raw = json.loads(path.read_text())
    raw["format"] = 3
    (tmp_path / "g.json").write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="integers") as err:
        load_flow(tmp_path / "g.json")
    assert err.value.field == "ints"
    # A flow learned without --ints is written without the key, as before.
    assert "ints" not in json.loads(save_flow(learn_flow(runs, AIRLINE), tmp_path / "p.json").read_text())


def two_sources(eid: str, task: str, i: int, via_user: bool) -> object:
    """The agent reads a reservation's id from the user's record, or (half the runs) from a cancellation."""
    rid = f"R{i}"
    first = (
        call("get_user_details", {"user_id": "u"}, {"reservations": [rid]})
        if via_user
        else call("cancel_reservation", {"reservation_id": "X"}, {"rebooked": rid})
    )
    steps: list[tuple] = [
        ("user", "hi"),
        ("turn", [first]),
        ("turn", [call("get_reservation_details", {"reservation_id": rid}, {"id": rid})]),
        ("reply", "done"),
    ]
    return episode(eid, task, steps)


def test_fallback_source_binds_when_the_bindings_own_is_not_in_view():
    runs = timelines([two_sources(f"e{i}", f"t{i}", i, via_user=i % 3 != 0) for i in range(9)], AIRLINE)
    plain = learn_flow(runs, AIRLINE)
    flow = learn_flow(runs, AIRLINE, fallbacks=True)
    binding = flow.tools["get_reservation_details"].bindings["reservation_id"]
    assert (binding.source, binding.path) == ("get_user_details", "$.reservations[*]")
    (alt,) = flow.tools["get_reservation_details"].fallbacks["reservation_id"]
    assert (alt.source, alt.path, alt.agree) == ("cancel_reservation", "$.rebooked", 3)
    assert flow.format == 5 and not plain.tools["get_reservation_details"].fallbacks
    test = timelines([two_sources("x", "tx", 50, via_user=False)], AIRLINE)
    assert replay(test, Decider(plain, "reach", 0.1, AIRLINE)).saved == 0
    assert replay(test, Decider(flow, "reach", 0.1, AIRLINE)).saved == 1
    # Scored with the fallback's own chance: the lookup after a cancellation is weighed at that chance's share.
    session = Decider(flow, "reach", 0.0, AIRLINE).session()
    (lookup,) = session.after_call(
        "cancel_reservation", {"reservation_id": "X"}, json.dumps({"rebooked": "Q"})
    )
    habit = flow.sites["cancel_reservation"]
    expected = habit.reach["get_reservation_details"] / habit.occurrences * alt.chance
    assert lookup.arguments == {"reservation_id": "Q"} and lookup.score == pytest.approx(expected)


def test_fallbacks_round_trip_and_an_older_format_refuses_them(tmp_path):
    runs = timelines([two_sources(f"e{i}", f"t{i}", i, via_user=i % 3 != 0) for i in range(9)], AIRLINE)
    flow = learn_flow(runs, AIRLINE, fallbacks=True)
    path = save_flow(flow, tmp_path / "f.json")
    assert load_flow(path, AIRLINE) == flow
    raw = json.loads(path.read_text())
    raw["format"] = 2
    (tmp_path / "g.json").write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="fallback"):
        load_flow(tmp_path / "g.json")
    plain = json.loads(save_flow(learn_flow(runs, AIRLINE), tmp_path / "p.json").read_text())
    assert all("fallbacks" not in t for t in plain["tools"].values())
