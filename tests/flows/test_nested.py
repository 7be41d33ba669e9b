"""Nested cross-validation over the folds' counts: the choice's optimism, the margin it picks (D230)."""

from __future__ import annotations

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.crossval import Crossval, CrossvalRow, crossval
from toolshift.flows.nested import (
    MARGINS,
    NestedFigures,
    nested_crossval,
    pick_margin,
    select_nested,
    without_fold,
)
from toolshift.flows.perdecision import Candidate, RuleChoice, choose_rule, nested_rule
from toolshift.flows.pricing import Price

from .builders import AIRLINE
from .test_rule import _episodes
from .test_walks import corpus

# Four folds of 2 episodes, each fold's ceiling 25. A saves more, and its 4 detours sit in the last two folds:
# on the sum it meets a 0.5 budget exactly (4 of 8), but a choice made without fold 0 or 1 sees A over the
# budget (4 of 6) and one made without fold 2 or 3 sees it under (2 of 6). B saves less and makes 1 detour.
A_DETOURS = ((0, 2), (0, 2), (2, 2), (2, 2))
B_DETOURS = ((1, 2), (0, 2), (0, 2), (0, 2))
A_SAVES = ((15, 25),) * 4
B_SAVES = ((10, 25),) * 4


def _cv() -> Crossval:
    a = CrossvalRow("reach", 0, 0.3, 60, 100, 4, 8, fold_counts=A_DETOURS, fold_saves=A_SAVES)
    b = CrossvalRow("reach", 0, 0.4, 40, 100, 1, 8, fold_counts=B_DETOURS, fold_saves=B_SAVES)
    return Crossval([a, b], folds=4, episodes=8, max_detours=0.5, walk_ranks=(0,), thetas=(0.3, 0.4),
                    deciders=("reach",), margin=0.0)  # fmt: skip


def test_a_fold_left_out_takes_its_counts_from_every_total():
    row = _cv().rows[0]
    out = without_fold(row, 3)
    assert (out.saved, out.ceiling, out.detours, out.episodes) == (45, 75, 2, 6)
    assert out.fold_counts == A_DETOURS[:3] and out.fold_saves == A_SAVES[:3]
    with pytest.raises(BadInputError, match="fold 4"):
        without_fold(row, 4)
    with pytest.raises(BadInputError, match="per-fold counts"):
        without_fold(CrossvalRow("reach", 0, 0.3, 1, 1, 0, 1, fold_counts=((0, 1),)), 0)


def test_the_nested_figures_show_the_optimism_of_a_choice_at_the_budgets_edge():
    cv = _cv()
    assert cv.select().theta == {"reach": 0.3}  # the folds' sum: A, 60% at 0.50
    nested = nested_crossval(cv, margins=(0.0, 1.0))
    at0 = nested.by_margin[0.0]["reach"]
    # Without fold 0 or 1, A is over the budget: B scores those folds; without fold 2 or 3, A scores them.
    assert at0.choices == ("walk ranks 0, prior 0, θ 0.4",) * 2 + ("walk ranks 0, prior 0, θ 0.3",) * 2
    assert (at0.saved, at0.ceiling, at0.detours, at0.episodes) == (50, 100, 5, 8)
    assert at0.detours_per_episode == 0.625 > cv.select().best["reach"].detours_per_episode
    assert at0.detours_bound(1.0) > 0.5  # the procedure at margin 0 does not meet the budget, nested
    # With a margin of 1 SE, A (its detours in few folds) is never chosen: B, honest at 0.125.
    at1 = nested.by_margin[1.0]["reach"]
    assert (at1.saved, at1.detours) == (40, 1) and set(at1.choices) == {"walk ranks 0, prior 0, θ 0.4"}
    assert nested.margin == 1.0 and nested.met()
    chosen, sel, again = select_nested(cv, margins=(0.0, 1.0))
    assert chosen.margin == 1.0 and sel.theta == {"reach": 0.4} and again.margin == 1.0
    assert set(nested.summary()["by_margin"]) == {"0", "1"}


