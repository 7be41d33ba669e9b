"""Walks (format 3): per site and rank, how far the agent goes through a listing; and their cross-validation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolshift.errors import BadInputError
from toolshift.flows.crossval import Crossval, CrossvalRow, choose_flow, crossval
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import Flow, RankCount, Walk, load_flow, save_flow, with_walk_prior
from toolshift.flows.outputs import listing_rank
from toolshift.flows.replay import replay
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, call, episode
from .test_properties import SETTINGS, corpora


def opens(eid: str, task: str, listing: list[str], opened: int) -> object:
    """The agent reads the user (who lists `listing`), then the first `opened` reservations, then replies."""
    steps: list[tuple] = [
        ("user", "hi"),
        ("turn", [call("get_user_details", {"user_id": "u"}, {"reservations": listing})]),
    ]
    for r in listing[:opened]:
        steps.append(("turn", [call("get_reservation_details", {"reservation_id": r}, {"id": r})]))
    steps.append(("reply", "done"))
    return episode(eid, task, steps)


def corpus():
    """Two agents' habits in one: half the runs open one reservation of three, half walk all three."""
    eps = [opens(f"one{i}", f"t{i}", [f"A{i}", f"B{i}", f"C{i}"], 1) for i in range(4)]
    eps += [opens(f"all{i}", f"t{4 + i}", [f"D{i}", f"E{i}", f"F{i}"], 3) for i in range(4)]
    return timelines(eps, AIRLINE)


def test_walk_counts_per_site_and_rank():
    flow = learn_flow(corpus(), AIRLINE, walk_ranks=3)
    assert flow.format == 3
    walk = flow.tools["get_reservation_details"].walk
    assert walk is not None and walk.argument == "reservation_id"
    after_user = walk.sites["get_user_details"]
    assert (after_user[0].n, after_user[0].next, after_user[0].reach) == (8, 8, 8)
    after_res = walk.sites["get_reservation_details"]
    # One opened: the next is opened in the four walks, not in the four single reads.
    assert (after_res[1].n, after_res[1].reach, after_res[1].next) == (8, 4, 4)
    # Two opened (only the walks get there): the third always follows; after all three, nothing left to open.
    assert (after_res[2].n, after_res[2].reach) == (8, 4)


def test_walk_chance_replaces_the_pooled_habit_and_chains_multiply():
    flow = learn_flow(corpus(), AIRLINE, walk_ranks=3)
    session = Decider(flow, "reach", 0.0, AIRLINE).session()
    first = session.after_call("get_user_details", {"user_id": "u"}, '{"reservations": ["X", "Y", "Z"]}')
    assert [(lk.arguments, round(lk.score, 4)) for lk in first] == [
        ({"reservation_id": "X"}, round(9 / 10, 4))
    ]
    second = session.after_lookup(first[0], '{"id": "X"}')
    assert [lk.arguments for lk in second] == [{"reservation_id": "Y"}]
    assert second[0].score == pytest.approx(0.9 * (4 + 1) / (8 + 2))
    third = session.after_lookup(second[0], '{"id": "Y"}')
    assert third[0].arguments == {"reservation_id": "Z"}
    assert third[0].score == pytest.approx(0.9 * 0.5 * (4 + 1) / (8 + 2))


def test_where_training_never_saw_the_site_the_format_2_score_holds():
    tl = corpus()
    walked = learn_flow(tl, AIRLINE, walk_ranks=2)
    plain = learn_flow(tl, AIRLINE)
    d_walk, d_plain = Decider(walked, "reach", 0.0, AIRLINE), Decider(plain, "reach", 0.0, AIRLINE)
    compiled = d_walk._tools["get_reservation_details"]
    # `<user>` was never a walk site in training: the walk falls back to site chance × binding chance.
    habit = plain.sites["<user>"]
    expected = habit.reach.get("get_reservation_details", 0) / habit.occurrences * compiled.chance
    assert d_walk.walk_score("<user>", compiled, 0) == pytest.approx(expected)
    assert [(s, c.tool) for s, c in d_plain.candidates("<user>", weigh_all=True)] == (
        [(expected, "get_reservation_details")] if expected else []
    )


def test_walk_ranks_bucket_the_last_rank_and_zero_leaves_the_flow_as_before():
    tl = corpus()
    one = learn_flow(tl, AIRLINE, walk_ranks=1).tools["get_reservation_details"].walk
    assert one is not None and all(len(row) == 1 for row in one.sites.values())
    assert one.sites["get_reservation_details"][0].n == 16
    plain = learn_flow(tl, AIRLINE)
    assert plain.format == 1 and all(t.walk is None for t in plain.tools.values())
    assert learn_flow(tl, AIRLINE, walk_ranks=3, flow_format=1) == plain
    with pytest.raises(BadInputError, match="walk ranks"):
        learn_flow(tl, AIRLINE, walk_ranks=-1)


