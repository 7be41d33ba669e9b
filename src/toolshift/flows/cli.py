"""The `toolshift flows` commands: learn, crossval, replay, ceiling, calibrate, price, repeats and report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from toolshift import terminal
from toolshift.errors import BadInputError, report_file_errors
from toolshift.fileio import atomic_text, loads_json, read_text, write_text_atomic

app = typer.Typer(
    no_args_is_help=True, help="Learn an agent's lookups, decide them ahead of it, replay what they save."
)
console = terminal.console()

EpisodesArg = Annotated[
    list[Path],
    typer.Argument(
        help="Episode files (toolshift.episodes/1 JSONL), or folders of them: the catalog's domain is kept."
    ),
]
CatalogOpt = Annotated[
    Path, typer.Option("--catalog", help="The domain's tool catalog (toolshift.catalog/1).")
]
TasksOpt = Annotated[
    str, typer.Option("--tasks", help="Which tasks: all, train or test (40% held out, by task).")
]


def _tasks(value: str):
    if value not in ("all", "train", "test"):
        raise BadInputError(f"--tasks is all, train or test, not {value!r}", field="tasks")
    return value


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


@app.command()
def learn(
    episodes: EpisodesArg,
    catalog: CatalogOpt,
    out: Annotated[Path, typer.Option("--out", help="Where to write the flow (JSON).")],
    learn_from_all: Annotated[
        bool, typer.Option("--learn-from-all", help="Learn from every run, not only successful ones.")
    ] = False,
    constants: Annotated[
        bool, typer.Option("--constants", help="Learn arguments passed with one value every time.")
    ] = False,
    flow_format: Annotated[
        int | None,
        typer.Option(
            "--format",
            help="1 (no list bindings), 2 (no walks), 3 (no words), 4 (no records), 5, 6 or 7; default: the lowest "
            "that holds what was learned.",
        ),
    ] = None,
    walk_ranks: Annotated[
        int,
        typer.Option(
            "--walk-ranks",
            help="Learn walks over listings with this many rank buckets (0: none; "
            "`flows crossval` chooses it).",
        ),
    ] = 0,
    words: Annotated[
        bool,
        typer.Option(
            "--words", help="Also learn arguments read from the user's words (format 4; replay --picker)."
        ),
    ] = False,
    walk_prior: Annotated[
        float,
        typer.Option(
            "--walk-prior",
            help="Pseudo-sites of the walks' pooled prior (0: Laplace; `flows crossval` chooses it).",
        ),
    ] = 0.0,
    records: Annotated[
        bool,
        typer.Option(
            "--records",
            help="Bind a read's arguments together from one record of an earlier output where that agrees "
            "with the agent more often (format 5; `flows crossval --records` compares).",
        ),
    ] = False,
    ints: Annotated[
        bool,
        typer.Option("--ints", help="Bind integer arguments to integer leaves of results too (format 5)."),
    ] = False,
    fallbacks: Annotated[
        bool,
        typer.Option(
            "--fallbacks",
            help="Keep each binding's next sources, tried when its own is not in view (format 5).",
        ),
    ] = False,
    asks: Annotated[
        bool,
        typer.Option("--asks", help="Learn the reads a user message asks for by name (format 6)."),
    ] = False,
    older: Annotated[
        bool,
        typer.Option("--older", help="Bind from the output before the most recent one too (format 6)."),
    ] = False,
    named: Annotated[
        bool,
        typer.Option(
            "--named", help="Walk the listing values the user names first, counted apart (format 7)."
        ),
    ] = False,
    weigh: Annotated[
        str,
        typer.Option(
            "--weigh",
            help="episodes (each counts 1), tasks (an agent's trials of a task count once) or agents (and every "
            "agent alike); with tasks or agents the flow is format 8.",
        ),
    ] = "episodes",
    tasks: TasksOpt = "all",
) -> None:
    """Learn a flow: the habit at each site and each read's bindings."""
    from toolshift.flows.inputs import load_inputs
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.model import save_flow
    from toolshift.flows.weights import WEIGHTINGS, describe_agents

    if flow_format not in (None, 1, 2, 3, 4, 5, 6, 7, 8):
        raise BadInputError(f"--format is 1 to 8, not {flow_format}", field="format")
    if weigh not in WEIGHTINGS:
        raise BadInputError(f"--weigh is {', '.join(WEIGHTINGS)}, not {weigh!r}", field="weigh")
    inputs = load_inputs(episodes, catalog, _tasks(tasks))
    console.print(inputs.describe())
    flow = learn_flow(inputs.timelines, inputs.catalog, learn_from_all=learn_from_all, constants=constants,
                      flow_format=flow_format, unlisted=inputs.unlisted, source=", ".join(map(str, episodes)),
                      walk_ranks=walk_ranks, words=words, walk_prior=walk_prior, records=records, ints=ints,
                      fallbacks=fallbacks, asks=asks, older=older, named=named, weighting=weigh)  # fmt: skip
    save_flow(flow, out)
    table = Table(title=f"flow {out} (format {flow.format}, {flow.learned_from.episodes} episodes)")
    for col in ("tool", "calls", "required", "bound from", "binding chance"):
        table.add_column(col)
    for name, tool in flow.tools.items():
        bound = [
            f"{a}←{b.source}:{b.path}{' (the output before the newest)' if b.back else ''} ({b.agree:g}/{b.n:g})"
            for a, b in {**tool.bindings, **tool.lists}.items()
        ]
        bound += [f"{a}={c.value!r}" for a, c in tool.constants.items()]
        bound += [f"{a}: unbound" for a in tool.unbound]
        if tool.bare is not None:
            bound.append(f"bare {tool.bare.bare:g}/{tool.bare.calls:g}")
        if tool.walk is not None:
            bound.append(f"walk on {tool.walk.argument} at {len(tool.walk.sites)} sites")
        if tool.words is not None:
            bound.append(f"{tool.words.argument}←the user's words ({tool.words.agree:g}/{tool.words.n:g})")
        if tool.record is not None:
            r = tool.record
            fields = ", ".join(f"{a}←.{f}" for a, f in sorted(r.fields.items()))
            bound.append(f"{fields} of one {r.source}:{r.path} record ({r.agree:g}/{r.n:g})")
        for a, alts in tool.fallbacks.items():
            bound.append(
                f"{a} else " + " else ".join(f"{b.source}:{b.path} ({b.agree:g}/{b.n:g})" for b in alts)
            )
        table.add_row(name, f"{tool.calls:g}", ", ".join(tool.required) or "—", "; ".join(bound) or "—",
                      f"{tool.binding_chance():.2f}")  # fmt: skip
    for name, ask in flow.asks.items():
        console.print(f"asked: {name} by {' + '.join(ask.words)} ({ask.reach:g}/{ask.messages:g} messages)")
    console.print(table)
    console.print(describe_agents(flow.learned_from))


