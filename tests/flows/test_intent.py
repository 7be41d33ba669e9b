"""Intent words: the catalog's vocabulary, matching a user's words, recalibration per site × intent, chosen on
training tasks; and k-fold cross-validation by task."""

from __future__ import annotations

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.calibration import Isotonic, SiteCalibrator
from toolshift.flows.crossval import crossval, task_folds
from toolshift.flows.decide import Decider
from toolshift.flows.intent import (
    IntentCalibrator,
    IntentMatcher,
    episode_intent_key,
    fit_intent_calibrator,
    intent_vocabulary,
    name_words,
)
from toolshift.flows.learn import learn_flow
from toolshift.flows.perdecision import choose_rule
from toolshift.flows.pricing import Price
from toolshift.flows.replay import replay
from toolshift.flows.rule import Rule, load_rule, save_rule
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, call, episode


def test_the_vocabulary_is_the_write_tools_name_words_no_read_tool_shares():
    assert name_words("update_reservation_baggages") == ["update", "reservation", "baggages"]
    assert name_words("GorillaFileSystem.cd") == []  # two letters: too short to say anything
    assert name_words("postTweet") == ["post", "tweet"]
    # cancel_reservation and toggle_airplane_mode write; get_reservation_details reads "reservation".
    assert intent_vocabulary(AIRLINE) == ("airplane", "cancel", "mode", "toggle")


def test_a_users_word_matches_a_vocabulary_word_it_starts_like():
    m = IntentMatcher(("book", "cancel", "baggages"))
    assert m.matches("I'd like a cancellation, and my Booking too") == {"cancel", "book"}
    assert m.matches("two pieces of baggage") == {"baggages"}
    assert (
        m.matches("can I bag it?") == frozenset()
    )  # "can" is no stem of "cancel"; "bag" is too short a start
    assert episode_intent_key(["hello", "cancel it"], ("book", "cancel")) == "cancel"
    assert episode_intent_key(["hello"], ("book", "cancel")) == "-"


def _requests(n: int) -> list:
    """Half the users ask to cancel (the agent then opens every reservation), half to toggle the airplane
    mode (it opens none): the site's habit, pooled, is half and half; per intent, all or nothing."""
    eps = []
    for i in range(n):
        user, rs = f"u{i}", [f"R{i}A", f"R{i}B", f"R{i}C"]
        steps: list[tuple] = [
            ("user", f"please {'cancel my trips' if i % 2 else 'toggle the airplane mode'}, I am {user}"),
            ("turn", [call("get_user_details", {"user_id": user}, {"user_id": user, "reservations": rs})]),
        ]
        if i % 2:
            steps += [("turn", [call("get_reservation_details", {"reservation_id": r}, {"reservation_id": r})])
                      for r in rs]  # fmt: skip
        steps.append(("reply", "done"))
        eps.append(episode(f"e{i}", str(i), steps))
    return timelines(eps, AIRLINE)


def test_the_session_carries_the_requests_intent_into_the_log():
    tl = _requests(4)
    flow = learn_flow(tl, AIRLINE)
    log = replay(tl, Decider(flow, "reach", 0.3, intents=intent_vocabulary(AIRLINE)), weigh_all=True).log
    by_task = {x.task: x.intent for x in log}
    assert by_task == {"0": "airplane+mode+toggle", "1": "cancel", "2": "airplane+mode+toggle", "3": "cancel"}
    # Without a vocabulary the session matches nothing (as before).
    assert {x.intent for x in replay(tl, Decider(flow, "reach", 0.3), weigh_all=True).log} == {""}


def test_conditioning_on_intent_keeps_the_savings_and_drops_the_detours():
    tl = _requests(40)
    choice = choose_rule(tl, AIRLINE, walk_ranks=0, price=Price(), deciders=("reach",), thetas=(0.3,),
                         lams=(1.0,), folds=8)  # fmt: skip
    assert choice.folds == 8 and choice.vocabulary == intent_vocabulary(AIRLINE)
    cand = {(c.family, c.reread): c for c in choice.candidates}
    plain, site, by_intent = (cand[(f, True)] for f in ("θ", "θ, recalibrated", "θ, recalibrated by intent"))
    assert by_intent.saved >= site.saved and by_intent.saved > 0
    assert by_intent.detours < min(plain.detours, site.detours) or plain.detours == 0
    assert choice.intent_calibrator["reach"].by_intent  # fitted maps per site × intent
    # Overall, the family with the largest share within the budget wins (ties: fewer detours, simpler family).
    within = [c for c in choice.best.values() if c.decider == "reach"]
    top = max(within, key=lambda c: (c.share_of_ceiling, -c.detours_per_episode))
    assert choice.best[("reach", choice.overall("reach"))].share_of_ceiling == top.share_of_ceiling


def test_an_intent_calibrator_falls_back_to_the_site_and_round_trips(tmp_path):
    base = SiteCalibrator(
        Isotonic((0.0, 1.0), (0.1, 0.2)), {"a|agent|0-2": Isotonic((0.0, 1.0), (0.3, 0.3))}, 1
    )
    cal = IntentCalibrator(base, {"a|agent|0-2#cancel": Isotonic((0.0, 1.0), (0.9, 0.9))})
    assert cal("a|agent|0-2", 0.5, "cancel") == pytest.approx(0.9)
    assert cal("a|agent|0-2", 0.5, "book") == pytest.approx(0.3)  # no map for that intent: the site's
    assert cal("a|agent|0-2", 0.5, "") == pytest.approx(0.3)  # no user words seen: the site's
    assert cal("b|agent|0-2", 0.0, "cancel") == pytest.approx(0.1)  # no map for the site: the global one
    rule = Rule("theta", theta=0.4, calibrator=cal, intent=("book", "cancel"))
    back, _ = load_rule(save_rule(rule, "reach", tmp_path / "r.json"))
    assert back == rule and "and intent" in back.label()
    raw = (tmp_path / "r.json").read_text().replace('"intent": [\n  "book",\n  "cancel"\n ]', '"intent": []')
    (tmp_path / "bad.json").write_text(raw)
    with pytest.raises(BadInputError, match="intent"):
        load_rule(tmp_path / "bad.json")
    fitted = fit_intent_calibrator([("s", "cancel", 0.5, True)] * 3 + [("s", "-", 0.5, False)] * 3, 3)
    assert fitted("s", 0.5, "cancel") > fitted("s", 0.5, "-")


def test_k_fold_by_task_deals_sorted_tasks_round_robin():
    assert task_folds(["c", "a", "b", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    assert task_folds(["b", "a"]) == [["a"], ["b"]] == task_folds(["a", "b"], 5)
    with pytest.raises(BadInputError):
        task_folds(["a", "b", "c"], 1)
    tl = _requests(9)
    cv = crossval(tl, AIRLINE, walk_ranks=(0,), thetas=(0.3,), deciders=("reach",), folds=3)
    assert cv.folds == 3 and cv.episodes == 9
