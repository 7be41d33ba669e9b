"""The ceiling's rule and its counts with the user's words and constants; repeated reads."""

from __future__ import annotations

from toolshift.flows.ceiling import anatomy, episode_anatomy, repeated_reads
from toolshift.flows.timeline import build_timeline, timelines

from .builders import AIRLINE, call, episode


def test_ceiling_rule():
    t = build_timeline(episode("x", "t", [
        ("user", "I am u7, flying to LAX"),
        ("turn", [call("get_user_details", {"user_id": "u7"}, {"reservations": ["A"]})]),  # before any response
        ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"})]),  # from a result
        ("turn", [call("search_flights", {"destination": "LAX"}, [])]),  # the user's words
        ("turn", [call("list_all_airports", {}, [])]),  # no arguments
        ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"}),
                  call("cancel_reservation", {"reservation_id": "A"}, "ok")]),  # a write turn
        ("reply", "done"),
    ]), AIRLINE)  # fmt: skip
    a = episode_anatomy(t)
    assert (a.turns, a.replies, a.write_turns, a.read_turns) == (6, 1, 1, 4)
    assert a.ceiling == 2 and a.ceiling_turns["x"] == [1, 3]
    assert a.with_words == 3


def test_constants_count():
    eps = [episode(f"e{i}", f"t{i}", [
        ("turn", [call("get_user_details", {"user_id": f"u{i}"}, {"x": 1})]),
        ("turn", [call("search_flights", {"cabin": "economy"}, [])])]) for i in range(2)]  # fmt: skip
    total, _ = anatomy(timelines(eps, AIRLINE))
    assert total.ceiling == 0 and total.with_constants == 2


def test_repeated_reads():
    t = build_timeline(episode("x", "t", [
        ("turn", [call("get_user_details", {"user_id": "u"}, {})]),
        ("turn", [call("get_user_details", {"user_id": "u"}, {})]),
        ("turn", [call("cancel_reservation", {"reservation_id": "A"}, "ok")]),
        ("turn", [call("get_user_details", {"user_id": "u"}, {})]),
    ]), AIRLINE)  # fmt: skip
    r = repeated_reads([t])["a"]
    assert (r.reads, r.repeated) == (3, 1)