@app.command()
def crossval(
    episodes: EpisodesArg,
    catalog: CatalogOpt,
    tasks: TasksOpt = "train",
    learn_from_all: Annotated[
        bool, typer.Option("--learn-from-all", help="Learn from every run, not only successful ones.")
    ] = False,
    max_detours: Annotated[
        float, typer.Option("--max-detours", help="The detour budget per episode a choice must keep.")
    ] = 0.6,
    folds: Annotated[
        int | None,
        typer.Option("--folds", help="k-fold cross-validation by task (default: leave one task out)."),
    ] = None,
    records: Annotated[
        bool, typer.Option("--records", help="The flows bind record fields together (format 5).")
    ] = False,
    ints: Annotated[
        bool, typer.Option("--ints", help="The flows bind integer arguments too (format 5).")
    ] = False,
    fallbacks: Annotated[
        bool, typer.Option("--fallbacks", help="The flows' bindings keep fallback sources (format 5).")
    ] = False,
    asks: Annotated[
        bool, typer.Option("--asks", help="The flows propose the reads a user message asks for (format 6).")
    ] = False,
    older: Annotated[
        bool, typer.Option("--older", help="The flows bind from older outputs too (format 6).")
    ] = False,
    named: Annotated[
        bool,
        typer.Option("--named", help="The flows' walks take the values the user names first (format 7)."),
    ] = False,
    nested: Annotated[
        bool, typer.Option("--nested", help="Pick the budget's margin by nested cross-validation (D230).")
    ] = False,
) -> None:
    """Choose walk ranks and each decider's θ by leave-one-task-out over the training tasks only."""
    from rich.progress import track

    from toolshift.flows.crossval import crossval as run_crossval
    from toolshift.flows.inputs import load_inputs

    chosen = _tasks(tasks)
    if chosen != "train":
        console.print(f"[yellow]cross-validating on --tasks {chosen}: choose on training tasks only[/yellow]")
    inputs = load_inputs(episodes, catalog, chosen)
    console.print(inputs.describe())
    n_tasks = len({t.task_id for t in inputs.timelines})
    steps = iter(track(range(n_tasks), description="folds", console=console, transient=True))
    cv = run_crossval(inputs.timelines, inputs.catalog, learn_from_all=learn_from_all, max_detours=max_detours,
                      folds=folds, progress=lambda: next(steps, None), records=records,
                      ints=ints, fallbacks=fallbacks, asks=asks, older=older, named=named)  # fmt: skip
    how = "leave-one-task-out" if folds is None else f"{folds}-fold by task"
    table = Table(title=f"{how} over {cv.folds} folds ({cv.episodes} episodes): share of the "
                  "ceiling / detours per episode")  # fmt: skip
    table.add_column("decider")
    table.add_column("walk ranks")
    table.add_column("prior")
    for th in cv.thetas:
        table.add_column(f"θ={th:g}")
    for d in cv.deciders:
        for k, p in cv.flows():
            cells = [cv.row(d, k, th, p) for th in cv.thetas]
            table.add_row(
                d,
                str(k),
                f"{p:g}",
                *(f"{_pct(c.share_of_ceiling)} / {c.detours_per_episode:.2f}" for c in cells),
            )
    console.print(table)
    sel = cv.select()
    if nested:
        from toolshift.flows.nested import select_nested

        cv, sel, picked = select_nested(cv)
        for m, figs in picked.by_margin.items():
            console.print(f"margin {m:g}, nested: " + ", ".join(f"{d} {_pct(f.share_of_ceiling)} at "
                          f"{f.detours_per_episode:.2f}" for d, f in figs.items()))  # fmt: skip
        console.print(f"margin picked by nested cross-validation: {picked.margin:g}")
    for d, th in sel.theta.items():
        b = sel.best.get(d)
        figures = (
            f"{_pct(b.share_of_ceiling)} of the ceiling at {b.detours_per_episode:.2f} detours"
            if b
            else "none within budget"
        )
        console.print(f"chosen for {d}: --walk-ranks {sel.walk_ranks} --walk-prior {sel.walk_prior:g}, θ = {th:g} "
                      f"({figures})")  # fmt: skip


