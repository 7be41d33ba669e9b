"""The results page's BFCL section: a flow learned on one model's BFCL v4 multi-turn result files, replayed on
another model's held-out tasks, everything chosen by cross-validation on the learning model's training tasks.

The files are gpt-oss-120b's and gpt-oss-20b's runs served by vLLM, published in
github.com/bbrowning/bfcl-vllm-results (written by BFCL itself; not committed here: `flows report --bfcl
CHECKOUT`). Each model's files are converted on their own (their catalogs share one fingerprint: BFCL's
function docs, D121). Tasks are split by `toolshift.traces.split` over both models' task ids together, so a
task is held out for both. The result files carry no verdict, so flows learn from every run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from rich.console import Console

from toolshift.errors import BadInputError
from toolshift.flows.ceiling import anatomy
from toolshift.flows.crossval import BINDINGS, crossval, format6_name, mean_best_share, try_format6, try_named
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.nested import select_nested
from toolshift.flows.perdecision import FAMILIES, choose_rule
from toolshift.flows.pricing import Price
from toolshift.flows.replay import ReplayResult, replay
from toolshift.flows.statistics import share_of_ceiling
from toolshift.flows.timeline import Catalog, Timeline, Unlisted, timelines
from toolshift.traces.split import split_tasks

RUN = "2025-11-12-main"
MODELS = ("openai_gpt-oss-120b", "openai_gpt-oss-20b")
FOLDS = 10
"""BFCL has hundreds of training tasks: 10-fold by task instead of leaving one task out."""
MAX_DETOURS = 0.3
"""The goal's budget (≥ 35% of the ceiling at ≤ 0.3 detours an episode)."""
BEFORE_THETA = 0.3
ORDER = ("reach", "next-step")
PRICE = "0,1,1"


def _options(
    records: bool,
    ints: bool,
    fallbacks: bool = False,
    asks: bool = False,
    older: bool = False,
    named: bool = False,
) -> str:
    taken = (("records", records), ("ints", ints), ("fallbacks", fallbacks), ("asks", asks), ("older", older),
             ("named walks", named))  # fmt: skip
    return " + ".join(n for n, on in taken if on) or "none"


def _pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.0f}%"


