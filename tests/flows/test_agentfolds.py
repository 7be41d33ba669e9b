"""Cross-validation over agents: each agent replayed with a flow learned, and a θ chosen, without it."""

from __future__ import annotations

from toolshift.flows.agentfolds import Options, agent_crossval, choose_options, nested_pick
from toolshift.flows.perdecision import choose_rule
from toolshift.flows.pricing import Price
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, call, episode, user_walk


def _lister(eid: str, task: str, agent: str) -> object:
    """An agent of its own habit: lists the hotels, then prices the first one the listing gave."""
    return episode(eid, task, [
        ("user", "hotels in Paris"),
        ("turn", [call("list_hotels", {"city": "Paris"}, {"hotels": ["H1", "H2"]})]),
        ("turn", [call("price_hotels", {"hotel": "H1"}, {"price": 100})]),
        ("reply", "H1 is 100"),
    ], agent=agent)  # fmt: skip


def _runs() -> list:
    walkers = [
        user_walk(f"{a}{k}", f"t{k}", f"u{k}", ["R1", "R2"], agent=a) for a in ("a", "b") for k in range(3)
    ]
    return walkers + [_lister(f"c{k}", f"t{k}", "c") for k in range(3)]


def test_an_agent_is_replayed_with_a_flow_learned_without_it() -> None:
    tl = timelines(_runs(), AIRLINE)
    cv = agent_crossval(tl, AIRLINE, [Options()], thetas=(0.3,))
    assert cv.agents == ("a", "b", "c")
    cell = cv.cell(Options(), "reach", 0.3)
    saves = dict(zip(cv.agents, cell.fold_saves, strict=True))
    # a and b learn each other's walk; c's listing habit is nobody else's, so nothing is saved for c
    assert saves["a"][0] > 0 and saves["b"][0] > 0 and saves["c"] == (0, 3)
    assert cell.episodes == 9 and len(cell.fold_counts) == 3


def test_nested_figures_score_each_agent_by_the_choice_made_without_it() -> None:
    tl = timelines(_runs(), AIRLINE)
    cv, kept, shares = choose_options(tl, AIRLINE, thetas=(0.2, 0.5))
    assert kept == cv.chosen_options() and [o for o, _ in shares] == cv.candidates
    assert {o.weighting for o in cv.candidates} == {
        "episodes",
        "agents",
    }  # no task ran twice: tasks = episodes
    for d in cv.deciders:
        picked = nested_pick(cv, d)
        assert [a for a, _ in picked.picks] == list(cv.agents)
        expected = 0
        for g, (_, pick) in enumerate(picked.picks):
            assert pick == cv.without(g).choice(d)
            if pick is not None:
                expected += cv.cell(pick.options, d, pick.theta).fold_saves[g][0]
        assert picked.saved == expected and picked.ceiling == cv.cells[0].ceiling


def test_rules_and_calibration_are_chosen_over_agents() -> None:
    tl = timelines(_runs(), AIRLINE)
    choice = choose_rule(tl, AIRLINE, walk_ranks=0, price=Price.parse("0,1,1"), learn_from_all=True, by="agent",
                         thetas=(0.3,), lams=(1.0,))  # fmt: skip
    assert choice.folds == 3
    assert {row[0] for rows in choice.oof.values() for row in rows} <= {"a", "b", "c"}