def test_format_3_round_trip_and_older_formats_refuse_walks(tmp_path):
    tl = corpus()
    flow = learn_flow(tl, AIRLINE, walk_ranks=3)
    path = save_flow(flow, tmp_path / "walk.json")
    assert load_flow(path, AIRLINE) == flow
    plain_path = save_flow(learn_flow(tl, AIRLINE), tmp_path / "plain.json")
    assert '"walk"' not in plain_path.read_text()
    raw = json.loads(path.read_text())
    raw["format"] = 2
    path.write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="format 3") as err:
        load_flow(path)
    assert err.value.field == "format"


def test_walks_stop_where_the_agent_stops():
    """Agents that open one reservation of a listing: the walk makes the first lookup and no chain after it."""
    eps = [opens(f"one{i}", f"t{i}", [f"A{i}", f"B{i}", f"C{i}"], 1) for i in range(6)]
    tl = timelines(eps, AIRLINE)
    result = replay(tl, Decider(learn_flow(tl, AIRLINE, walk_ranks=3), "reach", 0.3))
    assert (result.saved, result.detours) == (6, 0)


@SETTINGS
@given(corpora(), st.integers(1, 4))
def test_walk_counts_are_nested_and_walks_change_nothing_else(eps, ranks):
    tl = timelines(eps, AIRLINE)
    walked = learn_flow(tl, AIRLINE, learn_from_all=True, walk_ranks=ranks)
    plain = learn_flow(tl, AIRLINE, learn_from_all=True)
    for tool in walked.tools.values():
        if tool.walk is None:
            continue
        for row in tool.walk.sites.values():
            assert len(row) == ranks
            for count in row:
                # The agent's next call before its next write is a call before its next write.
                assert 0 <= count.next <= count.reach <= count.n
    stripped = {name: t.model_copy(update={"walk": None}) for name, t in walked.tools.items()}
    assert (
        Flow.model_validate({**walked.model_dump(), "tools": {}, "format": plain.format}).model_copy(
            update={"tools": stripped}
        )
        == plain
    )
    result = replay(tl, Decider(walked, "reach", 0.0), weigh_all=True)
    for row in result.log:
        assert 0.0 <= row.score <= 1.0
        assert AIRLINE.effects[row.tool] == "read"


@given(st.lists(st.sampled_from("ABCDE"), min_size=1, max_size=6), st.sets(st.sampled_from("ABCDEF")))
def test_listing_rank_counts_opened_values(values, opened):
    assert listing_rank(values, opened) == sum(v in opened for v in values)
    assert 0 <= listing_rank(values, opened) <= len(values)


def test_crossval_leaves_each_task_out_and_selects_by_the_fixed_rule():
    tl = corpus()
    cv = crossval(tl, AIRLINE, walk_ranks=(0, 2), thetas=(0.3, 0.5), walk_priors=(0.0, 2.0))
    assert cv.folds == 8 and cv.episodes == 8
    assert cv.flows() == [(0, 0.0), (2, 0.0), (2, 2.0)]  # no walks: no prior to try
    assert len(cv.rows) == 2 * 3 * 2
    sel = cv.select()
    assert (
        sel.walk_ranks in (0, 2) and sel.walk_prior in (0.0, 2.0) and set(sel.theta) == {"next-step", "reach"}
    )
    with pytest.raises(BadInputError, match="2 training tasks"):
        crossval(tl[:1], AIRLINE)


def test_selection_rule_on_made_up_rows():
    def row(d, k, th, saved, det):
        return CrossvalRow(d, k, th, saved, 100, det, 10)

    rows = [
        row("reach", 0, 0.3, 45, 4), row("reach", 0, 0.2, 60, 9),  # 60 is over the budget of 0.6 an episode
        row("reach", 1, 0.3, 55, 6), row("reach", 1, 0.4, 55, 3),  # a tie: fewer detours wins
        row("next-step", 0, 0.3, 40, 2), row("next-step", 0, 0.2, 40, 2),  # full tie: the higher θ
        row("next-step", 1, 0.3, 50, 5), row("next-step", 1, 0.2, 30, 1),
    ]  # fmt: skip
    cv = Crossval(rows, folds=5, episodes=10, walk_ranks=(0, 1), thetas=(0.2, 0.3, 0.4))
    assert cv.best("reach", 0).theta == 0.3
    assert cv.best("next-step", 0).theta == 0.3
    sel = cv.select()
    assert sel.walk_ranks == 1 and sel.theta == {"next-step": 0.3, "reach": 0.4} and sel.within_budget
    over = Crossval([row("reach", 0, 0.3, 50, 9), row("next-step", 0, 0.3, 50, 1)], folds=5, episodes=10,
                    walk_ranks=(0,), thetas=(0.3,))  # fmt: skip
    assert not over.select().within_budget


