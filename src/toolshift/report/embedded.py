"""The embedded model's results page (docs/results/embedded.md): success on tasks, reading the request, prompts.

Everything on the page is computed here by `toolshift report embedded`: episodes of the embedded agent on
the demo tasks and on a sample of a benchmark build's test tasks (with the model choosing spans, and with
the most-recent-span rule), resumable run by run; the reading-the-request counts on the converted
τ-bench airline and WorkBench runs (a pattern and the embedded model as pickers); what a flow that reads
the user's words adds on WorkBench; and whether the embedded user simulator's prompt keeps every fact
and rule of the build's tasks. It sits in the top room because it uses agents and flows together; the episodes themselves are run by
`toolshift.agents.embedded_study`.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from toolshift.agents.embedded_study import (
    MAX_TURNS,
    MODELS,
    NAMED,
    SAMPLE,
    TRIALS,
    Picked,
    run_episodes,
    select_tasks,
)
from toolshift.fileio import read_json
from toolshift.intervals import bootstrap_mean

LABELS = {"embedded": "the model picks the span", "embedded:recent": "the most recent span (rule)"}
THETAS = (0.3, 0.1)


def pct(x: float, digits: int = 0) -> str:
    return "–" if x != x else f"{100 * x:.{digits}f}%"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def success_section(picked: list[Picked], episodes: dict[str, list[Any]]) -> tuple[str, dict[str, Any]]:
    """Success per task group and model, and beside it strict success (no collateral write; episodes whose
    strict verdict cannot be known, recorded without it and with no world diff, are counted as unknown)."""
    from toolshift.agents.demo import demo_tasks
    from toolshift.agents.results import episode_collateral

    group_of = {p.task.id: p.group for p in picked} | {t.id: "demo (clinic)" for t in demo_tasks()}
    task_of = {p.task.id: p.task for p in picked} | {t.id: t for t in demo_tasks()}
    order = ["demo (clinic)", NAMED, *(f"{n} steps" for n in sorted(SAMPLE))]
    figures: dict[str, Any] = {}
    rows = []
    for group in order:
        cells: list[str] = [group]
        strict_cells: list[str] = []
        tasks_in = sorted(t for t, g in group_of.items() if g == group)
        cells.append(str(len(tasks_in)))
        for model in MODELS:
            per_task = defaultdict(list)
            strict_task: dict[str, list[float]] = defaultdict(list)
            unknown = 0
            for e in episodes[model]:
                if (
                    group_of.get(e.task_id) == group
                    and e.outcome is not None
                    and e.outcome.success is not None
                ):
                    per_task[e.task_id].append(float(e.outcome.success))
                    verdict = episode_collateral(e, task_of)
                    if verdict is None:
                        unknown += 1
                    else:
                        strict_task[e.task_id].append(float(verdict.strict_success))
            strict_iv = bootstrap_mean([sum(v) / len(v) for v in strict_task.values()])
            known = sum(len(v) for v in strict_task.values())
            strict_solved = int(sum(sum(v) for v in strict_task.values()))
            strict_cells.append(
                (f"{strict_solved}/{known} = {pct(strict_iv.mean)} [{pct(strict_iv.low)}, {pct(strict_iv.high)}]"
                 if known else "–") + (f"; {unknown} unknown" if unknown else "")
            )  # fmt: skip
            rates = [sum(v) / len(v) for v in per_task.values()]
            n_eps = sum(len(v) for v in per_task.values())
            solved = sum(sum(v) for v in per_task.values())
            interval = bootstrap_mean(rates)
            cells.append(f"{int(solved)}/{n_eps} = {pct(interval.mean)} [{pct(interval.low)}, {pct(interval.high)}]"
                         if n_eps else "–")  # fmt: skip
            figures.setdefault(group, {})[model] = {"solved": solved, "episodes": n_eps,
                                                    "rate": interval.as_dict(), "strict_solved": strict_solved,
                                                    "strict": strict_iv.as_dict(), "strict_unknown": unknown}  # fmt: skip
        rows.append(cells + strict_cells)
    header = ["Tasks", "n", *(f"Success, {LABELS[m]} (95% CI)" for m in MODELS),
              *(f"Strict success (no collateral write), {LABELS[m]}" for m in MODELS)]  # fmt: skip
    return table(header, rows), figures


def paired_section(picked: list[Picked], episodes: dict[str, list[Any]]) -> str:
    """The first trial of each task with the model and with the rule: same seed, so the same sampling of
    everything but the span; where they differ, the span choice decided."""
    from toolshift.agents.demo import demo_tasks

    group_of = {p.task.id: p.group for p in picked} | {t.id: "demo (clinic)" for t in demo_tasks()}
    first = {m: {e.task_id: bool(e.outcome and e.outcome.success) for e in episodes[m] if e.trial == 0}
             for m in MODELS}  # fmt: skip
    rows = []
    for group in dict.fromkeys(group_of.values()):
        ids = [t for t, g in group_of.items() if g == group and all(t in first[m] for m in MODELS)]
        model = sum(first["embedded"][t] for t in ids)
        rule = sum(first["embedded:recent"][t] for t in ids)
        only_model = sum(first["embedded"][t] and not first["embedded:recent"][t] for t in ids)
        only_rule = sum(first["embedded:recent"][t] and not first["embedded"][t] for t in ids)
        rows.append([group, str(len(ids)), str(model), str(rule), str(only_model), str(only_rule)])
    return table(["Tasks", "n", "Solved, model", "Solved, rule", "Only the model", "Only the rule"], rows)


def episode_rows(picked: list[Picked], episodes: dict[str, list[Any]]) -> str:
    """Per task: the gold path and each model's successes, for reading the table above."""
    rows = []
    by = {m: defaultdict(list) for m in MODELS}
    for m in MODELS:
        for e in episodes[m]:
            by[m][e.task_id].append(bool(e.outcome and e.outcome.success))
    for p in picked:
        path = " → ".join(g.tool for g in p.task.gold_path)
        rows.append(
            [p.task.id, p.group, path, *(f"{sum(by[m][p.task.id])}/{len(by[m][p.task.id])}" for m in MODELS)]
        )
    return table(["Task", "Group", "Gold path", *(LABELS[m] for m in MODELS)], rows)