def _table(header: tuple[str, ...], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _ci(i: Any) -> str:
    if i.n == 0 or i.mean != i.mean:
        return "–"
    return f"{100 * i.mean:.0f}% ({100 * i.low:.0f} – {100 * i.high:.0f})"


def load_model(root: Path, model: str, run: str = RUN) -> tuple[Catalog, list[Timeline], int]:
    """One model's multi-turn result files of `run` (base, miss_func, miss_param; long context left out)."""
    from toolshift.traces.bfcl import convert_bfcl
    from toolshift.traces.conversion import Conversion

    folder = root / "results" / run / "result" / model / "multi_turn"
    paths = [folder / f"BFCL_v4_multi_turn_{c}_result.json" for c in ("base", "miss_func", "miss_param")]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise BadInputError("BFCL result file not found (pass --bfcl a checkout of bfcl-vllm-results)",
                            source=str(missing[0]))  # fmt: skip
    conv = Conversion(converter="bfcl")
    for path in paths:
        conv.extend(convert_bfcl(path))
    catalog = Catalog.of(conv.catalogs["bfcl"])
    return catalog, timelines(conv.episodes, catalog, Unlisted()), conv.records


def _figures(r: ReplayResult, ceiling: dict[str, int]) -> dict[str, Any]:
    total = sum(ceiling.get(e.episode, 0) for e in r.episodes)
    return {"saved": r.saved, "share_of_ceiling": r.saved / total if total else 0.0,
            "detours_per_episode": r.detours / len(r.episodes) if r.episodes else 0.0, "made": r.made}  # fmt: skip


def bfcl_section(root: Path, console: Console) -> tuple[str, dict[str, Any]]:
    """Both directions (learn on one model, replay the other's test tasks); the rule chosen on training only."""
    loaded = {m: load_model(root, m) for m in MODELS}
    prints = {m: c.fingerprint() for m, (c, _, _) in loaded.items()}
    if len(set(prints.values())) != 1:
        raise BadInputError(f"the two models' BFCL catalogs differ ({prints}): convert with bfcl-eval installed",
                            source=str(root))  # fmt: skip
    which = split_tasks(t.task_id for _, tl, _ in loaded.values() for t in tl)
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    figures: dict[str, Any] = {"run": RUN, "models": list(MODELS), "directions": {},
                               "commit": done.stdout.strip() or "unknown"}  # fmt: skip
    rows_cv, rows_out = [], []
    price = Price.parse(PRICE)
    for learn_on, serve_on in (MODELS, MODELS[::-1]):
        catalog, learn_tl, _ = loaded[learn_on]
        train = [t for t in learn_tl if which[t.task_id] == "train"]
        test = [t for t in loaded[serve_on][1] if which[t.task_id] == "test"]
        own_test = [t for t in learn_tl if which[t.task_id] == "test"]
        console.print(f"bfcl: learn on {learn_on} ({len(train)} training episodes), replay {serve_on} "
                      f"({len(test)} test episodes)")  # fmt: skip
        tried = []
        for order, (records, ints, fallbacks) in enumerate(BINDINGS):  # format 5's options, kept where they
            cv = crossval(train, catalog, learn_from_all=True, folds=FOLDS,  # cross-validate better
                          max_detours=MAX_DETOURS, records=records, ints=ints, fallbacks=fallbacks)  # fmt: skip
            tried.append((-mean_best_share(cv, cv.select()), order, cv))
        _, _, cv = min(tried, key=lambda x: (x[0], x[1]))
        format6: dict[str, float] = {}
        cv, sel = try_format6(
            train, catalog, cv, cv.select(), True, max_detours=MAX_DETOURS, folds=FOLDS, shares=format6
        )
        named: dict[str, float] = {}
        cv, sel = try_named(train, catalog, cv, sel, True, max_detours=MAX_DETOURS, folds=FOLDS, shares=named)
        cv, sel, nested = select_nested(cv)  # the margin picked by nested cross-validation (D230)
        choice = choose_rule(train, catalog, walk_ranks=sel.walk_ranks, price=price, learn_from_all=True,
                             folds=FOLDS, max_detours=MAX_DETOURS, walk_prior=sel.walk_prior,
                             **sel.options(), nested=True)  # fmt: skip
        flow = learn_flow(train, catalog, learn_from_all=True, walk_ranks=sel.walk_ranks, walk_prior=sel.walk_prior,
                          **sel.options())  # fmt: skip
        before_flow = learn_flow(train, catalog, learn_from_all=True)
        total, per_episode = anatomy(test)
        ceiling = {e: a.ceiling for e, a in per_episode.items()}
        _, own_per = anatomy(own_test)
        own_ceiling = {e: a.ceiling for e, a in own_per.items()}
        direction: dict[str, Any] = {"train_episodes": len(train), "test_episodes": len(test),
                                     "ceiling": total.share("ceiling"), "turns": total.turns,
                                     "walk_ranks": sel.walk_ranks, "walk_prior": sel.walk_prior, "theta": sel.theta,
                                     "records": sel.records, "record_bindings": {
                                         t: f.record.model_dump() for t, f in flow.tools.items() if f.record},
                                     "ints": sel.ints, "fallbacks": sel.fallbacks, "asks": sel.asks,
                                     "older": sel.older, "format6_crossval": format6, "named": sel.named,
                                     "named_crossval": named, "nested": nested.summary(),
                                     "rule_nested": {d: choice.nested[d].summary() for d in ORDER},
                                     "crossval_bindings": {_options(*BINDINGS[order]): -neg
                                                           for neg, order, _ in tried},
                                     "rules": {}}  # fmt: skip
        name = f"{learn_on.removeprefix('openai_')} → {serve_on.removeprefix('openai_')}"
        for d in ORDER:
            best = sel.best.get(d)
            rows_cv.append([name, d, f"walk ranks {sel.walk_ranks}, prior {sel.walk_prior:g}, "
                            f"{_options(**sel.options()) + ', ' if any(sel.options().values()) else ''}"
                            f"θ = {sel.theta[d]:g}",
                            f"{_pct(best.share_of_ceiling)} / {best.detours_per_episode:.2f}" if best
                            else "none within budget"])  # fmt: skip
            runs: list[tuple[str, str, ReplayResult]] = [
                (f"before: format 2, θ = {BEFORE_THETA:g}", "—", replay(test, Decider(before_flow, d, BEFORE_THETA))),  # type: ignore[arg-type]
                (f"θ = {sel.theta[d]:g}, walk ranks {sel.walk_ranks}", rows_cv[-1][-1],
                 replay(test, Decider(flow, d, sel.theta[d]))),  # type: ignore[arg-type]
            ]  # fmt: skip
            overall = choice.overall(d)
            for f in FAMILIES:
                c = choice.best.get((d, f))
                if c is None:
                    continue
                rule = choice.rule(d, f)
                value = f"λ = {rule.lam:g}" if rule.kind == "priced" else f"θ = {rule.theta:g}"
                label = f"{f}, {value}" + ("" if rule.reread else ", no re-reads")
                runs.append((label, f"{_pct(c.share_of_ceiling)} / {c.detours_per_episode:.2f}",
                             replay(test, Decider(flow, d, rule=rule))))  # type: ignore[arg-type]  # fmt: skip
                if f == overall:
                    direction.setdefault("chosen", {})[d] = f"{d}: {label}"
            for label, cvtext, r in runs:
                fig = _figures(r, ceiling)
                direction["rules"][f"{d}: {label}"] = fig | {"crossval": cvtext}
                picked = direction.get("chosen", {}).get(d) == f"{d}: {label}"
                rows_out.append([name, d, f"**{label}**" if picked else label, cvtext,
                                 _ci(share_of_ceiling(r, ceiling)), f"{fig['detours_per_episode']:.2f}"])  # fmt: skip
            own = replay(own_test, Decider(flow, d, sel.theta[d]))  # type: ignore[arg-type]
            direction.setdefault("own_model", {})[d] = _figures(own, own_ceiling)
        figures["directions"][name] = direction
    return _render(figures, rows_cv, rows_out), figures


def _nested_text(figures: dict[str, Any]) -> str:
    """Per direction: the margins nested cross-validation picked (D230) and the nested figures at them."""

    def at(summary: dict[str, Any]) -> str:
        figs = summary["by_margin"][f"{summary['margin']:g}"]
        return f"margin {summary['margin']:g}" + ("" if summary["met"] else " (none meets the budget)") + ": " + ", ".join(
            f"{d} {_pct(x['share_of_ceiling'])} at {x['detours_per_episode']:.2f} (+1 SE {x['bound']:.2f})"
            for d, x in figs.items())  # fmt: skip

    return (
        "The margin (standard errors over the folds that a candidate's detours must keep under the budget) is "
        "picked by nested cross-validation over the same folds (`toolshift.flows.nested`, D230: each fold scored by "
        "the choice made with it left out of the choice; the margin whose nested detours plus one standard error "
        "meet the budget with the highest nested share, ties to the larger), for the walk ranks, prior and θ and "
        "then per decider for the rule picked overall. Nested figures at the picked margins: "
        + "; ".join(f"{k}: θ table, {at(v['nested'])}; rule picked overall, "
                    + ", ".join(f"{d} {at(v['rule_nested'][d])}" for d in ORDER)
                    for k, v in figures["directions"].items())
        + "."
    )  # fmt: skip


def _render(figures: dict[str, Any], rows_cv: list[list[str]], rows_out: list[list[str]]) -> str:
    lines = ["## BFCL v4 multi-turn, across models\n",
             f"Source: BFCL's own result files of gpt-oss-120b and gpt-oss-20b served by vLLM (run `{RUN}`, base, "
             f"miss_func and miss_param; github.com/bbrowning/bfcl-vllm-results at {figures['commit']}, not committed: "
             "`toolshift flows report --bfcl CHECKOUT`), each model converted on its own by `toolshift.traces.bfcl` "
             "(one catalog fingerprint, BFCL's function docs). Tasks split by `toolshift.traces.split` over both "
             "models' task ids, so a task is held out for both. A flow is learned on one model's training tasks "
             "(every run: the result files carry no verdict) and replayed on the other model's held-out tasks. "
             f"Record bindings, walk ranks, θ and the rule are chosen by {FOLDS}-fold cross-validation by task over the learning "
             f"model's training tasks only, with the goal's budget ({MAX_DETOURS:g} detours an episode); the other "
             "model's runs are never read to choose. In bold, the rule cross-validation picks overall (the family whose "
             "chosen candidate saves the largest share within the budget; ties: fewer detours, then the simpler "
             "family). Intervals are 95%, from a bootstrap over tasks.\n",
             _table(("Direction", "Decider", "Chosen on training", "Cross-validation: share / detours"), rows_cv), "",
             _nested_text(figures), "",
             _table(("Direction", "Decider", "Rule", "Cross-validation: share / detours",
                     "Held out, other model: share of the ceiling (95% CI)", "Detours per episode"), rows_out), ""]  # fmt: skip
    lines.append(
        "Held-out ceilings: " + "; ".join(f"{k}: {100 * v['ceiling']:.1f}% of {v['turns']:,} turns "
                                            f"({v['test_episodes']} episodes)" for k, v in figures["directions"].items())
        + ". The same flows on the learning model's own held-out tasks, at the chosen θ: "
        + "; ".join(f"{k}: " + ", ".join(f"{d} {_pct(x['share_of_ceiling'])} at {x['detours_per_episode']:.2f}"
                                         for d, x in v["own_model"].items()) for k, v in figures["directions"].items())
        + ".\n"
    )  # fmt: skip
    goal = [
        (k, label, x)
        for k, v in figures["directions"].items()
        for label, x in v["rules"].items()
        if not label.split(": ", 1)[1].startswith("before")
    ]
    met = [
        f"{k}, {label}"
        for k, label, x in goal
        if x["share_of_ceiling"] >= 0.35 and x["detours_per_episode"] <= 0.3
    ]
    picks = "; ".join(
        f"{k}, {label}: {_pct(v['rules'][label]['share_of_ceiling'])} at {v['rules'][label]['detours_per_episode']:.2f}"
        for k, v in figures["directions"].items()
        for label in v.get("chosen", {}).values()
    )
    lines.append(
        "**Against the goal (≥ 35% of the ceiling at ≤ 0.3 detours an episode, learned on one model, held out on the "
        "other).** " + ("Met by " + "; ".join(met) + "." if met else "Not met by any chosen rule.")
        + (f" The rules picked overall: {picks}." if picks else "")
        + " Walk ranks and prior chosen: "
        + "; ".join(f"{k}: {v['walk_ranks']}, {v['walk_prior']:g}" for k, v in figures["directions"].items())
        + ". Format 5's binding options (record bindings, integer bindings, fallback sources), cross-validated in "
        "every combination (mean chosen share of the two deciders): "
        + "; ".join(f"{k}: " + ", ".join(f"{r} {_pct(x)}" for r, x in v["crossval_bindings"].items())
                    + f" (kept: {_options(v['records'], v['ints'], v['fallbacks'])})"
                    for k, v in figures["directions"].items())
        + ". The kept flow cross-validated again with each combination of flow format 6's options (asks: after a "
        "user message, the reads it asks for by name, `toolshift.flows.asks`; older outputs: an argument bound "
        "from the output before the most recent one of its source), kept only where the mean chosen share rises: "
        + "; ".join(f"{k}: " + ", ".join(f"{n} {_pct(x)}" for n, x in v["format6_crossval"].items())
                    + f" (kept: {format6_name(v['asks'], v['older'])})" for k, v in figures["directions"].items())
        + ". Then with named walks (flow format 7, `toolshift.flows.named`: a listing value the user's messages "
        "name walked first, those decisions counted apart), kept only where the mean chosen share rises: "
        + "; ".join(f"{k}: without {_pct(v['named_crossval']['without'])}, named walks "
                    f"{_pct(v['named_crossval']['named'])} (kept: {'named walks' if v['named'] else 'none'})"
                    for k, v in figures["directions"].items())
        + ".\n"
    )  # fmt: skip
    return "\n".join(lines)
