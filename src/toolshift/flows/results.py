"""The real-data results page (docs/results/flows.md): τ-bench airline (GPT-4o), WorkBench (GPT-4, Claude-2) and,
with `--bfcl`, BFCL v4 multi-turn across two models (toolshift.flows.results_bfcl).

Everything on the page is computed here from ../shared/data by `toolshift flows report`; nothing is typed in
except the seed's reference figures, which are quoted as such.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from toolshift import terminal
from toolshift.errors import BadInputError
from toolshift.fileio import write_text_atomic
from toolshift.flows.calibration import reliability_diagram
from toolshift.flows.ceiling import TurnAnatomy, anatomy, repeated_reads
from toolshift.flows.crossval import Selection, choose_flow, crossval, format6_name
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import Flow
from toolshift.flows.pricing import Price, value_replay
from toolshift.flows.replay import ReplayResult, replay
from toolshift.flows.results_crossval import crossval_section, pct, table
from toolshift.flows.results_named import named_walks_text
from toolshift.flows.results_notes import explain
from toolshift.flows.results_rule import airline_rule_section, workbench_rule_rows
from toolshift.flows.statistics import compare_calibration, saved_difference, saved_share, share_of_ceiling
from toolshift.flows.timeline import Catalog, Timeline, Unlisted, timelines
from toolshift.traces.split import split_tasks

THETA = 0.3
GOAL_DETOURS = 0.5
"""The goal's detour budget an episode (issue 27: ≥ 75% of the ceiling at ≤ 0.5 detours an episode)."""
ORDER = ("reach", "next-step")
SWEEP = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7)
PRICES = (("Input tokens alone (the paper's)", "0,1,1"), ("Output 5×, nothing cached", "5,1,1"),
          ("Anthropic's: output 5×, cache reads 0.1×, writes 1.25×", "5,0.1,1.25"),
          ("OpenAI's: output 8×, cache reads 0.1×, writes 1×", "8,0.1,1"))  # fmt: skip
AIRLINE_FILE = "tau-bench/gpt-4o-airline.trials-0-1.json"
WORKBENCH_DIR = "workbench/results"
COMMAND = "toolshift flows report --out docs/results/flows.md"
BFCL_CLONE = "git clone https://github.com/bbrowning/bfcl-vllm-results {bfcl}"
"""The header's clone, with the checkout's path as `--bfcl` was given it (`{bfcl}`)."""
BFCL_DEFAULT = "/tmp/bfcl-vllm-results"


def default_data_dir() -> Path:
    """`data/` of the shared folder (`toolshift.shared.shared_root`)."""
    from toolshift.shared import shared_root

    return shared_root() / "data"


def ci(interval: Any, digits: int = 1, points: bool = False) -> str:
    if interval.n == 0 or interval.mean != interval.mean:
        return "–"
    if points:
        return f"{100 * interval.mean:+.2f} points ({100 * interval.low:+.2f} – {100 * interval.high:+.2f})"
    return f"{100 * interval.mean:.{digits}f}% ({100 * interval.low:.{digits}f} – {100 * interval.high:.{digits}f})"


@dataclass
class Split:
    train: list[Timeline]
    test: list[Timeline]


def split(tl: list[Timeline]) -> Split:
    which = split_tasks(t.task_id for t in tl)
    return Split(
        [t for t in tl if which[t.task_id] == "train"], [t for t in tl if which[t.task_id] == "test"]
    )


def anatomy_row(name: str, a: TurnAnatomy) -> list[str]:
    return [name, str(a.episodes), str(a.turns), pct(a.share("replies")), pct(a.share("write_turns")),
            pct(a.share("read_turns")), pct(a.share("ceiling")), pct(a.share("with_words")),
            pct(a.share("with_constants"))]  # fmt: skip


ANATOMY_HEADER = ("Episodes", "Episodes", "Turns", "Replies", "Writes", "Reads", "Ceiling", "With the user's words",
                  "With constants")  # fmt: skip


def replay_rows(results: dict[str, ReplayResult], ceiling: dict[str, int]) -> list[list[str]]:
    rows = []
    for kind, r in results.items():
        s = r.summary()
        rows.append([kind, str(s["turns"]), str(s["saved_turns"]), ci(saved_share(r)), ci(share_of_ceiling(r, ceiling), 0),
                     str(s["lookups_made"]), str(s["lookups_used"]), str(s["detours"]), f"{s['detours_per_episode']:.2f}"])  # fmt: skip
    return rows