# -- reading the request ----------------------------------------------------------------------------


def _benchmarks(data: Path) -> list[tuple[str, str, list[Any], Any]]:
    """(benchmark, domain, test timelines, catalog) for τ-bench airline and WorkBench's six domains."""
    from toolshift.flows.results import AIRLINE_FILE, WORKBENCH_DIR, split
    from toolshift.flows.timeline import Catalog, timelines
    from toolshift.traces.taubench import convert_taubench_v1, taubench_domain
    from toolshift.traces.workbench import convert_workbench

    out = []
    conv = convert_taubench_v1(data / AIRLINE_FILE)
    catalog = Catalog.of(conv.catalogs[taubench_domain("airline")])
    sp = split(timelines(conv.episodes, catalog))
    out.append(("τ-bench airline (GPT-4o)", "airline", sp, catalog))
    wb = convert_workbench(data / WORKBENCH_DIR)
    by_domain: dict[str, list[Any]] = defaultdict(list)
    for e in wb.episodes:
        by_domain[e.domain].append(e)
    for domain in sorted(by_domain):
        catalog = Catalog.of(wb.catalogs[domain])
        out.append(
            ("WorkBench (GPT-4, Claude-2)", domain, split(timelines(by_domain[domain], catalog)), catalog)
        )
    return out


