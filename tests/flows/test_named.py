"""Named walks (flow format 7): a listing value the user names is walked first, and those decisions counted apart."""

from __future__ import annotations

import json

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.crossval import choose_flow
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import load_flow, parse_flow, save_flow
from toolshift.flows.named import named_state, said_tokens
from toolshift.flows.replay import replay
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, call, episode

LISTING = ["R1AAAA", "R2BBBB", "R3CCCC"]


def _user(user: str) -> object:
    return call("get_user_details", {"user_id": user}, {"user_id": user, "reservations": LISTING})


def _reservation(r: str) -> object:
    return call("get_reservation_details", {"reservation_id": r}, {"reservation_id": r, "status": "ok"})


def named_one(eid: str, task: str, which: str) -> object:
    """The user names one reservation: the agent reads the user, then only that reservation."""
    return episode(eid, task, [
        ("user", f"hi, I am u{task}; please cancel reservation {which.lower()}."),
        ("turn", [_user(f"u{task}")]),
        ("turn", [_reservation(which)]),
        ("reply", "it is cancellable"),
    ])  # fmt: skip


def walks_all(eid: str, task: str) -> object:
    """The user names none: the agent reads the user, then every reservation in turn."""
    return episode(eid, task, [
        ("user", f"hi, I am u{task}; which of my trips is soonest?"),
        ("turn", [_user(f"u{task}")]),
        *[("turn", [_reservation(r)]) for r in LISTING],
        ("reply", "the first"),
    ])  # fmt: skip


def corpus() -> list:
    eps = []
    for i in range(6):
        eps.append(named_one(f"n{i}", f"n{i}", LISTING[1 + i % 2]))
        eps.append(walks_all(f"w{i}", f"w{i}"))
    return timelines(eps, AIRLINE)


def test_a_value_is_named_when_it_is_one_of_the_users_tokens():
    tokens = said_tokens("Cancel R2bbbb, please; order 12446.")
    assert named_state(LISTING, set(), tokens) == (0, "R2BBBB")
    assert named_state(LISTING, {"R2BBBB"}, tokens) == (1, "R1AAAA")  # named ones passed: the walk's own pick
    assert named_state([12446, 7], set(), tokens) == (0, 12446)
    assert named_state(LISTING, set(), said_tokens("cancel R2BBB")) is None  # a prefix is no name
    assert named_state(LISTING, set(), frozenset()) is None


def test_named_walks_are_counted_apart_from_the_plain_walk():
    tl = corpus()
    flow = learn_flow(tl, AIRLINE, learn_from_all=True, walk_ranks=3, named=True)
    assert flow.format == 7
    walk = flow.tools["get_reservation_details"].walk
    assert walk is not None
    after_user = walk.named["get_user_details"][0]  # a named value not yet passed: the agent reads it next
    assert (after_user.n, after_user.next, after_user.reach) == (6, 6, 6)
    after_named = walk.named["get_reservation_details"][1]  # every named value passed: the agent stops
    assert (after_named.n, after_named.reach) == (6, 0)
    # The plain walk over the decisions whose listing the user named nothing of: the agent always goes on.
    plain = walk.unnamed["get_reservation_details"]
    assert [(c.n, c.reach) for c in plain[1:]] == [(6, 6), (12, 6)]  # rank 2 or more: R3, then none left
    # `sites` still counts every decision (what a reader without user messages scores by).
    assert walk.sites["get_reservation_details"][1].n == 12
    assert learn_flow(tl, AIRLINE, learn_from_all=True, walk_ranks=3).format == 3


def test_the_replay_takes_the_named_value_and_stops_after_it():
    tl = corpus()
    train, held = tl[2:], tl[:2]  # held: one episode that names R2BBBB, one that walks all
    named = learn_flow(train, AIRLINE, learn_from_all=True, walk_ranks=3, named=True)
    plain = learn_flow(train, AIRLINE, learn_from_all=True, walk_ranks=3)
    with_names = replay(held, Decider(named, "reach", 0.5), weigh_all=True)
    without = replay(held, Decider(plain, "reach", 0.5), weigh_all=True)
    made = [(x.episode, x.arguments["reservation_id"]) for x in with_names.log if x.made]
    assert made[0] == ("n0", "R2BBBB") and ("n0", "R1AAAA") not in made
    n0 = {e.episode: e for e in with_names.episodes}["n0"]
    assert (len(n0.saved_turns), n0.detours) == (1, 0)
    # The format-3 walk passes R1AAAA first where the user named R2BBBB, and walks on after it.
    plain_n0 = {e.episode: e for e in without.episodes}["n0"]
    assert plain_n0.detours > 0 and with_names.detours < without.detours


def test_without_user_messages_a_named_walk_scores_as_the_plain_walk():
    flow = learn_flow(corpus(), AIRLINE, learn_from_all=True, walk_ranks=3, named=True)
    stripped = flow.model_copy(
        update={
            "tools": {
                n: t.model_copy(update={"walk": t.walk.model_copy(update={"named": {}, "unnamed": {}})})
                if t.walk
                else t
                for n, t in flow.tools.items()
            }
        }
    )
    a, b = Decider(flow, "reach", 0.0).session(), Decider(stripped, "reach", 0.0).session()
    out = {"user_id": "u9", "reservations": LISTING}
    first = a.after_call_value("get_user_details", {"user_id": "u9"}, out)
    second = b.after_call_value("get_user_details", {"user_id": "u9"}, out)
    assert [(lk.arguments, lk.score) for lk in first] == [(lk.arguments, lk.score) for lk in second]
    assert first and first[0].arguments == {"reservation_id": "R1AAAA"}


def test_format_7_round_trips_and_older_formats_may_not_name(tmp_path):
    flow = learn_flow(corpus(), AIRLINE, learn_from_all=True, walk_ranks=3, named=True)
    path = save_flow(flow, tmp_path / "f.json")
    assert load_flow(path, AIRLINE) == flow
    raw = json.loads(path.read_text())
    raw["format"] = 6
    with pytest.raises(BadInputError, match="format 7") as err:
        parse_flow(raw)
    assert err.value.field == "named"
    raw["format"] = 7
    raw["tools"]["get_reservation_details"]["walk"]["named"]["get_user_details"].append(
        {"n": 0, "next": 0, "reach": 0}
    )
    with pytest.raises(BadInputError, match="2 states"):
        parse_flow(raw)
    plain = learn_flow(corpus(), AIRLINE, learn_from_all=True, walk_ranks=3)
    assert "named" not in json.loads(save_flow(plain, tmp_path / "p.json").read_text())["tools"][
        "get_reservation_details"]["walk"]  # fmt: skip


def test_cross_validation_keeps_named_walks_only_where_they_save_more():
    shares: dict[str, float] = {}
    _, sel, _ = choose_flow(corpus(), AIRLINE, max_detours=0.5, verdicts=False, bindings=((False, False, False),),
                            named=shares)  # fmt: skip
    assert shares["named"] > shares["without"] and sel.named
    assert sel.options()["named"] is True


def test_the_results_page_tables_the_named_counts_only_for_a_named_flow():
    from toolshift.flows.results_named import named_walks_text

    tl = corpus()
    text = "\n".join(named_walks_text(learn_flow(tl, AIRLINE, learn_from_all=True, walk_ranks=3, named=True)))
    assert "| get_reservation_details | `get_user_details` | 6/6 (0.88) · 6/6 | — |" in text
    assert named_walks_text(learn_flow(tl, AIRLINE, learn_from_all=True, walk_ranks=3)) == []