REPLAY_HEADER = ("Decider", "Turns", "Saved turns", "Saved (95% CI)", "Share of the ceiling (95% CI)",
                 "Lookups made", "Used", "Detours", "Detours per episode")  # fmt: skip


def run_both(
    test: list[Timeline], flow: Flow, theta: float | dict[str, float], **kw: Any
) -> dict[str, ReplayResult]:
    """Both deciders, at one θ or at each decider's own."""
    at = theta if isinstance(theta, dict) else dict.fromkeys(ORDER, theta)
    return {kind: replay(test, Decider(flow, kind, at[kind]), **kw) for kind in ORDER}


def options(
    records: bool,
    ints: bool,
    fallbacks: bool = False,
    asks: bool = False,
    older: bool = False,
    named: bool = False,
) -> str:
    """The format-5 binding options (and format 6's and 7's) a flow takes, as a phrase to append (empty for none)."""
    return (
        (", record bindings" if records else "")
        + (", integer bindings" if ints else "")
        + (", fallback sources" if fallbacks else "")
        + (", asks" if asks else "")
        + (", older outputs" if older else "")
        + (", named walks" if named else "")
    )


def airline_section(data: Path, out_dir: Path, console: Console) -> tuple[str, dict[str, Any]]:
    from toolshift.traces.taubench import convert_taubench_v1, taubench_domain

    path = data / AIRLINE_FILE
    if not path.exists():
        raise BadInputError("τ-bench airline trajectories not found", source=str(path))
    conv = convert_taubench_v1(path)
    catalog = Catalog.of(conv.catalogs[taubench_domain("airline")])
    unlisted = Unlisted()
    tl = timelines(conv.episodes, catalog, unlisted)
    sp = split(tl)
    # Choose on the training tasks alone, before any held-out replay.
    tried: dict[tuple[bool, bool, bool, bool], Selection] = {}
    format6: dict[str, float] = {}
    named: dict[str, float] = {}
    nested: dict[str, Any] = {}  # the margin chosen by nested cross-validation (D230)
    cv, sel, every = choose_flow(sp.train, catalog, max_detours=GOAL_DETOURS, tried=tried, format6=format6,
                                 named=named, nested=nested)  # fmt: skip
    ranks, prior, records = sel.walk_ranks, sel.walk_prior, sel.records
    opts = sel.options()
    # What the chosen flow could take at all on the training folds: at θ = 0.05 nearly every bound lookup is made.
    floor = crossval(sp.train, catalog, walk_ranks=(ranks,), thetas=(0.05,), walk_priors=(prior,),
                     learn_from_all=every, **opts)  # fmt: skip
    console.print(f"airline: cross-validation chose walk ranks {ranks}, prior {prior:g}, θ {sel.theta}")
    flow = learn_flow(
        sp.train,
        catalog,
        walk_ranks=ranks,
        walk_prior=prior,
        learn_from_all=every,
        **opts,
    )
    previous = learn_flow(sp.train, catalog)
    flow_other = learn_flow(sp.train, catalog, learn_from_all=not every, walk_ranks=ranks, walk_prior=prior,
                            **opts)  # fmt: skip
    flow_records = learn_flow(sp.train, catalog, walk_ranks=ranks, walk_prior=prior, learn_from_all=every,
                              **(opts | {"records": not records}))  # fmt: skip
    flow_constants = learn_flow(sp.train, catalog, constants=True, walk_ranks=ranks, walk_prior=prior, **opts)
    flow_named = learn_flow(sp.train, catalog, walk_ranks=ranks, walk_prior=prior, learn_from_all=every,
                            **(opts | {"named": not sel.named}))  # fmt: skip
    total, per_episode = anatomy(sp.test)
    ceiling = {e: a.ceiling for e, a in per_episode.items()}
    ceiling_turns = {e: a.ceiling_turns.get(e, []) for e, a in per_episode.items()}
    console.print(
        f"airline: {len(sp.train)} train / {len(sp.test)} test episodes; ceiling {pct(total.share('ceiling'))}"
    )

    main = {kind: replay(sp.test, Decider(flow, kind, sel.theta[kind]), weigh_all=True) for kind in ORDER}
    before = run_both(sp.test, previous, THETA)
    diff = saved_difference(main["reach"], main["next-step"])
    figures: dict[str, Any] = {"ceiling": total.share("ceiling"), "turns": total.turns,
                               "replies": total.share("replies"), "reads": total.share("read_turns"),
                               "train_successful": flow.learned_from.episodes, "train_episodes": len(sp.train), "walk_ranks": ranks, "walk_prior": prior,
                               "learn_from_all": every, **opts, "format6_crossval": format6, "named_crossval": named,
                               "theta": sel.theta, "format": flow.format, "nested": nested["choice"].summary(),
                               "crossval_floor": {d: {"share_of_ceiling": floor.row(d, ranks, 0.05, prior).share_of_ceiling,
                                                      "detours_per_episode": floor.row(d, ranks, 0.05, prior).detours_per_episode}
                                                  for d in ORDER},
                               "crossval": {d: {"share_of_ceiling": b.share_of_ceiling,
                                                "detours_per_episode": b.detours_per_episode}
                                            for d, b in sel.best.items()},
                               "crossval_previous": {d: {"share_of_ceiling": cv.row(d, 0, THETA).share_of_ceiling,
                                                         "detours_per_episode": cv.row(d, 0, THETA).detours_per_episode}
                                                     for d in ORDER}}  # fmt: skip
    with_records = flow if records else flow_records
    figures["record_bindings"] = {
        name: t.record.model_dump() for name, t in with_records.tools.items() if t.record
    }
    figures["tried"] = {f"{'every run' if k else 'successful runs'}{options(rec, i, fb)}":
                        {d: t.best[d].share_of_ceiling if d in t.best else None for d in ORDER}
                        for (k, rec, i, fb), t in sorted(tried.items())}  # fmt: skip
    for kind, r in main.items():
        figures[kind] = r.summary() | {"share_of_ceiling": r.saved / total.ceiling if total.ceiling else 0.0}
    for kind, r in main.items():
        by_site: dict[str, int] = {}
        for x in r.log:
            if x.made and x.detour:
                by_site[x.site] = by_site.get(x.site, 0) + 1
        figures[kind]["detours_by_site"] = dict(sorted(by_site.items(), key=lambda kv: (-kv[1], kv[0])))
    for kind, r in before.items():
        figures.setdefault("previous", {})[kind] = r.summary() | {
            "share_of_ceiling": r.saved / total.ceiling if total.ceiling else 0.0
        }

    lines = ["## τ-bench airline, GPT-4o\n",
             f"Source: `{AIRLINE_FILE}` (trials 0 and 1 of the 50 tasks, converted by `toolshift.traces.taubench`). "
             f"Tasks split by `toolshift.traces.split` (positions 2, 5, 7, 9 of every ten held out): the flow is learned "
             f"from the {len(sp.train)} training episodes ({sum(t.success for t in sp.train)} successful, "
             f"{len({t.task_id for t in sp.train})} tasks) and replayed on the {len(sp.test)} held-out episodes "
             f"({len({t.task_id for t in sp.test})} tasks). {unlisted.describe().capitalize()}. "
             "Intervals are 95%, from a bootstrap over tasks (a task's episodes drawn together).\n",
             crossval_section(cv, sel, nested["choice"]),
             "Cross-validated the same way, a flow learned from the successful training runs and one learned from "
             "every training run (`--learn-from-all`; the habit and walks then count failed runs too), each with "
             "every combination of three binding options of flow format 5: record bindings (`--records`: a read's "
             "arguments bound together from one record of an earlier output, its walk over those records), integer "
             "bindings (`--ints`: integer arguments bound to integer leaves, as strings are) and fallback sources "
             "(`--fallbacks`: a bound argument's next sources, tried when its own is not in view); the one whose "
             "chosen shares average higher is kept (ties: successful runs, then fewer options): "
             f"{'every run' if every else 'the successful runs'}{options(**opts) or ', no option'} (the "
             "table above is its). Chosen shares, reach / next-step: "
             + "; ".join(f"{'every run' if k else 'successful runs'}{options(rec, i, fb)}: walk ranks "
                         f"{t.walk_ranks}, prior {t.walk_prior:g}, "
                         + " / ".join(pct(t.best[d].share_of_ceiling, 0) + f" at {t.best[d].detours_per_episode:.2f}"
                                      if d in t.best else "none" for d in ORDER)
                         for (k, rec, i, fb), t in sorted(tried.items()))
             + ". The kept flow cross-validated again with flow format 6's options, each combination: asks "
             "(`--asks`: after a user message, the reads it asks for by name, `toolshift.flows.asks`) and older "
             "outputs (`--older`: an argument bound from the output before the most recent one of its source), "
             "kept only where the two deciders' chosen shares average strictly higher: "
             + ", ".join(f"{k} {pct(v, 0)}" for k, v in format6.items())
             + f" (kept: {format6_name(sel.asks, sel.older)}). Then with named walks (`--named`, flow format 7, "
             "`toolshift.flows.named`: where the user's messages name values of a listing the agent walks, the "
             "walk passes a named value first and counts those decisions apart, and the plain walk counts only "
             "the decisions whose listing the user named nothing of), kept likewise only where strictly higher: "
             f"without {pct(named['without'], 1)}, named walks {pct(named['named'], 1)} "
             f"(kept: {'named walks' if sel.named else 'none'}).\n",
             "### Turn anatomy of the held-out episodes\n",
             table(("", *ANATOMY_HEADER[1:]), [anatomy_row("GPT-4o, test tasks", total)]), "",
             f"### Both deciders at the chosen θ (walk ranks {ranks}; reach θ = {sel.theta['reach']:g}, "
             f"next-step θ = {sel.theta['next-step']:g})\n",
             "The one replay of the held-out tasks with the cross-validated choice.\n",
             table(REPLAY_HEADER, replay_rows(main, ceiling)), "",
             f"Reach minus next-step, paired over tasks: {ci(diff, points=True)}.\n",
             f"The previous flow (format 2, no walks) at θ = {THETA}, on the same held-out tasks:\n",
             table(REPLAY_HEADER, replay_rows(before, ceiling)), ""]  # fmt: skip

    # Seed comparison.
    r, n = main["reach"].summary(), main["next-step"].summary()
    pr, pn = figures["previous"]["reach"], figures["previous"]["next-step"]
    lines += ["### Beside the previous flow and the seed\n", table(
        ("", "Ceiling", "Saved, reach / next-step", "Share of the ceiling, reach / next-step",
         "Detours per episode, reach / next-step"),
        [["Seed (GPT-4o + Claude 3.5 Sonnet, flows from τ²-bench runs; θ = 0.3)", "24.3%", "17.1% / 17.1%",
          "70% / 70%", "0.41 / 0.41"],
         [f"toolshift before: format 2, no walks, θ = {THETA}", pct(total.share("ceiling")),
          f"{pct(pr['saved_share'])} / {pct(pn['saved_share'])}",
          f"{pct(pr['share_of_ceiling'], 0)} / {pct(pn['share_of_ceiling'], 0)}",
          f"{pr['detours_per_episode']:.2f} / {pn['detours_per_episode']:.2f}"],
         [f"toolshift now: format {flow.format}, walk ranks {ranks}, θ = {sel.theta['reach']:g} / {sel.theta['next-step']:g} "
          "(chosen by cross-validation)", pct(total.share("ceiling")),
          f"{pct(r['saved_share'])} / {pct(n['saved_share'])}",
          f"{pct(figures['reach']['share_of_ceiling'], 0)} / {pct(figures['next-step']['share_of_ceiling'], 0)}",
          f"{r['detours_per_episode']:.2f} / {n['detours_per_episode']:.2f}"]]), ""]  # fmt: skip

    # θ sweep with utility at input-token prices.
    rate = Price.parse("0,1,1")
    sweep_rows, sweep_data = [], {}
    for theta in SWEEP:
        both = run_both(sp.test, flow, theta)
        row = [f"{theta:g}"]
        for kind in ORDER:
            rr = both[kind]
            u = value_replay(rr, sp.test, rate)
            sweep_data[(kind, theta)] = (rr, u)
            figures.setdefault("sweep", []).append(
                {"decider": kind, "theta": theta, "saved_share": rr.saved / rr.turns,
                 "share_of_ceiling": rr.saved / total.ceiling if total.ceiling else 0.0,
                 "detours_per_episode": rr.detours / len(rr.episodes), "utility": u.utility}
            )  # fmt: skip
            row += [pct(rr.saved / rr.turns), pct(rr.saved / total.ceiling, 0) if total.ceiling else "–",
                    f"{rr.detours / len(rr.episodes):.2f}", f"{u.utility / 1000:,.1f}k"]  # fmt: skip
        sweep_rows.append(row)
    lines += ["### θ sweep\n", "Utility = tokens of the saved turns − tokens of the detours, at input-token prices "
              "(`--price 0,1,1`); tokens estimated from message lengths (the τ-bench file records no usage).\n",
              table(("θ", "Saved, reach", "Of ceiling", "Detours/ep", "Utility", "Saved, next-step", "Of ceiling",
                     "Detours/ep", "Utility"), sweep_rows), ""]  # fmt: skip

    # Pricing.
    price_rows = []
    for label, spec in PRICES:
        p = Price.parse(spec)
        v = value_replay(main["reach"], sp.test, p, ceiling_turns)
        best = max((value_replay(sweep_data[("reach", th)][0], sp.test, p).utility, th) for th in SWEEP)
        at = value_replay(main["reach"], sp.test, p).utility
        kept = at / best[0] if best[0] > 0 else float("nan")
        price_rows.append([label, f"`{spec}`", f"{v.beta:,.0f}", f"{v.delta:,.0f}", f"{v.theta_star:.2f}",
                           f"{best[1]:g}", pct(kept, 0)])  # fmt: skip
    lines += ["### Pricing: θ* = δ/(β+δ)\n",
              f"β is the average saved turn of the reach replay at θ = {sel.theta['reach']:g} and δ its average detour, in uncached-input "
              "token equivalents (tokens estimated at four characters a token: the file records no usage). "
              "`--price OUT,READ,WRITE` counts output and cache reads and writes as the seed describes.\n",
              table(("Pricing", "--price", "β (saved turn)", "δ (detour)", "θ*", "Best swept θ (reach)",
                     f"Utility kept at θ = {sel.theta['reach']:g}"), price_rows), ""]  # fmt: skip

    # Calibration.
    comp = compare_calibration(main["reach"].log, main["next-step"].log)
    png = out_dir / "flows-reliability-airline.png"
    reliability_diagram({k: ([x.score for x in v.log], [x.used for x in v.log]) for k, v in main.items()}, png,
                        "τ-bench airline, GPT-4o: lookup scores")  # fmt: skip

    def fmt_auc(c: Any) -> str:
        return "–" if c.auc is None else f"{c.auc:.3f}"

    def signed(i: Any) -> str:
        return "–" if i is None or i.mean != i.mean else f"{i.mean:+.3f} ({i.low:+.3f} – {i.high:+.3f})"

    lines += ["### Calibration (`--explore 0`: every lookup weighed, scored against use before the next write)\n",
              table(("Decider", "Lookups weighed", "Used", "ECE", "Brier", "AUC"),
                    [[k, str(c.weighed), pct(c.used_rate), f"{c.ece:.3f}", f"{c.brier:.3f}", fmt_auc(c)]
                     for k, c in (("reach", comp.a), ("next-step", comp.b))]), "",
              f"Reach minus next-step, paired over tasks: ECE {signed(comp.ece)}, Brier {signed(comp.brier)}, "
              f"AUC {signed(comp.auc)}.\n", f"![reliability diagram]({png.name})\n"]  # fmt: skip
    rule_text, figures["rule"] = airline_rule_section(
        sp.train,
        sp.test,
        catalog,
        flow,
        ranks,
        sel.theta,
        out_dir,
        walk_prior=prior,
        learn_from_all=every,
        **opts,
    )
    lines += [rule_text]

    # Ablations.
    at = sel.theta
    ablations = [
        (
            f"The flow above ({'every run' if every else 'successful runs'}, walk ranks {ranks}, prior {prior:g}, "
            f"{options(**opts).lstrip(', ') + ', ' if any(opts.values()) else ''}chained scores multiplied)",
            main,
        ),
        ("Format 2: no walks (the previous flow)", run_both(sp.test, previous, at)),
        (
            "Without record bindings (format 3)"
            if records
            else "With record bindings (format 5, `--records`)",
            run_both(sp.test, flow_records, at),
        ),
        (
            "Learned from the successful training runs only"
            if every
            else "Learned from every training run (`--learn-from-all`)",
            run_both(sp.test, flow_other, at),
        ),
        (
            "Without named walks (format 6)" if sel.named else "With named walks (format 7, `--named`)",
            run_both(sp.test, flow_named, at),
        ),
        ("Chained lookups scored alone (`--no-chain-prior`)", run_both(sp.test, flow, at, chain_prior=False)),
        ("Also deciding after user messages (`--user-sites`)", run_both(sp.test, flow, at, user_sites=True)),
        ("With constants (`--constants`)", run_both(sp.test, flow_constants, at)),
        (
            "Format 1 (no list bindings, no walks)",
            run_both(sp.test, learn_flow(sp.train, catalog, flow_format=1), at),
        ),
    ]
    ab_rows = []
    for label, res in ablations:
        row = [label]
        for kind in ORDER:
            rr = res[kind]
            row += [
                f"{pct(rr.saved / rr.turns)} ({pct(rr.saved / total.ceiling, 0)})",
                f"{rr.detours / len(rr.episodes):.2f}",
            ]
        ab_rows.append(row)
    lines += [f"### Variants at the chosen θ (reach {at['reach']:g}, next-step {at['next-step']:g})\n",
              table(("Flow / replay", "Saved, reach (of ceiling)", "Detours/ep", "Saved, next-step (of ceiling)",
                     "Detours/ep"), ab_rows), ""]  # fmt: skip

    rep = repeated_reads(tl)
    lines += ["### Repeated reads (every episode: same read, same arguments, no write of the agent's between)\n",
              table(("Agent", "Reads", "Made again", "Share"),
                    [[a, str(x.reads), str(x.repeated), pct(x.repeated / x.reads if x.reads else 0.0)] for a, x in sorted(rep.items())]),
              ""]  # fmt: skip

    lines += ["### The learned flow\n", table(("Read", "Calls", "Required", "Bound from", "Binding chance"), [
        [name, str(t.calls), ", ".join(t.required) or "—",
         "; ".join([f"{a} ← {b.source} `{b.path}` ({b.agree}/{b.n})" for a, b in {**t.bindings, **t.lists}.items()]
                   + [f"{a} unbound" for a in t.unbound]) or "—", f"{t.binding_chance():.2f}"]
        for name, t in flow.tools.items()]), ""]  # fmt: skip
    walk_rows = []
    for name, t in flow.tools.items():
        if t.walk is None:
            continue
        for site, counts in t.walk.sites.items():
            walk_rows.append(
                [
                    name,
                    f"`{site}`",
                    *(
                        f"{c.reach}/{c.n} ({t.walk.chance(site, r, 'reach') or 0:.2f}) · {c.next}/{c.n}"
                        if c.n
                        else "—"
                        for r, c in enumerate(counts)
                    ),
                ]
            )
    if walk_rows:
        lines += ["### The learned walks\n",
                  f"Per site and rank (values of the listing already passed; the last column: {ranks - 1} or more): "
                  "reach count / sites seen (the reach walk chance) · next-step count / sites seen.\n",
                  table(("Read", "Site", *(f"Rank {k}" + ("+" if k == ranks - 1 else "") for k in range(ranks))),
                        walk_rows), ""]  # fmt: skip
    lines += named_walks_text(flow)
    return "\n".join(lines), figures