def reading_section(
    data: Path, console: Console, cache: Path | None = None
) -> tuple[str, str, dict[str, Any]]:
    from toolshift.agents.span_picker import EmbeddedSpanPicker
    from toolshift.flows.decide import Decider
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.replay import replay
    from toolshift.flows.words import PatternPicker, Reading, read_request

    model = EmbeddedSpanPicker(cache=cache)
    pickers = [PatternPicker(), model]
    totals: dict[tuple[str, str], Reading] = {}
    binder_rows, figures = [], {"reading": {}, "binder": {}}
    for bench, domain, sp, catalog in _benchmarks(data):
        for picker in pickers:
            r = read_request(sp.test, picker)
            totals.setdefault((bench, picker.name), Reading(picker.name)).add(r)
            console.print(f"reading {domain} with {picker.name}: {r.right}/{r.questions} values right, "
                          f"{r.taken}/{r.words_add} turns")  # fmt: skip
        if not bench.startswith("WorkBench"):
            continue
        verdicts = any(t.success for t in sp.train)
        flow = learn_flow(sp.train, catalog, learn_from_all=not verdicts, words=True)
        base = learn_flow(sp.train, catalog, learn_from_all=not verdicts)
        row = [domain, str(sum(len(t.turns) for t in sp.test))]
        for theta in THETAS:
            for label, f, picker in (
                ("without", base, None),
                ("pattern", flow, pickers[0]),
                ("model", flow, model),
            ):
                rr = replay(sp.test, Decider(f, "reach", theta, catalog, picker=picker))
                row.append(f"{rr.saved} / {rr.made} / {rr.detours}")
                figures["binder"].setdefault(domain, {})[f"{label}@{theta}"] = rr.summary()
        binder_rows.append(row)
    reading_rows = []
    for (bench, name), r in totals.items():
        if name != "pattern":
            continue
        m = totals[(bench, "embedded")]
        add = r.words_add / r.turns if r.turns else 0.0
        reading_rows.append([bench, str(r.turns), pct(r.ceiling / r.turns, 1), pct(r.with_words / r.turns, 1),
                             f"{100 * add:.1f} ({r.words_add} turns)", str(r.questions),
                             f"{pct(r.share_taken())} ({r.taken})", f"{pct(m.share_taken())} ({m.taken})",
                             f"{pct(r.share_right())} / {pct(m.share_right())}"])  # fmt: skip
        figures["reading"][bench] = {
            n: {k: getattr(totals[(bench, n)], k) for k in ("turns", "ceiling", "with_words", "questions", "right", "taken")}
            | {"by_tool": totals[(bench, n)].by_tool}
            for n in ("pattern", "embedded")
        }  # fmt: skip
    figures["picker_seconds"] = sum(model.timing.values())
    figures["picker_questions"] = len(model.cache)
    reading = table(["Benchmark (test tasks)", "Turns", "Ceiling", "With the user's words", "Words add (points)",
                     "Questions", "A pattern takes", "The embedded model takes", "Values picked right, pattern / model"],
                    reading_rows)  # fmt: skip
    cols = [f"{label}, θ = {th:g}" for th in THETAS for label in ("no words", "pattern", "embedded model")]
    binder = table(["WorkBench domain", "Test turns", *cols], binder_rows)
    return reading, binder, figures


# -- the user simulator's prompt --------------------------------------------------------------------