def test_the_margin_rule_prefers_share_then_the_larger_margin_and_else_the_lowest_bound():
    def fig(saved: int, detours: int) -> dict[str, NestedFigures]:
        return {"reach": NestedFigures(saved, 100, detours, 10, ((detours, 10),))}

    assert pick_margin({0.0: fig(60, 8), 1.0: fig(50, 4), 2.0: fig(40, 2)}, 0.5) == 1.0
    assert pick_margin({0.0: fig(50, 4), 1.0: fig(50, 4), 2.0: fig(40, 2)}, 0.5) == 1.0  # a tie: the larger
    assert pick_margin({0.0: fig(60, 9), 1.0: fig(50, 7), 2.0: fig(40, 8)}, 0.5) == 1.0  # none: lowest bound
    with pytest.raises(BadInputError, match="no margin"):
        pick_margin({}, 0.5)


def _rule_choice() -> RuleChoice:
    a = Candidate("reach", "θ", 0.3, True, 60, 100, 4, 8, A_DETOURS, A_SAVES)
    b = Candidate("reach", "per decision", 1.0, True, 40, 100, 1, 8, B_DETOURS, B_SAVES)
    return RuleChoice([a, b], {}, {}, {}, {}, {}, None, 0.5, 4, 8)  # type: ignore[arg-type]


def test_the_rule_picked_overall_is_nested_the_same_way():
    choice = _rule_choice()
    assert choice.choose("reach", 0.0) == {"θ": choice.candidates[0], "per decision": choice.candidates[1]}
    assert choice.choose("reach", 1.0) == {"per decision": choice.candidates[1]}
    nested = nested_rule(choice, "reach", margins=(0.0, 1.0))
    at0 = nested.by_margin[0.0]["reach"]
    assert (at0.saved, at0.detours) == (50, 5) and at0.choices[-1] == "θ, 0.3"
    assert nested.by_margin[1.0]["reach"].choices == ("per decision, 1",) * 4
    assert nested.margin == 1.0
    # Nothing within the budget at a margin of 3: each fold is scored by the single θ nearest 0.3.
    lone = _rule_choice()
    lone.candidates = [Candidate("reach", "θ", 0.4, True, 60, 100, 4, 8, A_DETOURS, A_SAVES)]
    assert lone.fallback("reach") is lone.candidates[0]
    at3 = nested_rule(lone, "reach", margins=(3.0,)).by_margin[3.0]["reach"]
    assert at3.choices == ("θ, 0.4",) * 4 and (at3.saved, at3.detours) == (60, 4)
    lone.candidates = []
    with pytest.raises(BadInputError, match="fall back"):
        lone.fallback("reach")


def test_choose_rule_with_nested_makes_each_choice_at_the_margin_it_picks():
    choice = choose_rule(_episodes(12), AIRLINE, walk_ranks=0, price=Price(), deciders=("reach",),
                         thetas=(0.3, 0.5), lams=(1.0,), nested=True)  # fmt: skip
    nested = choice.nested["reach"]
    assert tuple(nested.by_margin) == MARGINS and choice.margin["reach"] == nested.margin
    assert all(f.episodes == choice.episodes for figs in nested.by_margin.values() for f in figs.values())
    best = {f: c for (d, f), c in choice.best.items() if d == "reach"}
    assert best == choice.choose("reach", nested.margin)
    plain = choose_rule(_episodes(12), AIRLINE, walk_ranks=0, price=Price(), deciders=("reach",),
                        thetas=(0.3, 0.5), lams=(1.0,))  # fmt: skip
    assert plain.nested == {} and plain.margin == {"reach": 1.0}


def test_nested_crossval_on_real_folds_sums_to_the_folds_totals():
    cv = crossval(corpus(), AIRLINE, walk_ranks=(0, 2), thetas=(0.3, 0.5), walk_priors=(0.0, 2.0))
    assert all(len(r.fold_saves) == len(r.fold_counts) == cv.folds for r in cv.rows)
    assert all(sum(s for s, _ in r.fold_saves) == r.saved for r in cv.rows)
    nested = nested_crossval(cv)
    for figs in nested.by_margin.values():
        for f in figs.values():
            assert (f.episodes, f.ceiling) == (cv.episodes, cv.rows[0].ceiling) and len(f.choices) == cv.folds
    with pytest.raises(BadInputError, match="3 folds"):
        nested_crossval(Crossval(cv.rows[:0], folds=2, episodes=0))
