"""The incremental decider: thresholds, never a write, never one already answered since the last write."""

from __future__ import annotations

from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, user_walk


def flow():
    return learn_flow(
        timelines([user_walk(f"e{i}", f"t{i}", f"u{i}", ["A", "B"]) for i in range(4)], AIRLINE), AIRLINE
    )


def test_proposes_the_bound_lookup_after_the_call():
    session = Decider(flow(), "next-step", 0.3, AIRLINE).session()
    lookups = session.after_call("get_user_details", {"user_id": "u9"}, '{"reservations": ["X", "Y"]}')
    assert [(lk.tool, lk.arguments) for lk in lookups] == [
        ("get_reservation_details", {"reservation_id": "X"})
    ]
    assert 0.3 <= lookups[0].score <= 1
    # The chain: after X's result, the next unopened reservation, scored with its parent's score.
    chained = session.after_lookup(lookups[0], '{"id": "X"}')
    assert [lk.arguments for lk in chained] == [{"reservation_id": "Y"}]
    assert 0.3 <= chained[0].score < lookups[0].score


def test_threshold_above_every_score_proposes_nothing():
    session = Decider(flow(), "reach", 1.01, AIRLINE).session()
    assert session.after_call("get_user_details", {"user_id": "u"}, '{"reservations": ["X"]}') == []


def test_never_one_already_answered_since_the_last_write():
    d = Decider(flow(), "reach", 0.3, AIRLINE)
    session = d.session()
    session.after_call("get_reservation_details", {"reservation_id": "X"}, '{"id": "X"}')
    assert session.after_call("get_user_details", {"user_id": "u"}, '{"reservations": ["X"]}') == []
    session.after_call("cancel_reservation", {"reservation_id": "X"}, "ok")
    again = session.propose("get_user_details")
    assert [lk.arguments for lk in again] == [{"reservation_id": "X"}]
    # Another party's write does not reset what is answered.
    session.observe_call("toggle_airplane_mode", {}, "ok", effect="write", by_agent=False)
    assert session.propose("get_user_details") == []


def test_never_a_write():
    d = Decider(flow(), "reach", 0.0, AIRLINE)
    session = d.session()
    for tool in ("get_user_details", "cancel_reservation", "<user>", "<start>"):
        for lk in session.weigh(tool, weigh_all=True):
            assert AIRLINE.effects[lk.tool] == "read"


def test_without_rereads_a_read_already_in_context_is_not_proposed_after_a_write():
    for reread, expected in ((True, [{"reservation_id": "X"}]), (False, [])):
        session = Decider(flow(), "reach", 0.3, AIRLINE, reread=reread).session()
        session.after_call("get_reservation_details", {"reservation_id": "X"}, '{"id": "X"}')
        session.after_call("cancel_reservation", {"reservation_id": "X"}, "ok")
        session.observe_call("get_user_details", {"user_id": "u"}, {"reservations": ["X"]}, effect="read")
        assert [lk.arguments for lk in session.propose("get_user_details")] == expected
