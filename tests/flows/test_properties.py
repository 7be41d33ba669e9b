"""Invariants of learning and replay on generated episodes (hypothesis)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.flows.ceiling import anatomy
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import Flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, call, episode

IDS = [f"R{i}" for i in range(6)]


@st.composite
def episodes(draw, index: int = 0, words: bool = True):
    """An episode whose read arguments come from earlier results or (with `words`) the user's words."""
    seen: list[str] = []
    user_ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=2, unique=True))
    steps: list[tuple] = [("user", "ids " + " ".join(user_ids))]
    for _ in range(draw(st.integers(1, 9))):
        kind = draw(
            st.sampled_from(["user", "reply", "user_read", "res", "res", "write", "think", "pair", "other"])
        )
        listing = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
        if kind == "user":
            steps.append(("user", "and " + draw(st.sampled_from(IDS))))
        elif kind == "reply":
            steps.append(("reply", "ok"))
        elif kind == "user_read":
            steps.append(("turn", [call("get_user_details", {"user_id": "u"}, {"reservations": listing})]))
            seen += listing
        elif kind in ("res", "pair") and (seen or (words and user_ids)):
            pool = seen if seen and not (words and draw(st.booleans())) else user_ids if words else seen
            picks = [draw(st.sampled_from(pool)) for _ in range(1 if kind == "res" else 2)]
            steps.append(("turn", [call("get_reservation_details", {"reservation_id": p},
                                        {"id": p, "next": listing}) for p in picks]))  # fmt: skip
            seen += listing
        elif kind == "write":
            steps.append(
                ("turn", [call("cancel_reservation", {"reservation_id": draw(st.sampled_from(IDS))}, "ok")])
            )
        elif kind == "think":
            steps.append(("turn", [call("think", {"thought": "hm"}, "")]))
        elif kind == "other":
            steps.append(("user_calls", [call("toggle_airplane_mode", {}, "ok")]))
    return episode(f"e{index}-{len(steps)}", f"t{index}", steps, success=draw(st.booleans()))


@st.composite
def corpora(draw, words: bool = True):
    eps = [draw(episodes(i, words)) for i in range(draw(st.integers(2, 8)))]
    return [e.model_copy(update={"id": f"{e.id}#{i}"}) for i, e in enumerate(eps)]


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(corpora(), st.sampled_from(["reach", "next-step"]), st.sampled_from([0.0, 0.1, 0.3, 0.6]))
def test_saved_turns_never_exceed_the_ceiling(eps, kind, theta):
    tl = timelines(eps, AIRLINE)
    flow = learn_flow(tl, AIRLINE, learn_from_all=True)
    result = replay(tl, Decider(flow, kind, theta))
    total, per_episode = anatomy(tl)
    for e in result.episodes:
        assert len(e.saved_turns) <= per_episode[e.episode].with_words
        assert e.lookups_used + e.detours == e.lookups_made
        assert e.answered_calls == e.lookups_used
    assert result.saved <= total.with_words


@SETTINGS
@given(corpora(words=False), st.sampled_from(["reach", "next-step"]), st.sampled_from([0.0, 0.1, 0.3]))
def test_saved_turns_never_exceed_the_ceiling_when_arguments_come_from_results(eps, kind, theta):
    tl = timelines(eps, AIRLINE)
    flow = learn_flow(tl, AIRLINE, learn_from_all=True)
    result = replay(tl, Decider(flow, kind, theta))
    _, per_episode = anatomy(tl)
    for e in result.episodes:
        ceiling_turns = set(per_episode[e.episode].ceiling_turns[e.episode])
        assert set(e.saved_turns) <= ceiling_turns


@SETTINGS
@given(corpora())
def test_a_flow_that_makes_no_lookup_saves_nothing(eps):
    tl = timelines(eps, AIRLINE)
    flow = learn_flow(tl, AIRLINE, learn_from_all=True)
    for kind in ("reach", "next-step"):
        result = replay(tl, Decider(flow, kind, 1.01))
        assert (result.saved, result.made, result.detours) == (0, 0, 0)
    empty = Flow.model_validate({**flow.model_dump(), "sites": {}})
    assert replay(tl, Decider(empty, "reach", 0.0)).saved == 0


@SETTINGS
@given(corpora(), st.sampled_from([0.0, 0.2]))
def test_replay_is_deterministic_and_survives_a_round_trip(eps, theta):
    tl = timelines(eps, AIRLINE)
    flow = learn_flow(tl, AIRLINE, learn_from_all=True)
    again = Flow.model_validate_json(flow.model_dump_json())
    a = replay(tl, Decider(flow, "reach", theta), weigh_all=True)
    b = replay(tl, Decider(again, "reach", theta), weigh_all=True)
    assert json.dumps(a.summary()) == json.dumps(b.summary())
    assert [(r.tool, r.arguments, r.score, r.made) for r in a.log] == [
        (r.tool, r.arguments, r.score, r.made) for r in b.log
    ]
    assert learn_flow(tl, AIRLINE, learn_from_all=True) == flow


@SETTINGS
@given(corpora())
def test_lookups_are_reads_and_scores_are_chances(eps):
    tl = timelines(eps, AIRLINE)
    flow = learn_flow(tl, AIRLINE, learn_from_all=True)
    result = replay(tl, Decider(flow, "reach", 0.0), weigh_all=True)
    for row in result.log:
        assert AIRLINE.effects[row.tool] == "read"
        assert 0.0 <= row.score <= 1.0