@app.command()
def replay(
    episodes: EpisodesArg,
    catalog: CatalogOpt,
    flow: Annotated[Path, typer.Option("--flow", help="A flow learned for this catalog.")],
    decider: Annotated[str, typer.Option("--decider", help="reach, next-step or both.")] = "both",
    threshold: Annotated[float, typer.Option("--threshold", help="Make lookups scoring at least θ.")] = 0.3,
    explore: Annotated[
        float | None,
        typer.Option(
            "--explore", help="Log every lookup weighed; > 0 also makes one below θ with this chance."
        ),
    ] = None,
    log: Annotated[
        Path | None, typer.Option("--log", help="Decision log (JSONL) when --explore is given.")
    ] = None,
    tasks: TasksOpt = "all",
    user_sites: Annotated[
        bool, typer.Option("--user-sites", help="Also decide after user messages.")
    ] = False,
    chain_prior: Annotated[
        bool,
        typer.Option(
            "--chain-prior/--no-chain-prior", help="Score a chained lookup by its parent's score too."
        ),
    ] = True,
    json_out: Annotated[
        Path | None, typer.Option("--json-out", help="Also write the summary as JSON here.")
    ] = None,
    picker: Annotated[
        str | None,
        typer.Option("--picker", help="Read format-4 arguments from the user's words: pattern or embedded."),
    ] = None,
    rule: Annotated[
        Path | None,
        typer.Option(
            "--rule", help="A decision rule from `flows price --choose-rule` (replaces --threshold)."
        ),
    ] = None,
) -> None:
    """Replay the record with a flow: turns saved, lookups made and used, detours, share of the ceiling."""
    from toolshift.flows.ceiling import anatomy
    from toolshift.flows.decide import DECIDERS, Decider
    from toolshift.flows.inputs import load_inputs
    from toolshift.flows.model import load_flow
    from toolshift.flows.replay import log_rows
    from toolshift.flows.replay import replay as run_replay
    from toolshift.flows.statistics import saved_difference, saved_share, share_of_ceiling

    kinds = DECIDERS if decider == "both" else (decider,)
    if any(k not in DECIDERS for k in kinds):
        raise BadInputError(f"--decider is reach, next-step or both, not {decider!r}", field="decider")
    chosen_rule = None
    if rule is not None:
        from toolshift.flows.rule import load_rule

        chosen_rule, rule_decider = load_rule(rule)
        if decider == "both":
            kinds = (rule_decider,)  # type: ignore[assignment]
        elif decider != rule_decider:
            raise BadInputError(f"the rule was chosen for {rule_decider}, not {decider}", source=str(rule),
                                field="decider")  # fmt: skip
    inputs = load_inputs(episodes, catalog, _tasks(tasks))
    learned = load_flow(flow, inputs.catalog)
    console.print(inputs.describe())
    total, per_episode = anatomy(inputs.timelines)
    ceiling = {e: a.ceiling for e, a in per_episode.items()}
    results = {}
    table = Table(
        title="replay from the record, " + (chosen_rule.label() if chosen_rule else f"θ = {threshold}")
    )
    for col in ("decider", "episodes", "turns", "saved", "saved % (95% CI)", "made", "used", "detours/episode",
                "share of ceiling"):  # fmt: skip
        table.add_column(col)
    from toolshift.flows.words import picker_for

    reader = picker_for(picker) if picker is not None else None
    for kind in kinds:
        result = run_replay(inputs.timelines, Decider(learned, kind, threshold, picker=reader, rule=chosen_rule),
                            weigh_all=explore is not None,
                            explore=explore or 0.0, user_sites=user_sites, chain_prior=chain_prior)  # fmt: skip
        results[kind] = result
        s = result.summary()
        table.add_row(kind, str(s["episodes"]), str(s["turns"]), str(s["saved_turns"]), saved_share(result).percent(),
                      str(s["lookups_made"]), str(s["lookups_used"]), f"{s['detours_per_episode']:.2f}",
                      share_of_ceiling(result, ceiling).percent(0))  # fmt: skip
    console.print(table)
    console.print(f"ceiling: {total.ceiling} of {total.turns} turns ({_pct(total.share('ceiling'))})")
    if len(results) == 2:
        diff = saved_difference(results["reach"], results["next-step"])
        console.print(
            f"reach minus next-step: {100 * diff.mean:+.2f} points ({100 * diff.low:+.2f} – {100 * diff.high:+.2f})"
        )
    if explore is not None:
        path = log or flow.with_suffix(".decisions.jsonl")
        with atomic_text(path) as fh:
            for result in results.values():
                for row in log_rows(result):
                    fh.write(json.dumps(row, default=str) + "\n")
        console.print(f"decision log: {path} ({sum(len(r.log) for r in results.values())} lookups weighed)")
    if json_out is not None:
        write_text_atomic(json_out, json.dumps({k: r.summary() for k, r in results.items()}
                                               | {"ceiling": total.ceiling}, indent=1) + "\n")  # fmt: skip