def test_the_budget_is_met_with_a_margin_of_one_standard_error_over_the_folds():
    # 10 episodes in 5 folds of 2; 5 detours: 0.5 an episode, all in one fold (spread) or one per fold.
    lumpy = CrossvalRow("reach", 1, 0.3, 60, 100, 5, 10, fold_counts=((5, 2), (0, 2), (0, 2), (0, 2), (0, 2)))
    even = CrossvalRow("reach", 1, 0.4, 50, 100, 5, 10, fold_counts=((1, 2),) * 5)
    assert lumpy.detours_per_episode == even.detours_per_episode == 0.5
    spread = ((5 - 1) ** 2 + 4 * (0 - 1) ** 2) * 5 / 4
    assert lumpy.detours_bound(1.0) == pytest.approx(0.5 + spread**0.5 / 10)
    assert even.detours_bound(1.0) == pytest.approx(0.5) and lumpy.detours_bound(0.0) == 0.5
    cv = Crossval([lumpy, even], folds=5, episodes=10, max_detours=0.6, walk_ranks=(1,), thetas=(0.3, 0.4),
                  deciders=("reach",))  # fmt: skip
    assert cv.best("reach", 1).theta == 0.4  # the lumpy θ's bound (0.5 + 0.22) is over the budget
    assert cv.best("reach", 1, margin=0.0).theta == 0.3
    assert cv.select(margin=0.0).theta == {"reach": 0.3} and cv.select().theta == {"reach": 0.4}


def test_a_pooled_prior_scores_a_site_seen_once_near_the_walks_rate_at_that_rank():
    never = [RankCount(n=20, next=0, reach=0)]
    walk = Walk(
        argument="reservation_id", sites={"calculate": [RankCount(n=1, next=0, reach=0)], "think": never}
    )
    assert walk.chance("calculate", 0, "reach") == pytest.approx(1 / 3)  # Laplace: above θ = 0.3 on one sight
    pooled = (0 + 1) / (21 + 2)
    assert walk.pooled(0, "reach") == pytest.approx(pooled)
    leaned = walk.model_copy(update={"prior": 2.0})
    assert leaned.chance("calculate", 0, "reach") == pytest.approx((0 + 2 * pooled) / (1 + 2))
    assert leaned.chance("calculate", 0, "reach") < 0.1 and leaned.chance("nowhere", 0, "reach") is None
    # Where the site has many sightings, the prior hardly moves it.
    busy = Walk(argument="r", sites={"a": [RankCount(n=200, next=150, reach=150)], "b": never}, prior=2.0)
    assert busy.chance("a", 0, "reach") == pytest.approx((150 + 2 * busy.pooled(0, "reach")) / 202)


def test_the_walk_prior_is_learned_saved_and_set_and_zero_leaves_files_as_before(tmp_path):
    tl = corpus()
    plain = learn_flow(tl, AIRLINE, walk_ranks=3)
    leaned = learn_flow(tl, AIRLINE, walk_ranks=3, walk_prior=2.0)
    assert leaned.tools["get_reservation_details"].walk.prior == 2.0
    assert with_walk_prior(plain, 2.0) == leaned
    raw = json.loads(save_flow(plain, tmp_path / "p.json").read_text())
    assert "prior" not in raw["tools"]["get_reservation_details"]["walk"]
    assert load_flow(save_flow(leaned, tmp_path / "l.json")) == leaned
    with pytest.raises(BadInputError, match="walk prior"):
        learn_flow(tl, AIRLINE, walk_ranks=3, walk_prior=-1.0)
    with pytest.raises(BadInputError, match="walk prior"):
        with_walk_prior(plain, -0.5)


def test_choose_flow_keeps_the_successful_runs_flow_on_a_tie_and_every_run_without_verdicts():
    tl = corpus()
    cv, sel, every = choose_flow(tl, AIRLINE)
    assert every is False and cv.rows and sel.walk_ranks in cv.walk_ranks  # every run succeeded: a tie
    _, _, every = choose_flow(tl, AIRLINE, verdicts=False)
    assert every is True