def workbench_section(data: Path, console: Console) -> tuple[str, dict[str, Any]]:
    from toolshift.traces.workbench import convert_workbench

    path = data / WORKBENCH_DIR
    if not path.exists():
        raise BadInputError("WorkBench results not found", source=str(path))
    conv = convert_workbench(path)
    by_domain: dict[str, list[Any]] = {}
    for e in conv.episodes:
        by_domain.setdefault(e.domain, []).append(e)
    anat_rows, replay_rows_, bare_rows = [], [], []
    totals = TurnAnatomy()
    sums = {(k, th): [0, 0, 0, 0] for k in ORDER for th in (0.3, 0.1)}
    per_decision = [0, 0, 0]
    figures: dict[str, Any] = {}
    all_tl: list[Timeline] = []
    test_all: list[Timeline] = []
    for domain in sorted(by_domain):
        catalog = Catalog.of(conv.catalogs[domain])
        unlisted = Unlisted()
        tl = timelines(by_domain[domain], catalog, unlisted)
        all_tl += tl
        sp = split(tl)
        test_all += sp.test
        verdicts = any(t.success for t in sp.train)
        flow = learn_flow(sp.train, catalog, learn_from_all=not verdicts)
        total, _ = anatomy(sp.test)
        totals.add(total)
        anat_rows.append(anatomy_row(domain, total))
        row = [domain, str(total.turns), pct(total.share("ceiling"))]
        for th in (0.3, 0.1):
            for kind in ORDER:
                rr = replay(sp.test, Decider(flow, kind, th))
                acc = sums[(kind, th)]
                acc[0] += rr.saved
                acc[1] += rr.made
                acc[2] += rr.detours
                acc[3] += len(rr.episodes)
                row += [f"{rr.saved} / {rr.made} / {rr.detours}"]
        saved_, made_, detours_, rule_label = workbench_rule_rows(
            sp.train, sp.test, catalog, flow, not verdicts
        )
        for i, x in enumerate((saved_, made_, detours_)):
            per_decision[i] += x
        row += [f"{saved_} / {made_} / {detours_} ({rule_label})"]
        replay_rows_.append(row)
        narrowed = sorted(n for n, t in flow.tools.items() if t.bare is not None)
        nobare = learn_flow(sp.train, catalog, learn_from_all=not verdicts, count_bare=False)
        with_rule = replay(sp.test, Decider(flow, "reach", 0.1), weigh_all=True)
        without = replay(sp.test, Decider(nobare, "reach", 0.1), weigh_all=True)
        bare_made = sum(1 for x in with_rule.log if x.made and not x.arguments and x.tool in narrowed)
        bare_without = sum(1 for x in without.log if x.made and not x.arguments and x.tool in narrowed)
        bare_rows.append([domain, ", ".join(f"`{n}`" for n in narrowed) or "—",
                          "; ".join(f"{n.split('.')[-1]} {flow.tools[n].bare.bare}/{flow.tools[n].bare.calls}"
                                    for n in narrowed) or "—",  # type: ignore[union-attr]
                          str(bare_made), f"{bare_without} ({without.detours} detours, {without.saved} saved)"])  # fmt: skip
        figures[domain] = {"ceiling": total.share("ceiling"), "bare_made": bare_made, "learned_from_all": not verdicts,
                           "unlisted_calls": unlisted.calls}  # fmt: skip
        console.print(f"workbench {domain}: ceiling {pct(total.share('ceiling'))}, bare lookups {bare_made}")
    anat_rows.append(anatomy_row("all six", totals))
    for agent in sorted({t.agent for t in test_all}):
        agent_total, _ = anatomy([t for t in test_all if t.agent == agent])
        anat_rows.append(anatomy_row(f"all six, {agent}", agent_total))
    total_row = ["all six", str(totals.turns), pct(totals.share("ceiling"))]
    for th in (0.3, 0.1):
        for kind in ORDER:
            s, m, d, _ = sums[(kind, th)]
            total_row.append(f"{s} / {m} / {d}")
    total_row.append(" / ".join(map(str, per_decision)))
    replay_rows_.append(total_row)
    rep = repeated_reads(all_tl)
    figures["all"] = {"ceiling": totals.share("ceiling"), "saved_reach_0.3": sums[("reach", 0.3)][0],
                      "detours_reach_0.3": sums[("reach", 0.3)][2],
                      "per_decision_reach": dict(zip(("saved", "made", "detours"), per_decision, strict=True))}  # fmt: skip
    lines = ["## WorkBench, GPT-4 and Claude-2\n",
             f"Source: `{WORKBENCH_DIR}` (both agents, both tool sets, converted by `toolshift.traces.workbench`). "
             "Per domain, the flow is learned from the training tasks of both agents and replayed on the held-out "
             "tasks. " + (
                 "The converted episodes carry no success verdict (WorkBench judges by replaying writes on its "
                 "sandbox), so the flows learn from every training run (`--learn-from-all`).\n"
                 if all(f["learned_from_all"] for f in figures.values() if "learned_from_all" in f)
                 else "Flows learn from the successful training runs where the episodes carry a verdict, and from "
                 "every run in the domains where none does.\n"
             ),
             "### Turn anatomy of the held-out episodes\n", table(("Domain", *ANATOMY_HEADER[1:]), anat_rows), "",
             "### Saved turns / lookups made / detours\n",
             "The last column: reach with the threshold per decision on scores recalibrated per site, chosen per "
             "domain on its training tasks as for airline (λ of 1 or 1.5; one θ of 0.3 beside it), within 0.5 "
             "detours an episode.\n",
             table(("Domain", "Turns", "Ceiling", "Reach θ=0.3", "Next-step θ=0.3", "Reach θ=0.1", "Next-step θ=0.1",
                    "Reach, per decision, recalibrated"), replay_rows_), "",
             "### Searches the agent always narrows are never made bare\n",
             "Reads with no required argument that the agents sometimes called with one, their calls with none "
             "(bare / calls), and the lookups made with no argument at all at θ = 0.1 by the reach decider: with the "
             "bare-call chance (bare + 1)/(calls + 2), and, for comparison only, without it.\n",
             table(("Domain", "Narrowed searches", "Bare / calls in training", "Bare lookups made",
                    "Without the bare count"), bare_rows), "",
             "### Repeated reads\n",
             table(("Agent", "Reads", "Made again", "Share"),
                   [[a, str(x.reads), str(x.repeated), pct(x.repeated / x.reads if x.reads else 0.0)]
                    for a, x in sorted(rep.items())]), "",
             "An agent that repeats its own reads would likely repeat a lookup's too, so the turns a replay "
             "credits to it are upper bounds; " + "; ".join(
                 f"{a} made {pct(x.repeated / x.reads if x.reads else 0.0)} of its reads again" for a, x in sorted(rep.items())
             ) + ".\n",
             "### Beside the seed\n",
             table(("", "Ceiling", "Saved at θ = 0.3, reach / next-step", "Detours at θ = 0.3", "Bare searches made"),
                   [["Seed (14 agents of a 2026 re-run, flows from 10 others)", "3.5%", "0 / 0", "0", "0"],
                    ["toolshift (GPT-4 and Claude-2, flows from their training tasks)", pct(totals.share("ceiling")),
                     f"{sums[('reach', 0.3)][0]} / {sums[('next-step', 0.3)][0]}",
                     str(sums[("reach", 0.3)][2] + sums[("next-step", 0.3)][2]),
                     str(sum(f["bare_made"] for f in figures.values() if isinstance(f, dict) and "bare_made" in f))]]), "",
             "WorkBench's requests name every entity and date, so nearly every read's arguments come from the "
             "request, not from a result: the ceiling is small, and a flow that binds from results has almost "
             "nothing to take. With a search the agents always narrow never made bare, the flows make "
             f"{sums[('reach', 0.3)][1]} lookups at θ = 0.3 (reach; the seed's made none) and "
             f"{sums[('reach', 0.1)][1]} at θ = 0.1, of which {sums[('reach', 0.1)][2]} are detours.\n"]  # fmt: skip
    return "\n".join(lines), figures