@app.command()
def ceiling(episodes: EpisodesArg, catalog: CatalogOpt, tasks: TasksOpt = "all") -> None:
    """The read-only ceiling: turns an earlier lookup could have answered; with the user's words and constants."""
    from toolshift.flows.ceiling import anatomy
    from toolshift.flows.inputs import load_inputs

    inputs = load_inputs(episodes, catalog, _tasks(tasks))
    console.print(inputs.describe())
    total, _ = anatomy(inputs.timelines)
    table = Table(title=f"turn anatomy and ceiling: {inputs.catalog.domain}")
    for col in ("episodes", "turns", "replies", "writes", "reads", "ceiling", "with the user's words",
                "with constants", "with both"):  # fmt: skip
        table.add_column(col)
    table.add_row(str(total.episodes), str(total.turns), *(_pct(total.share(n)) for n in (
        "replies", "write_turns", "read_turns", "ceiling", "with_words", "with_constants", "with_both")))  # fmt: skip
    console.print(table)


@app.command("read-request")
def read_request(
    episodes: EpisodesArg,
    catalog: CatalogOpt,
    picker: Annotated[str, typer.Option("--picker", help="pattern, embedded, or both.")] = "both",
    tasks: TasksOpt = "all",
) -> None:
    """Reading the request: what the user's words add to the ceiling, and how much of it a picker takes."""
    from rich.progress import track

    from toolshift.flows.inputs import load_inputs
    from toolshift.flows.words import PICKERS, count_questions, picker_for
    from toolshift.flows.words import read_request as run_reading

    names = PICKERS if picker == "both" else (picker,)
    inputs = load_inputs(episodes, catalog, _tasks(tasks))
    console.print(inputs.describe() + f"; {count_questions(inputs.timelines)} questions")
    table = Table(title=f"reading the request: {inputs.catalog.domain}")
    for col in ("picker", "turns", "ceiling", "with the user's words", "words add (points)", "questions",
                "values right", "turns taken", "share of what the words add"):  # fmt: skip
        table.add_column(col)
    for name in names:
        reader = picker_for(name)
        steps = iter(track(range(len(inputs.timelines)), description=name, console=console, transient=True))
        r = run_reading(inputs.timelines, reader, progress=lambda it=steps: next(it, None))
        table.add_row(name, str(r.turns), _pct(r.ceiling / r.turns if r.turns else 0.0),
                      _pct(r.with_words / r.turns if r.turns else 0.0),
                      f"{100 * r.words_add / r.turns if r.turns else 0.0:.1f}", str(r.questions),
                      f"{r.right} ({_pct(r.share_right())})", str(r.taken), _pct(r.share_taken()))  # fmt: skip
    console.print(table)


