"""The results page's cross-validation table for airline: the candidates, the rule, and what it chose."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolshift.flows.crossval import Crossval, Selection
from toolshift.flows.nested import NESTED_SE, NestedChoice

__all__ = ["crossval_section", "nested_table", "pct", "table"]


def pct(x: float, digits: int = 1) -> str:
    return "–" if x != x else f"{100 * x:.{digits}f}%"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _without_margin(cv: Crossval) -> str:
    """What the same table chooses with the budget on the mean alone (the rule before the margin)."""
    if not cv.margin:
        return ""
    bare = cv.select(margin=0.0)
    return (
        f" On the mean alone (no margin) it would choose walk ranks {bare.walk_ranks}, prior {bare.walk_prior:g}; "
        + "; ".join(f"{d}: θ = {bare.theta[d]:g}, {pct(b.share_of_ceiling, 0)} at {b.detours_per_episode:.2f} "
                    f"(mean + {cv.margin:g} SE {b.detours_bound(cv.margin):.2f})" for d, b in bare.best.items())
        + "."
    )  # fmt: skip


def nested_table(nested: NestedChoice, deciders: Sequence[str]) -> str:
    """One row per margin tried: each decider's nested share / detours an episode (+ one SE); the picked one
    in bold."""
    rows = []
    for m, figs in nested.by_margin.items():
        cells = [f"{pct(figs[d].share_of_ceiling, 0)} / {figs[d].detours_per_episode:.2f} "
                 f"({figs[d].detours_bound(NESTED_SE):.2f})" for d in deciders]  # fmt: skip
        rows.append([f"**{m:g}**" if m == nested.margin else f"{m:g}", *cells])
    return table(("Margin (SE)", *(f"{d}: nested share / detours (+1 SE)" for d in deciders)), rows)


def _nested_text(cv: Crossval, nested: NestedChoice | None) -> str:
    if nested is None:
        return ""
    return "\n".join(
        [
            "Nested cross-validation (`toolshift.flows.nested`, D230): each task scored by the choice this rule "
            f"makes with that task left out of the choice (its counts removed from every cell, the same rule "
            f"applied to the other {cv.folds - 1}), summed: the procedure's figures with the choice's optimism "
            "removed. The margin is chosen by them, on the training tasks only: among the margins tried, those "
            f"whose nested detours an episode plus {NESTED_SE:g} standard error over the folds meet the "
            f"{cv.max_detours:g} budget for both deciders, the one whose nested shares average highest (ties: the "
            "larger margin); none meeting it, the one whose worst bound is lowest. Picked: "
            f"{nested.margin:g}" + ("" if nested.met() else " (no margin meets the budget nested)") + ".\n",
            nested_table(nested, cv.deciders),
            "",
        ]
    )


def crossval_section(cv: Crossval, sel: Selection, nested: NestedChoice | None = None) -> str:
    """The cross-validation table that chose the walk ranks and θ, and the rule it applied."""
    rows = []
    for d in cv.deciders:
        for k, p in cv.flows():
            cells = []
            for th in cv.thetas:
                c = cv.row(d, k, th, p)
                text = f"{pct(c.share_of_ceiling, 0)} / {c.detours_per_episode:.2f}"
                chosen = (k, p) == (sel.walk_ranks, sel.walk_prior) and th == sel.theta[d]
                cells.append(f"**{text}**" if chosen else text)
            rows.append(
                [d, "0 (format 2, no walks)" if k == 0 else str(k), "—" if k == 0 else f"{p:g}", *cells]
            )
    picked = "; ".join(
        f"{d}: θ = {sel.theta[d]:g}, {pct(b.share_of_ceiling, 0)} of the ceiling at {b.detours_per_episode:.2f} "
        "detours an episode"
        for d, b in sel.best.items()
    )
    return "\n".join(
        [
            "### Choosing the rule on the training tasks (cross-validation)\n",
            f"Leave one task out over the {cv.folds} training tasks ({cv.episodes} episodes): learn on the other "
            "tasks, replay the task left out, sum. `toolshift.flows.crossval` (`toolshift flows crossval EPISODES "
            "--catalog CATALOG --tasks train`) runs it; the held-out tasks are not read. Candidates: walk ranks 0 "
            "(the format-2 flow) to "
            f"{max(cv.walk_ranks)}, each walk with a pooled prior of "
            + ", ".join(f"{p:g}" for p in cv.walk_priors)
            + " pseudo-sites (0: Laplace's (count + 1)/(n + 2), under which a site seen once without a use scores "
            "1/3; k > 0 leans a site's walk chance on how often the agent goes on walking at that rank anywhere, "
            "`Walk.prior`), "
            f"θ from {min(cv.thetas):g} to {max(cv.thetas):g}. The rule, "
            f"fixed before running it: per decider, the θ with the largest share of the ceiling within {cv.max_detours:g} "
            "detours an episode (the goal's budget; ties: fewer detours), the budget met with a margin: the detours "
            f"an episode plus {cv.margin:g} standard errors over the folds ("
            + ("the margin nested cross-validation picks, below" if nested else "`crossval.MARGIN`")
            + "; the folds' own spread, "
            "so a θ whose detours hang on a few tasks is not chosen at the budget's edge); one walk-ranks value and "
            "prior for both deciders, the pair whose two best shares average highest (ties: fewer ranks, then the "
            "weaker prior). Each cell: share of the training ceiling saved / detours an episode; the chosen cells in "
            "bold.\n",
            table(("Decider", "Walk ranks", "Prior", *(f"θ = {th:g}" for th in cv.thetas)), rows),
            "",
            f"Chosen: walk ranks {sel.walk_ranks}, prior {sel.walk_prior:g}; {picked or 'no candidate within the budget'}."
            + (
                ""
                if sel.within_budget
                else " Some decider had no candidate within the detour budget; it runs at θ = 0.3."
            )
            + _without_margin(cv)
            + "\n",
            _nested_text(cv, nested),
        ]
    )