def write_report(out: Path, data: Path, *, bfcl: Path | None = None, console: Console | None = None) -> Path:
    """Compute every table from the real data and write the page (and a JSON of its headline figures); with
    `bfcl` (a checkout of bfcl-vllm-results), the cross-model BFCL section too."""
    console = console or terminal.console()
    if not data.is_dir():
        raise BadInputError(
            "shared data folder not found (pass --data or set TOOLSHIFT_SHARED)", source=str(data)
        )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    airline, air_fig = airline_section(data, out.parent, console)
    workbench, wb_fig = workbench_section(data, console)
    bfcl_text, bfcl_fig = "", {}
    if bfcl is not None:
        from toolshift.flows.results_bfcl import bfcl_section

        bfcl_text, bfcl_fig = bfcl_section(Path(bfcl), console)
    else:
        bfcl_text = ("## BFCL v4 multi-turn, across models\n\nNot computed in this run: pass `--bfcl` a checkout of "
                     f"the published result files (`{BFCL_CLONE.format(bfcl=BFCL_DEFAULT)}`).\n")  # fmt: skip
    elapsed = time.perf_counter() - started
    head = [
        "# Flows on real runs",
        "",
        f"Generated by `{COMMAND}{f' --bfcl {bfcl}' if bfcl else ''}` from the repository root, with the real data in "
        "`../shared/data`"
        + (
            f" and the published BFCL result files cloned first (`{BFCL_CLONE.format(bfcl=bfcl)}`)"
            if bfcl
            else ""
        )
        + f" ({elapsed:.0f} s). "
        "Do not edit by hand: change the code in `src/toolshift/flows/` and run it again.",
        "",
        "What the rules are: seed 003 (replay from the record; a lookup counts as a saving only when the agent's own "
        "later call with the same arguments, before its next write, answers it; any other lookup is a detour). "
        "Decisions are made after each of the agent's calls and after each lookup's result; a chained lookup "
        "(one made on a lookup's result) is scored as its own score times its parent's. docs/formats.md (Flows) and "
        "docs/decisions.md give the file format and the choices.",
        "",
    ]
    explanation = explain(air_fig)
    text = "\n".join(head) + "\n" + airline + "\n" + explanation + "\n" + workbench + "\n" + bfcl_text + "\n"
    write_text_atomic(out, text)
    write_text_atomic(out.with_suffix(".json"), json.dumps({"airline": air_fig, "workbench": wb_fig, "bfcl": bfcl_fig},
                                                           indent=1, default=str) + "\n")  # fmt: skip
    return out