def user_prompt_section(build: Path) -> tuple[str, dict[str, Any]]:
    """Over every task of the build: does the embedded user's fitted prompt keep every fact and rule?"""
    from llama_cpp import Llama  # the tokenizer alone

    from toolshift.agents.embedded import EmbeddedModel, PromptTooLong, fit_chat, gguf_path
    from toolshift.agents.users import END_CONVERSATION, END_TOOL, LLMUser, user_system_prompt
    from toolshift.taskfile import read_tasks

    vocab = Llama(model_path=str(gguf_path()), vocab_only=True, verbose=False)
    model = EmbeddedModel(role="user")
    n = kept_facts = kept_rules = too_long = cut_end = cut_fact = 0
    longest = 0
    for path in sorted((build / "domains").glob("*/tasks.jsonl")):
        for task in read_tasks(path):
            n += 1
            user = LLMUser(model, task.public_request, task.instruction)
            chat = model.prompt(
                [*user.messages, {"role": "user", "content": "How can I help you today?"}], [END_TOOL]
            )
            try:
                fit_chat(chat, vocab, model.n_ctx - 200, role="user")
            except PromptTooLong:
                too_long += 1
                continue
            system = chat[0]["content"]
            longest = max(longest, len(vocab.tokenize(system.encode(), add_bos=False, special=True)))
            kept_facts += all(f"- {k}: {v}" in system for k, v in task.instruction.facts.items())
            kept_rules += (
                all(r in system for r in task.instruction.rules) and f"call {END_CONVERSATION}" in system
            )
            before = user_system_prompt(task.public_request, task.instruction)[
                :897
            ]  # the former 900-char cut
            cut_end += END_CONVERSATION not in before
            cut_fact += any(f"- {k}: {v}" not in before for k, v in task.instruction.facts.items())
    rows = [
        ["before: the system prompt cut to 900 characters", str(n), f"{n - cut_fact} ({pct((n - cut_fact) / n, 1)})",
         f"{n - cut_end} ({pct((n - cut_end) / n, 1)})", "–"],
        ["now: fitted to the 2,048-token context", str(n), f"{kept_facts} ({pct(kept_facts / n, 1)})",
         f"{kept_rules} ({pct(kept_rules / n, 1)})", str(too_long)],
    ]  # fmt: skip
    figures = {"tasks": n, "kept_facts": kept_facts, "kept_rules": kept_rules, "too_long": too_long,
               "before_cut_end_rule": cut_end, "before_cut_a_fact": cut_fact, "longest_system_tokens": longest}  # fmt: skip
    text = table(["Prompt", "Tasks", "Every fact kept", "Every rule kept (with the end-of-conversation rule)",
                  "Tasks whose instructions cannot fit (the turn fails, saying so)"], rows)  # fmt: skip
    return text, figures


# -- the page ---------------------------------------------------------------------------------------


