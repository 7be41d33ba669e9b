"""Asks (flow format 6): reads the user asks for by name, learned from the runs, proposed after the message."""

from __future__ import annotations

import json

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.asks import asked, message_stems
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import parse_flow, save_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import Catalog, timelines

from .builders import call, episode

CAR = Catalog(
    domain="mini-car",
    effects={"check_tire_pressure": "read", "get_fuel_level": "read", "lock_doors": "write"},
)


def _car(eid: str, task: str, *, asks_tires: bool, checks: bool) -> object:
    steps: list[tuple] = [
        ("user", "lock the doors please"),
        ("turn", [call("lock_doors", {"door": "all"}, {"locked": True})]),
        ("reply", "done"),
        ("user", "now what is my tire pressure?" if asks_tires else "thanks, what a lovely day"),
    ]
    if checks:
        steps.append(("turn", [call("check_tire_pressure", {}, {"front": 32})]))
    steps.append(("reply", "ok"))
    return episode(eid, task, steps)


def _tl(specs: list[tuple[bool, bool]]) -> list:
    return timelines([_car(f"e{i}", f"t{i}", asks_tires=a, checks=c) for i, (a, c) in enumerate(specs)], CAR)


def test_a_message_asks_for_a_read_when_it_holds_every_ask_word_by_stem():
    stems = message_stems("What are the tires' pressures?")
    assert asked(("tire", "pressure"), stems)
    assert not asked(("tire", "check"), stems)
    assert not asked((), stems)


def test_asks_are_learned_from_messages_the_agent_answered_with_the_read():
    flow = learn_flow(_tl([(True, True)] * 4 + [(True, False), (False, False)]), CAR, learn_from_all=True,
                      asks=True)  # fmt: skip
    assert flow.format == 6
    ask = flow.asks["check_tire_pressure"]
    assert set(ask.words) <= {"check", "tire", "pressure"} and "check" not in ask.words
    assert (ask.reach, ask.messages) == (4, 5)
    assert ask.chance("reach") == pytest.approx(5 / 7)
    assert "get_fuel_level" not in flow.asks  # never called: nothing to bind, nothing asked
    assert learn_flow(_tl([(True, True)] * 4), CAR, learn_from_all=True).asks == {}


def test_the_replay_makes_the_asked_read_after_the_message_and_it_saves_the_turn():
    train = _tl([(True, True)] * 4 + [(False, False)] * 6)  # after lock_doors the read follows 4 times in 10
    flow = learn_flow(train, CAR, learn_from_all=True, asks=True)
    test = _tl([(True, True), (False, False)])
    r = replay(test, Decider(flow, "reach", 0.5))
    assert (r.saved, r.detours) == (1, 0)
    # Without asks the site habit after lock_doors (4/10) stays below θ.
    plain = replay(test, Decider(learn_flow(train, CAR, learn_from_all=True), "reach", 0.5))
    assert plain.saved == 0
    # A θ above the ask's chance makes nothing.
    assert replay(test, Decider(flow, "reach", 0.9)).made == 0


def test_format_6_round_trips_and_older_formats_may_not_carry_asks(tmp_path):
    flow = learn_flow(_tl([(True, True)] * 3), CAR, learn_from_all=True, asks=True)
    path = save_flow(flow, tmp_path / "f.json")
    raw = json.loads(path.read_text())
    assert parse_flow(raw).asks == flow.asks
    raw["format"] = 5
    with pytest.raises(BadInputError, match="format 6"):
        parse_flow(raw)
    plain = save_flow(learn_flow(_tl([(True, True)] * 3), CAR, learn_from_all=True), tmp_path / "g.json")
    assert "asks" not in json.loads(plain.read_text())