@app.command()
def calibrate(
    logs: Annotated[list[Path], typer.Argument(help="Decision logs written by `replay --explore 0`.")],
    png: Annotated[Path | None, typer.Option("--png", help="Write a reliability diagram here.")] = None,
    sites: Annotated[
        bool,
        typer.Option(
            "--sites",
            help="Also per site (tool × binds from × position): ECE of the model's score "
            "and of the score the decision compared (they differ under a recalibrating --rule).",
        ),
    ] = False,
) -> None:
    """Calibration of lookup scores against use before the next write: ECE, Brier, AUC per decider."""
    from toolshift.flows.calibration import calibrate as calib
    from toolshift.flows.calibration import reliability_diagram, site_key, site_reliability

    by_decider: dict[str, tuple[list[float], list[bool]]] = {}
    by_site: list[tuple[str, float, float, bool]] = []
    for path in logs:
        for i, line in enumerate(read_text(path, what="decision log").splitlines()):
            if not line.strip():
                continue
            row = loads_json(line, source=str(path), record=i)
            try:
                scores, used = by_decider.setdefault(row["decider"], ([], []))
                scores.append(float(row["score"]))
                used.append(bool(row["used"]))
                if sites:
                    key = site_key(row["tool"], int(row["depth"]), int(row.get("position", 0)))
                    raw = float(row.get("raw", row["score"]))
                    by_site.append((f"{row['decider']}|{key}", raw, float(row["score"]), bool(row["used"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise BadInputError(f"not a decision log row: {exc}", source=str(path), record=i) from exc
    if not by_decider:
        raise BadInputError("no decision log rows (write them with `replay --explore 0 --log FILE`)",
                            source=", ".join(map(str, logs)))  # fmt: skip
    table = Table(title="calibration: score vs used before the next write")
    for col in ("decider", "weighed", "used", "ECE", "Brier", "AUC"):
        table.add_column(col)
    for name, (scores, used) in sorted(by_decider.items()):
        c = calib(scores, used)
        table.add_row(name, str(c.weighed), _pct(c.used_rate), f"{c.ece:.3f}", f"{c.brier:.3f}",
                      "—" if c.auc is None else f"{c.auc:.3f}")  # fmt: skip
    console.print(table)
    if sites:
        per_site = Table(title="per site: ECE of the model's score → of the score compared")
        for col in ("decider", "site", "weighed", "used", "ECE"):
            per_site.add_column(col)
        for r in site_reliability(by_site):
            name, key = r.site.split("|", 1)
            per_site.add_row(name, key.replace("|", " · "), str(r.weighed), _pct(r.used_rate),
                             f"{r.ece_before:.3f} → {r.ece_after:.3f}")  # fmt: skip
        console.print(per_site)
    if png is not None:
        reliability_diagram(by_decider, png, "Reliability of lookup scores")
        console.print(f"reliability diagram: {png}")


@app.command()
def price(
    episodes: EpisodesArg,
    catalog: CatalogOpt,
    flow: Annotated[Path, typer.Option("--flow")],
    decider: Annotated[str, typer.Option("--decider")] = "reach",
    price_: Annotated[
        str, typer.Option("--price", help="OUT,READ,WRITE multipliers of an uncached input token.")
    ] = "0,1,1",
    sweep: Annotated[
        str, typer.Option("--sweep", help="Thresholds to sweep, comma-separated.")
    ] = "0.05,0.1,0.15,0.2,0.3,0.4,0.5,0.7",
    tasks: TasksOpt = "all",
    choose_rule: Annotated[
        Path | None,
        typer.Option(
            "--choose-rule",
            help="Choose the decision rule by leave-one-task-out over these (training) tasks and write it here "
            "(toolshift.flow-rule/1): one θ or a threshold per decision, recalibrated per site or not.",
        ),
    ] = None,
    walk_ranks: Annotated[
        int,
        typer.Option("--walk-ranks", help="With --choose-rule: the walk ranks the flow was learned with."),
    ] = 0,
    max_detours: Annotated[
        float, typer.Option("--max-detours", help="With --choose-rule: the detour budget per episode.")
    ] = 0.5,
    learn_from_all: Annotated[
        bool,
        typer.Option("--learn-from-all", help="With --choose-rule: learn the folds' flows from every run."),
    ] = False,
    folds: Annotated[
        int | None,
        typer.Option("--folds", help="k-fold cross-validation by task (default: leave one task out)."),
    ] = None,
    nested: Annotated[
        bool,
        typer.Option("--nested", help="With --choose-rule: the margin picked by nested cross-validation."),
    ] = False,
) -> None:
    """θ* = δ/(β+δ) from the domain's average detour and saved turn, and a θ sweep with utility; with
    --choose-rule, the rule (one θ or a threshold per decision) chosen on training tasks only."""
    from toolshift.flows.ceiling import anatomy
    from toolshift.flows.decide import Decider
    from toolshift.flows.inputs import load_inputs
    from toolshift.flows.model import load_flow
    from toolshift.flows.pricing import Price, value_replay
    from toolshift.flows.replay import replay as run_replay

    rate = Price.parse(price_)
    try:
        thetas = [float(x) for x in sweep.split(",")]
    except ValueError as exc:
        raise BadInputError(f"--sweep takes numbers, not {sweep!r}", field="sweep") from exc
    if choose_rule is not None:
        _choose_rule(episodes, catalog, flow, decider, rate, tasks, choose_rule, walk_ranks, max_detours,
                     learn_from_all, folds, nested)  # fmt: skip
        return
    inputs = load_inputs(episodes, catalog, _tasks(tasks))
    learned = load_flow(flow, inputs.catalog)
    _, per_episode = anatomy(inputs.timelines)
    ceiling_turns = {e: a.ceiling_turns.get(e, []) for e, a in per_episode.items()}
    reference = run_replay(inputs.timelines, Decider(learned, decider, 0.3))
    v = value_replay(reference, inputs.timelines, rate, ceiling_turns)
    console.print(f"price {rate.label()}: β = {v.beta:.0f} tokens a saved turn, δ = {v.delta:.0f} a detour, "
                  f"θ* = {v.theta_star:.3f}" + (" (tokens estimated from message lengths)" if v.tokens_estimated else ""))  # fmt: skip
    table = Table(title=f"θ sweep, {decider}, utility in tokens at price {rate.label()}")
    for col in ("θ", "saved", "detours", "utility"):
        table.add_column(col)
    for theta in thetas:
        r = run_replay(inputs.timelines, Decider(learned, decider, theta))
        u = value_replay(r, inputs.timelines, rate)
        table.add_row(f"{theta:g}", str(r.saved), str(r.detours), f"{u.utility:,.0f}")
    console.print(table)


def _choose_rule(episodes: list[Path], catalog: Path, flow: Path, decider: str, rate: object, tasks: str,
                 out: Path, walk_ranks: int, max_detours: float, learn_from_all: bool,
                 folds: int | None = None, nested: bool = False) -> None:  # fmt: skip
    from toolshift.flows.inputs import load_inputs
    from toolshift.flows.model import load_flow
    from toolshift.flows.perdecision import choose_rule
    from toolshift.flows.rule import save_rule

    if decider not in ("reach", "next-step"):
        raise BadInputError(
            f"--decider is reach or next-step with --choose-rule, not {decider!r}", field="decider"
        )
    if _tasks(tasks) != "train":
        console.print(f"[yellow]choosing the rule on --tasks {tasks}: choose on training tasks only[/yellow]")
    inputs = load_inputs(episodes, catalog, tasks)
    load_flow(flow, inputs.catalog)  # the flow must be this catalog's; the folds learn their own
    choice = choose_rule(inputs.timelines, inputs.catalog, walk_ranks=walk_ranks, price=rate,  # type: ignore[arg-type]
                         deciders=(decider,), max_detours=max_detours, learn_from_all=learn_from_all,
                         folds=folds, nested=nested)  # fmt: skip
    table = Table(
        title=f"cross-validation over {choice.folds} folds by task: share of the ceiling / detours per episode"
    )
    for col in ("rule", "value", "re-reads", "share", "detours/episode"):
        table.add_column(col)
    for c in choice.candidates:
        mark = " ←" if choice.best.get((decider, c.family)) is c else ""
        table.add_row(c.family, f"{c.value:g}", "yes" if c.reread else "no", _pct(c.share_of_ceiling),
                      f"{c.detours_per_episode:.2f}{mark}")  # fmt: skip
    console.print(table)
    family = choice.overall(decider) or "θ"  # one θ when no family has a candidate within the budget
    rule = choice.rule(decider, family)
    best = choice.best.get((decider, family))
    note = (f"{family}: {_pct(best.share_of_ceiling)} of the ceiling at {best.detours_per_episode:.2f} detours an "
            f"episode over {choice.folds} folds (budget {max_detours:g}, margin {choice.margin[decider]:g} SE"
            f"{' by nested cross-validation' if nested else ''})" if best else "none within the budget")  # fmt: skip
    save_rule(rule, decider, out, chosen_by=f"flows price --choose-rule, --tasks {tasks}: {note}")
    console.print(f"wrote {out}: {rule.label()} ({note}); min count per site {choice.min_count[decider]}")


@app.command()
def repeats(episodes: EpisodesArg, catalog: CatalogOpt, tasks: TasksOpt = "all") -> None:
    """Per agent: reads made again with the same arguments and no write of its own between."""
    from toolshift.flows.ceiling import repeated_reads
    from toolshift.flows.inputs import load_inputs

    inputs = load_inputs(episodes, catalog, _tasks(tasks))
    table = Table(title="repeated reads")
    for col in ("agent", "reads", "made again", "share"):
        table.add_column(col)
    for agent, r in sorted(repeated_reads(inputs.timelines).items()):
        table.add_row(agent, str(r.reads), str(r.repeated), _pct(r.repeated / r.reads if r.reads else 0.0))
    console.print(table)


@app.command()
def report(
    out: Annotated[Path, typer.Option("--out", help="The markdown file to write.")] = Path(
        "docs/results/flows.md"
    ),
    data: Annotated[
        Path | None, typer.Option("--data", help="The shared data folder (default ../shared/data).")
    ] = None,
    bfcl: Annotated[
        Path | None,
        typer.Option(
            "--bfcl",
            help="A checkout of github.com/bbrowning/bfcl-vllm-results: adds the cross-model BFCL section.",
        ),
    ] = None,
) -> None:
    """Regenerate docs/results/flows.md from the real data: τ-bench airline, WorkBench and (--bfcl) BFCL."""
    from toolshift.flows.results import default_data_dir, write_report

    path = write_report(out, data or default_data_dir(), bfcl=bfcl, console=console)
    console.print(f"wrote {path}")


@app.command("report-many")
def report_many(
    out: Annotated[Path, typer.Option("--out")] = Path("docs/results/flows-many-agents.md"),
    data: Annotated[Path | None, typer.Option("--data", help="Default ../shared/data.")] = None,
) -> None:
    """Regenerate docs/results/flows-many-agents.md: flows learned from many agents' published runs, replayed
    on agents they never saw, every choice made by cross-validation over agents (`toolshift.flows.many`)."""
    from toolshift.flows.many import write_many_report

    console.print(f"wrote {write_many_report(out, data, console=console)}")


report_file_errors(app)
