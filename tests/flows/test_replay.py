"""Replay from the record: exactness, detours, the saved-turn rule, other parties' writes, the decision log."""

from __future__ import annotations

import json

from toolshift.flows.decide import Decider, DecisionSession
from toolshift.flows.learn import learn_flow
from toolshift.flows.replay import replay, replay_episode
from toolshift.flows.timeline import build_timeline, timelines

from .builders import AIRLINE, call, episode, user_walk

USER = {"reservations": ["A", "B"]}


def flow(theta: float = 0.3, kind: str = "next-step"):
    learned = learn_flow(timelines([user_walk(f"e{i}", f"t{i}", f"u{i}", ["A", "B"]) for i in range(4)], AIRLINE),
                         AIRLINE)  # fmt: skip
    return Decider(learned, kind, theta, AIRLINE)


def one(steps):
    return build_timeline(episode("x", "tx", steps), AIRLINE)


def test_exact_lookup_saves_the_turn():
    t = one([("user", "hi u"), ("turn", [call("get_user_details", {"user_id": "u"}, USER)]),
             ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"})]), ("reply", "done")])  # fmt: skip
    result, _ = replay_episode(t, flow())
    assert result.saved_turns == [1]
    # The chain then reads B (the agent reads the next reservation half the time here): a detour.
    assert (result.lookups_made, result.lookups_used, result.detours) == (2, 1, 1)


def test_a_write_between_makes_it_a_detour_even_if_the_call_comes_later():
    t = one([("turn", [call("get_user_details", {"user_id": "u"}, USER)]),
             ("turn", [call("cancel_reservation", {"reservation_id": "Z"}, "ok")]),
             ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"})])])  # fmt: skip
    result, log = replay_episode(t, flow(), weigh_all=True)
    assert result.saved_turns == []
    made = [row for row in log if row.made]
    assert made[0].detour and not made[0].used and made[0].arguments == {"reservation_id": "A"}
    assert result.detours >= 1


def test_detour_is_answered_with_the_nearest_result_of_the_same_tool(monkeypatch):
    # The agent reads B only; a lookup of A is a detour answered with B's recorded result, whose shape
    # (no reservations list) lets no further lookup bind.
    t = one([("turn", [call("get_user_details", {"user_id": "u"}, USER)]),
             ("turn", [call("think", {"thought": "t"}, "")]),
             ("turn", [call("get_reservation_details", {"reservation_id": "B"}, {"id": "B", "user_id": "u"})])])  # fmt: skip
    session_seen = []
    observe = DecisionSession.observe_lookup
    monkeypatch.setattr(DecisionSession, "observe_lookup",
                        lambda self, lookup, output: (session_seen.append(output), observe(self, lookup, output))[1])  # fmt: skip
    result, _ = replay_episode(t, flow())
    assert result.detours == 1 and session_seen[0] == {"id": "B", "user_id": "u"}


def test_a_turn_is_saved_only_when_every_call_in_it_was_answered():
    t = one([("turn", [call("get_user_details", {"user_id": "u"}, USER)]),
             ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"}),
                       call("search_flights", {"origin": "JFK"}, [])])])  # fmt: skip
    result, _ = replay_episode(t, flow())
    assert result.lookups_used == 1 and result.answered_calls == 1
    assert result.saved_turns == []


def test_other_parties_writes_do_not_stop_a_lookup():
    t = one([("turn", [call("get_user_details", {"user_id": "u"}, USER)]),
             ("user_calls", [call("toggle_airplane_mode", {}, "ok")]),
             ("turn", [call("get_reservation_details", {"reservation_id": "A"}, {"id": "A"})])])  # fmt: skip
    result, _ = replay_episode(t, flow())
    assert result.saved_turns == [1]


def test_decision_log_rows_and_explore_is_deterministic():
    tl = [build_timeline(user_walk(f"e{i}", f"t{i}", f"u{i}", ["A", "B", "C"]), AIRLINE) for i in range(3)]
    logged = replay(tl, flow(0.3, "reach"), weigh_all=True)
    assert logged.log and all(0 <= row.score <= 1 for row in logged.log)
    assert {row.made for row in logged.log} == {True, False} or all(row.made for row in logged.log)
    a = replay(tl, flow(0.99, "reach"), explore=0.5, seed=3)
    b = replay(tl, flow(0.99, "reach"), explore=0.5, seed=3)
    assert json.dumps(a.summary()) == json.dumps(b.summary()) and len(a.log) == len(b.log)
    assert a.made > 0
    assert replay(tl, flow(0.99, "reach")).made == 0
