"""The results page's sections on the decision rule: per-site calibration and a threshold per decision.

Called by `toolshift.flows.results` for τ-bench airline and WorkBench. The rule is chosen on the training
tasks by `toolshift.flows.perdecision` and replayed once on the held-out tasks.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from toolshift.flows.calibration import site_key, site_reliability, site_reliability_diagrams
from toolshift.flows.ceiling import anatomy
from toolshift.flows.decide import Decider
from toolshift.flows.model import Flow
from toolshift.flows.nested import NESTED_SE
from toolshift.flows.perdecision import FAMILIES, MAX_DETOURS, RuleChoice, choose_rule
from toolshift.flows.pricing import Price, value_replay
from toolshift.flows.replay import ReplayResult, replay
from toolshift.flows.statistics import share_of_ceiling
from toolshift.flows.timeline import Catalog, Timeline

ORDER = ("reach", "next-step")
PRICE = "0,1,1"
SITE_ROWS = 10
"""Sites with fewer weighed lookups than this are pooled in the table's last row."""


def _pct(x: float, digits: int = 0) -> str:
    return "–" if x != x else f"{100 * x:.{digits}f}%"


def _table(header: tuple[str, ...], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _ci(i: Any) -> str:
    return (
        "–"
        if i.n == 0 or i.mean != i.mean
        else f"{100 * i.mean:.0f}% ({100 * i.low:.0f} – {100 * i.high:.0f})"
    )


def nested_rule_text(choice: RuleChoice, deciders: tuple[str, ...] = ORDER) -> str:
    """The nested figures of the overall pick per margin and decider (`perdecision.nested_rule`), and the
    margin each decider's choice was made with."""
    margins = list(choice.nested[deciders[0]].by_margin)
    rows = []
    for m in margins:
        cells = []
        for d in deciders:
            f = choice.nested[d].by_margin[m][d]
            text = (
                f"{_pct(f.share_of_ceiling)} / {f.detours_per_episode:.2f} ({f.detours_bound(NESTED_SE):.2f})"
            )
            cells.append(f"**{text}**" if m == choice.margin[d] else text)
        rows.append([f"{m:g}", *cells])
    return "\n".join([
        "Nested cross-validation of the rule picked overall (`perdecision.nested_rule`, D230): each training task "
        "scored by the family and value this rule picks with that task left out of the choice (its counts removed "
        f"from every candidate), summed; per decider the margin is the one whose nested detours plus {NESTED_SE:g} "
        "standard error meet the budget with the highest nested share (ties: the larger margin), in bold: "
        + "; ".join(f"{d} {choice.margin[d]:g}" + ("" if choice.nested[d].met() else " (none meets it)")
                    for d in deciders) + ".\n",
        _table(("Margin (SE)", *(f"{d}: nested share / detours (+1 SE)" for d in deciders)), rows), ""])  # fmt: skip


def _per_decision_us(test: list[Timeline], decider: Decider) -> tuple[float, int]:
    """Mean microseconds per decision over a replay (weigh calls timed inside the replay's own loop)."""
    started = time.perf_counter()
    r = replay(test, decider)
    seconds = time.perf_counter() - started
    decisions = sum(len(turn) for t in test for turn in t.turns) + r.made
    return 1e6 * seconds / max(decisions, 1), decisions


def airline_rule_section(train: list[Timeline], test: list[Timeline], catalog: Catalog, flow: Flow,
                         ranks: int, single: dict[str, float], out_dir: Path,
                         walk_prior: float = 0.0, learn_from_all: bool = False,
                         records: bool = False, ints: bool = False,
                         fallbacks: bool = False, asks: bool = False,
                         older: bool = False, named: bool = False) -> tuple[str, dict[str, Any]]:  # fmt: skip
    """Choose the rule on `train`, replay it once on `test`; per-site calibration before and after."""
    price = Price.parse(PRICE)
    choice = choose_rule(train, catalog, walk_ranks=ranks, price=price, walk_prior=walk_prior,
                         learn_from_all=learn_from_all, records=records, ints=ints,
                         fallbacks=fallbacks, asks=asks, older=older, named=named, nested=True)  # fmt: skip
    _, per_episode = anatomy(test)
    ceiling = {e: a.ceiling for e, a in per_episode.items()}
    total_ceiling = sum(ceiling.values())
    figures: dict[str, Any] = {"min_count": choice.min_count, "rules": {},
                               "nested": {d: choice.nested[d].summary() for d in ORDER}}  # fmt: skip
    cv_detours: dict[str, float] = {}
    rows = []
    for d in ORDER:
        runs: list[tuple[str, str, ReplayResult]] = [
            (
                f"θ = {single[d]:g} (the section above)",
                "—",
                replay(test, Decider(flow, d, single[d])),
            )
        ]
        for f in FAMILIES:
            best = choice.best.get((d, f))
            rule = choice.rule(d, f)
            cv = (
                f"{_pct(best.share_of_ceiling)} / {best.detours_per_episode:.2f}"
                if best
                else "none within budget"
            )
            value = f"λ = {rule.lam:g}" if rule.kind == "priced" else f"θ = {rule.theta:g}"
            value += "" if rule.reread else ", no re-reads"
            if best:
                cv_detours[f"{d}: {f}, {value}"] = best.detours_per_episode
            runs.append(
                (
                    f"{f}, {value}",
                    cv,
                    replay(test, Decider(flow, d, rule=rule)),
                )
            )  # type: ignore[arg-type]
            if f == choice.overall(d):
                figures.setdefault("chosen", {})[d] = f"{d}: {f}, {value}"
        for label, cv, r in runs:
            u = value_replay(r, test, price).utility
            picked = figures.get("chosen", {}).get(d) == f"{d}: {label}"
            rows.append([d, f"**{label}**" if picked else label, cv, _ci(share_of_ceiling(r, ceiling)),
                         f"{r.detours / len(r.episodes):.2f}", f"{u / 1000:,.1f}k"])  # fmt: skip
            figures["rules"][f"{d}: {label}"] = {
                "share_of_ceiling": r.saved / total_ceiling if total_ceiling else 0.0,
                "detours_per_episode": r.detours / len(r.episodes), "utility": u, "crossval": cv,
                "crossval_detours": cv_detours.get(f"{d}: {label}")}  # fmt: skip
    lines = ["### A threshold per decision, chosen on the training tasks\n",
             f"`toolshift flows price --choose-rule` (`toolshift.flows.perdecision`): leave one task out over the "
             f"{choice.folds} training tasks ({choice.episodes} episodes), the flow (walk ranks {ranks}) and the costs "
             "learned on the other tasks. Six families: one θ or a threshold per decision, each on the model's "
             "scores, on scores recalibrated per site (below), or recalibrated per site and the request's intent "
             "words (`toolshift.flows.intent`: the catalog's write-tool name words a user message matched, "
             f"{', '.join(choice.vocabulary) or 'none'} here; a site × intent gets its own map, shrunk toward the "
             "site's, where the out-of-fold log holds enough of it: "
             + "; ".join(f"at least {choice.intent_min_count[d]:,} weighed lookups for {d}" if choice.intent_min_count[d] < 10**6
                         else f"for {d} no count beat the site maps, so it has none" for d in ORDER)
             + ", each count chosen by Brier score out of fold). The rule cross-validation picks overall, in bold: the "
             "family whose chosen candidate saves the largest share within the budget (ties: fewer detours, then "
             "the simpler family), what `flows price --choose-rule` writes. A threshold per decision is λ·δ/(β+δ) for the "
             "lookup where it stands: δ its tool's mean result tokens written once and reread in every LLM turn "
             "the training episodes have left at that position (the agent's calls seen so far), β the next turn's "
             "prompt plus its call's tokens over the turns after it (`--price 0,1,1`), clipped to 0.02–0.98; λ "
             f"from {min(choice.candidates, key=lambda c: c.value if c.family.startswith('per') else 9).value:g} "
             "upward. Each is tried with and without re-reads: whether a read the agent already has in context "
             "(made, or delivered by a lookup, earlier in the episode) may be proposed again after a write. The rule, "
             "fixed before running it: per decider and family, the largest share of the training "
             f"ceiling within {MAX_DETOURS:g} detours an episode (the goal's budget, met with a margin: the detours an "
             "episode plus that decider's margin in standard errors over the folds, picked by nested cross-validation as "
             "above, below; ties: fewer detours, then the larger θ or λ, then re-reads allowed). Then one replay of the held-out tasks with each chosen rule, the flow and "
             "recalibration fitted on every training task.\n",
             _table(("Decider", "Rule", "Cross-validation: share / detours", "Held out: share of the ceiling "
                     "(95% CI)", "Detours per episode", "Utility"), rows), ""]  # fmt: skip
    lines.append(nested_rule_text(choice))
    lines.append(_against_goal(figures["rules"], figures.get("chosen", {})))
    lines += _calibration_lines(choice, test, flow, out_dir, figures)
    lines += _latency_lines(test, flow, choice, figures)
    return "\n".join(lines), figures


def _against_goal(rules: dict[str, dict[str, Any]], chosen: dict[str, str]) -> str:
    """The closing note on the goal (≥ 75% of the ceiling at ≤ 0.5 detours an episode), from the rows above."""
    met = [k for k, v in rules.items() if v["share_of_ceiling"] >= 0.75 and v["detours_per_episode"] <= 0.5]
    best = max(rules.items(), key=lambda kv: kv[1]["utility"])
    within = [kv for kv in rules.items() if kv[1]["detours_per_episode"] <= 0.5]
    top = max(within, key=lambda kv: kv[1]["share_of_ceiling"], default=None)
    return (
        "**Against the goal (≥ 75% of the ceiling at ≤ 0.5 detours an episode, held out).** "
        + ("Met by " + "; ".join(met) + ". " if met else "Not met by any rule. ")
        + (
            "The rules cross-validation picks overall: "
            + "; ".join(
                f"{label} {_pct(rules[label]['share_of_ceiling'])} at {rules[label]['detours_per_episode']:.2f}"
                for label in chosen.values()
            )
            + ". "
            if chosen
            else ""
        )
        + (
            f"Within 0.5 detours the most any chosen rule saves is {_pct(top[1]['share_of_ceiling'])} ({top[0]}, "
            f"{top[1]['detours_per_episode']:.2f} detours). "
            if top
            else "No chosen rule stays within 0.5 detours. "
        )
        + f"The highest utility: {best[0]} ({best[1]['utility'] / 1000:,.1f}k tokens). "
        + _prediction(rules)
        + "A family with no candidate within the budget on the training folds runs at θ = 0.3.\n"
    )


def _prediction(rules: dict[str, dict[str, Any]]) -> str:
    """How the held-out detours compare with what cross-validation predicted, over the rules it chose."""
    pairs = [(v["crossval_detours"], v["detours_per_episode"]) for v in rules.values()
             if v.get("crossval_detours") is not None]  # fmt: skip
    if not pairs:
        return ""
    above = sum(1 for cv, out in pairs if out > cv)
    gap = sum(out - cv for cv, out in pairs) / len(pairs)
    return (
        f"Held out, {above} of the {len(pairs)} rules chosen on the folds made more detours than cross-validation "
        f"predicted (by {gap:+.2f} an episode on average): the folds' 30 tasks are few, and a task left out takes "
        "its own walks with it. "
    )


def _calibration_lines(choice: RuleChoice, test: list[Timeline], flow: Flow, out_dir: Path,
                       figures: dict[str, Any]) -> list[str]:  # fmt: skip
    lines = ["### Calibration per site\n",
             "A site is the looked-up tool × what it binds from (an agent's own result, or a lookup's: a chain) × "
             "where the decision stands (the agent's calls seen so far: 0–2, 3–5, 6+). Recalibration is "
             "isotonic per site, shrunk toward the global isotonic map by two pseudo-lookups per step, for sites "
             "with at least the minimum count of weighed lookups, and the global map elsewhere; the minimum count "
             "is chosen by 5-fold cross-validation by task over the out-of-fold log (lowest Brier score): "
             + ", ".join(f"{d} {'∞ (global only)' if m >= 10**6 else m}" for d, m in choice.min_count.items())
             + ". Out of fold: the training log, each row recalibrated without its own task. Held out: the test "
             "tasks' log (replayed at θ = 0.3, every lookup weighed), recalibrated by the map fitted on every "
             "training task. ECE over ten equal-width bins.\n"]  # fmt: skip
    rows: list[list[str]] = []
    figures["sites"] = {}
    for d in ORDER:
        oof = [
            (s, x, a, u) for (_, s, x, u), a in zip(choice.oof[d], choice.oof_recalibrated[d], strict=True)
        ]
        cal = choice.calibrator[d]
        log = replay(test, Decider(flow, d, 0.3), weigh_all=True).log  # type: ignore[arg-type]
        held = [(site_key(x.tool, x.depth, x.position), x.raw, cal(site_key(x.tool, x.depth, x.position), x.raw),
                 x.used) for x in log]  # fmt: skip
        held_by = {r.site: r for r in site_reliability(held)}
        small_oof = [r for r in oof if sum(1 for q in oof if q[0] == r[0]) < SITE_ROWS]
        for r in site_reliability(oof):
            if r.weighed < SITE_ROWS:
                continue
            h = held_by.get(r.site)
            rows.append([d, f"`{r.site.replace('|', ' · ')}`", str(r.weighed), _pct(r.used_rate),
                         f"{r.ece_before:.3f} → {r.ece_after:.3f}",
                         f"{h.weighed} · {h.ece_before:.3f} → {h.ece_after:.3f}" if h else "—"])  # fmt: skip
            figures["sites"][f"{d}: {r.site}"] = {"weighed": r.weighed, "ece_before": r.ece_before,
                                                 "ece_after": r.ece_after,
                                                 "held_out": [h.weighed, h.ece_before, h.ece_after] if h else None}  # fmt: skip
        if small_oof:
            sr = site_reliability([("other", b, a, u) for _, b, a, u in small_oof])[0]
            rows.append([d, f"other sites (fewer than {SITE_ROWS} each)", str(sr.weighed), _pct(sr.used_rate),
                         f"{sr.ece_before:.3f} → {sr.ece_after:.3f}", "—"])  # fmt: skip
        allo = site_reliability([("all", b, a, u) for _, b, a, u in oof])[0]
        allh = site_reliability([("all", b, a, u) for _, b, a, u in held])
        rows.append([d, "**all sites**", str(allo.weighed), _pct(allo.used_rate),
                     f"{allo.ece_before:.3f} → {allo.ece_after:.3f}",
                     f"{allh[0].weighed} · {allh[0].ece_before:.3f} → {allh[0].ece_after:.3f}" if allh else "—"])  # fmt: skip
        figures["sites"][f"{d}: all"] = {
            "oof": [allo.ece_before, allo.ece_after],
            "held_out": [allh[0].ece_before, allh[0].ece_after] if allh else None,
        }
        png = out_dir / f"flows-sites-airline-{d}.png"
        site_reliability_diagrams(oof, png, f"τ-bench airline, {d}: per site, out of fold (before / after)")
        figures.setdefault("png", []).append(png.name)
    lines += [_table(("Decider", "Site", "Weighed (out of fold)", "Used", "ECE out of fold, before → after",
                      "Held out: weighed · ECE before → after"), rows), ""]  # fmt: skip
    lines += [f"![per-site reliability, {d}]({p})\n" for d, p in zip(ORDER, figures["png"], strict=True)]
    return lines


def _latency_lines(
    test: list[Timeline], flow: Flow, choice: RuleChoice, figures: dict[str, Any]
) -> list[str]:
    single = _per_decision_us(test, Decider(flow, "reach", 0.3))
    priced = _per_decision_us(test, Decider(flow, "reach", rule=choice.rule("reach", FAMILIES[-1])))
    figures["latency_us"] = {"single": single[0], "priced": priced[0]}
    return ["### The decider's cost\n",
            f"Wall time of the held-out replay (reach) over its {single[1]} decisions (one after each agent call and "
            f"each lookup's result), the replay's own bookkeeping included: {single[0]:.0f} µs a decision at one θ, "
            f"{priced[0]:.0f} µs with the per-decision rule recalibrated per site and intent. The τ-bench file records no "
            "lookup latency, so the goal's ratio (≤ 0.25× of the lookup proposed) holds for any backend whose read "
            f"takes at least {4 * priced[0] / 1000:.1f} ms.\n"]  # fmt: skip


def workbench_rule_rows(train: list[Timeline], test: list[Timeline], catalog: Catalog, flow: Flow,
                        learn_from_all: bool) -> tuple[int, int, int, str]:  # fmt: skip
    """The reach per-decision rule, recalibrated, chosen on `train`: (saved, made, detours, the rule) on `test`."""
    choice = choose_rule(train, catalog, walk_ranks=0, price=Price.parse(PRICE), deciders=("reach",),
                         learn_from_all=learn_from_all, thetas=(0.3,), lams=(1.0, 1.5))  # fmt: skip
    rule = choice.rule("reach", "per decision, recalibrated")
    r = replay(test, Decider(flow, "reach", rule=rule))
    return r.saved, r.made, r.detours, f"λ = {rule.lam:g}"