def write_report(
    out: Path, build: Path, runs: Path, data: Path, *, trials: dict[str, int] | None = None,
    console: Console | None = None, command: str | None = None,
) -> Path:  # fmt: skip
    from toolshift.report.benchlog import machine_description
    from toolshift.traces.store import write_text_atomic

    console = console or Console()
    started = time.perf_counter()
    load = os.getloadavg()[0]
    picked = select_tasks(build)
    trials = trials or TRIALS
    episodes = run_episodes(build, runs, picked, trials=trials, console=console)
    success, success_fig = success_section(picked, episodes)
    per_task = episode_rows(picked, episodes)
    paired = paired_section(picked, episodes)
    reading, binder, reading_fig = reading_section(data, console, runs / "picks.json")
    prompt, prompt_fig = user_prompt_section(build)
    from toolshift.agents.config import RunConfig
    from toolshift.bench.ecosystem.store import build_fingerprint

    manifest = read_json(build / "manifest.json", what="build manifest")
    fingerprint = build_fingerprint(build)
    command = command or f"toolshift report embedded --build {build} --runs {runs} --out {out}"
    seconds = time.perf_counter() - started
    episode_seconds = sum(e.duration or 0.0 for eps in episodes.values() for e in eps)
    page = f"""# The embedded agent: decoding that copies, and reading the request

Generated by `{command}` from the repository root (build `{fingerprint}`: `toolshift bench build --out {build} --seed {manifest.get("seed")} --per-domain {manifest.get("per_domain")}`; real data in `../shared/data`). Episodes are resumable run folders under `{runs}`: they took {episode_seconds / 60:.0f} min in all (the sum of their durations, over the runs that made them), the picker's answers {reading_fig["picker_seconds"] / 60:.0f} min, and this last run of the command {seconds / 60:.0f} min, on {machine_description().split(", commit")[0]}, load average {load:.1f} at its start. Do not edit by hand.

The embedded agent is SmolLM2-135M-Instruct (`toolshift.agents.embedded`). Each turn its output grammar is rebuilt from the conversation (`toolshift.agents.copying`): an argument that names something — a key, an email, a date, a number, a name — may only take a span of the user's words or a value of an earlier tool result of that shape, or the schema's enum; a key takes only values with the prefix the catalog's examples give its entity ("e.g. LE-0001"); free text (reasons, notes) stays free but capped at the schema's length, with the user's clauses offered beside it. The token cap is the longest output the grammar admits, so no call is ever cut. The model chooses the tool (weighed by a retrieval prior: the words a tool's name and description share with the user's) and the value among the spans; the rule `embedded:recent` leaves it, for every argument, only the most recent span of the right shape. docs/decisions.md D75–D77 give the choices.

## Success on tasks

Scripted user, at most {MAX_TURNS} turns, {trials["embedded"]} trials per task with the model and {trials["embedded:recent"]} with the rule (seeded per episode, the same seeds for both), judged by the world diff (Δgold ⊆ Δagent; strict success adds that nothing outside Δgold changed, and the collateral writes are counted beside it). The demo's three clinic tasks, every test task of the build with one write whose every value the user names ("{NAMED}"), and a seeded sample of the other test tasks by gold-path length ({", ".join(f"{n} of {k} steps" for k, n in SAMPLE.items())}). Intervals are 95%, bootstrap over tasks.

{success}

The first trial of every task, with the model and with the rule (the same seed, so the same sampling of all
but the spans):

{paired}

Per task:

{per_task}

## Reading the request

As seed 003 counts it, on the held-out test tasks of the converted runs (`toolshift flows read-request EPISODES --catalog CATALOG --tasks test`): the ceiling's turns, those with the user's words, and of the turns the words add (their values are in the user's words, not in a result), the share whose every value a picker picks right among the spans of the user's words (one to six words). The pattern is the most recent span of the argument's shape (by its name: an email, a date, a key), else the most recent run of capitalised words, else the most recent quoted phrase; the model is the embedded SmolLM2 shown what the user wrote, the tool and the argument's name, decoding greedily under a grammar of the spans (`toolshift.agents.span_picker`; {reading_fig["picker_questions"]} questions in {reading_fig["picker_seconds"]:.0f} s). The seed, with a frontier model: a model takes 30–53% of what the words add, a pattern 0–17%.

{reading}

## Binding from the user's words in a flow (WorkBench)

`toolshift flows learn --words` learns, per read, the one argument its training calls took from the user's words (flow format 4), and `flows replay --picker pattern|embedded` reads it when the lookup is decided. Reach decider, flows learned from the training tasks as in docs/results/flows.md; each cell: saved turns / lookups made / detours.

{binder}

## The embedded user simulator's prompt (issue 10)

Over every task of the build, the embedded user simulator's prompt at its first turn (the system prompt whole: intent, facts, rules), fitted to the context with room to answer. Conversation turns are dropped oldest first; the system prompt never is, and a task whose instructions cannot fit fails its turn with a message saying so (`PromptTooLong`).

{prompt}

Latency per turn, with the grammar rebuilt each turn: docs/benchmarks.md ("agents: embedded SmolLM2-135M, decoding that copies").
"""
    write_text_atomic(out, page)
    figures = {"success": success_fig, "reading": reading_fig, "user_prompt": prompt_fig, "seconds": seconds,
               "episode_seconds": episode_seconds,
               "load_at_start": load, "config_example": RunConfig(world="clinic", model="embedded",
                                                                   max_turns=MAX_TURNS).model_dump()}  # fmt: skip
    write_text_atomic(out.with_suffix(".json"), json.dumps(figures, indent=1, default=str) + "\n")
    return out
