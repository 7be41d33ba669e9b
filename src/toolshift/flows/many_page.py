"""docs/results/flows-many-agents.md, written from a `toolshift.flows.many.Study`: every figure computed, the seed's
quoted as the seed's."""

from __future__ import annotations

from collections import defaultdict

from toolshift.flows.agentfolds import BUDGET, MARGIN, THETAS, AgentCrossval, Cell
from toolshift.flows.ceiling import TurnAnatomy, anatomy
from toolshift.flows.many import SEED_THETA, AgentStudy, Study, Transfer
from toolshift.flows.replay import ReplayResult
from toolshift.flows.results import ci
from toolshift.flows.results_crossval import pct, table
from toolshift.flows.statistics import saved_difference, saved_share, share_of_ceiling

COMMAND = "toolshift flows report-many --out docs/results/flows-many-agents.md"
ORDER = ("reach", "next-step")
SEED_CEILING = {
    ("τ²-bench", None): "29.0%", ("τ-bench", None): "28.4%", ("τ-bench", "taubench-v1-retail"): "30.1%",
    ("τ-bench", "taubench-v1-airline"): "24.3%", ("BFCL", None): "13.2%", ("AgentDojo", None): "22.1%",
    ("AgentDojo", "agentdojo-travel"): "47.1%", ("AgentDojo", "agentdojo-slack"): "21.6%",
    ("AgentDojo", "agentdojo-banking"): "10.2%", ("AgentDojo", "agentdojo-workspace"): "6.0%",
    ("WorkBench", None): "3.5%",
}  # fmt: skip
"""Seed 003's read-only ceilings ("What decides an agent's turns"), quoted: other agents' runs, not these."""
SEED_TRANSFER = {
    "retail": "22.9% / 21.5% of turns, 76% of the ceiling (reach), +1.43 points (0.84 – 2.07), 0.92 / 0.85 detours",
    "airline": "17.1% / 17.1% of turns, 70% of the ceiling, a tie, 0.41 / 0.41 detours",
}
"""Seed 003's τ-bench replays (GPT-4o and Claude 3.5 Sonnet, flows from τ²-bench's 2025 runs, θ = 0.3): reach /
next-step."""
SEED_DOJO = {
    "agentdojo-travel": "8.7% / 10.7% of turns, 19% of the ceiling, 0.39 / 0.41 detours",
    "agentdojo-slack": "16.8% / 16.8%, 78% of the ceiling, 0.11 / 0.11 detours",
    "agentdojo-banking": "0 / 0",
    "agentdojo-workspace": "0 / 0",
}
GOAL_SHARE = {"airline": 0.75, "retail": 0.76}
DETOUR_GAP = 0.15


def _anatomy_row(label: str, agents: int, a: TurnAnatomy, seed: str) -> list[str]:
    return [label, str(agents), str(a.episodes), f"{a.turns:,}", pct(a.share("replies")),
            pct(a.share("write_turns")), pct(a.share("read_turns")), pct(a.share("ceiling")), seed]  # fmt: skip


def _runs_section(study: Study) -> str:
    rows = []
    notes: list[str] = []
    for benchmark, domains in study.runs.items():
        for domain, r in domains.items():
            tasks = len({t.task_id for t in r.timelines})
            rows.append(
                [
                    benchmark,
                    domain,
                    str(len(r.agents)),
                    str(len(r.timelines)),
                    str(tasks),
                    ", ".join(r.agents),
                ]
            )
            notes += [n for n in r.notes if "partial run" in n and n not in notes]
    text = "## The runs\n\n" + table(("Benchmark", "Domain", "Agents", "Episodes", "Tasks", "Who"), rows)
    if notes:
        text += "\n\nPartial runs, converted as they are: " + "; ".join(notes) + "."
    return text


def _ceilings_section(study: Study) -> str:
    rows = []
    for benchmark, domains in study.runs.items():
        whole = TurnAnatomy()
        agents = set()
        for r in domains.values():
            whole.add(anatomy(r.timelines)[0])
            agents |= set(r.agents)
        rows.append(
            _anatomy_row(f"**{benchmark}**", len(agents), whole, SEED_CEILING.get((benchmark, None), "—"))
        )
        if len(domains) > 1:
            for domain, r in domains.items():
                seed = SEED_CEILING.get((benchmark, domain), "—")
                rows.append(_anatomy_row(f"— {domain}", len(r.agents), anatomy(r.timelines)[0], seed))
    header = ("Benchmark (domain)", "Agents", "Episodes", "Turns", "Replies", "Writes", "Reads", "Ceiling",
              "Seed's ceiling")  # fmt: skip
    dojo = [
        [suite, pct(study.dojo_json[suite].share("ceiling")),
         pct(anatomy(r.timelines)[0].share("ceiling")), SEED_CEILING.get(("AgentDojo", suite), "—")]
        for suite, r in study.runs.get("AgentDojo", {}).items()
    ]  # fmt: skip
    return (
        "## Read-only ceilings, beside the seed's\n\nEvery episode of every run (all agents, all tasks). The ceiling "
        "counts every turn whose calls are all reads that a lookup made earlier could have answered: after a tool "
        "response, every argument already a value in an earlier result, or no argument at all. The seed's "
        "ceilings are of other agents' runs of the same benchmarks (seed 003), quoted for comparison.\n\n"
        + table(header, rows)
        + "\n\nAgentDojo's results are YAML records, Python dicts and label listings. Read as JSON only (as before, "
        "D340) and as printed (the catalog's `results: yaml`):\n\n"
        + table(("Suite", "Ceiling, read as JSON", "Ceiling, read as printed", "Seed's ceiling"), dojo)
    )


def _cell_text(c: Cell | None) -> str:
    if c is None:
        return f"none within {BUDGET:g} detours an episode"
    return (f"θ = {c.theta:g}: {pct(c.share_of_ceiling, 0)} of the ceiling at {c.detours_per_episode:.2f} detours "
            f"an episode (+{MARGIN:g} SE {c.detours_bound():.2f})")  # fmt: skip


def _choice_text(s: AgentStudy) -> str:
    cv = s.cv
    tried = "; ".join(f"{o.label()} {pct(share, 0)}" for o, share in s.shares)
    chosen = "; ".join(f"{d}: {_cell_text(cv.choice(d))}" for d in ORDER)
    return (
        f"Chosen over {len(cv.agents)} agents, leaving one out at a time ({len(THETAS)} θ from {THETAS[0]:g} to "
        f"{THETAS[-1]:g}, budget {BUDGET:g} detours an episode plus {MARGIN:g} standard error over the agents). "
        f"Candidates tried, with the two deciders' chosen shares averaged: {tried}. Kept: **{s.options.label()}**; "
        f"{chosen}."
    )


def _replay_rows(
    results: dict[str, ReplayResult], ceiling: dict[str, int], label: dict[str, str]
) -> list[list[str]]:
    rows = []
    for d in ORDER:
        r = results[d]
        n = len(r.episodes)
        rows.append([d, label[d], f"{r.turns:,}", str(r.saved), ci(saved_share(r)), ci(share_of_ceiling(r, ceiling), 0),
                     str(r.made), str(r.detours), f"{r.detours / n:.2f}" if n else "–"])  # fmt: skip
    return rows


REPLAY_HEADER = ("Decider", "Rule", "Turns", "Saved turns", "Saved (95% CI)", "Share of the ceiling (95% CI)",
                 "Lookups made", "Detours", "Detours per episode")  # fmt: skip


def _by_agent(results: dict[str, ReplayResult], ceiling: dict[str, int]) -> list[list[str]]:
    acc: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0, 0]))
    for d in ORDER:
        for e in results[d].episodes:
            x = acc[e.agent][d]
            x[0] += len(e.saved_turns)
            x[1] += ceiling.get(e.episode, 0)
            x[2] += e.detours
            x[3] += 1
            x[4] += e.turns
    rows = []
    for agent, by in sorted(acc.items()):
        r, n = by["reach"], by["next-step"]
        rows.append([agent, str(r[3]), f"{r[4]:,}", pct(r[1] / r[4] if r[4] else 0.0),
                     f"{pct(r[0] / r[1] if r[1] else 0.0, 0)} / {r[2] / r[3]:.2f}",
                     f"{pct(n[0] / n[1] if n[1] else 0.0, 0)} / {n[2] / n[3]:.2f}"])  # fmt: skip
    return rows


AGENT_HEADER = ("Agent", "Episodes", "Turns", "Ceiling", "Reach: share of the ceiling / detours per episode",
                "Next-step: share / detours")  # fmt: skip


def _transfer_section(domain: str, t: Transfer) -> tuple[str, dict[str, float]]:
    s = t.source
    a = t.anatomy
    label = {d: f"θ = {c.theta:g} (chosen)" if (c := t.cells[d]) else f"θ = {SEED_THETA:g} (none within the budget)"
             for d in ORDER}  # fmt: skip
    seed_label = {d: f"θ = {SEED_THETA:g} (the seed's)" for d in ORDER}
    diff = saved_difference(t.chosen["reach"], t.chosen["next-step"])
    diff_seed = saved_difference(t.at_seed_theta["reach"], t.at_seed_theta["next-step"])
    lines = [f"### {domain}", "",
             f"Learned from τ²-bench's {len(s.runs.agents)} agents' {domain} runs ({len(s.runs.timelines)} episodes); "
             f"replayed on τ-bench v1's runs of {', '.join(sorted({x.agent for x in t.timelines}))} "
             f"({a.episodes} episodes, {a.turns:,} turns, ceiling {pct(a.share('ceiling'))} of turns), which no choice "
             "read. τ-bench's episodes are served against τ²-bench's catalog (the same tools and effects, and one read "
             "τ-bench lacks).", "", _choice_text(s), "",
             table(REPLAY_HEADER, _replay_rows(t.chosen, t.ceilings, label) + _replay_rows(t.at_seed_theta, t.ceilings, seed_label)),
             "", f"Reach minus next-step, paired over tasks (a task's episodes of every agent drawn together): at the "
             f"chosen rules {ci(diff, points=True)}; both at θ = {SEED_THETA:g} {ci(diff_seed, points=True)}. The seed "
             f"(GPT-4o and Claude 3.5 Sonnet, θ = {SEED_THETA:g}): {SEED_TRANSFER[domain]}.", "",
             table(AGENT_HEADER, _by_agent(t.chosen, t.ceilings))]  # fmt: skip
    figures = {}
    for d in ORDER:
        r, c = t.chosen[d], t.cells[d]
        figures[f"{d} share"] = share_of_ceiling(r, t.ceilings).mean
        figures[f"{d} detours"] = r.detours / len(r.episodes) if r.episodes else 0.0
        figures[f"{d} predicted"] = c.detours_per_episode if c else float("nan")
    figures["difference"] = diff.mean
    figures["difference low"] = diff.low
    lines += ["", "Cross-validated detours an episode (over τ²-bench's agents) against the held-out replay's: "
              + "; ".join(f"{d} {figures[f'{d} predicted']:.2f} predicted, {figures[f'{d} detours']:.2f} held out "
                          f"({figures[f'{d} detours'] - figures[f'{d} predicted']:+.2f})" for d in ORDER) + "."]  # fmt: skip
    if t.rules:
        rows = []
        for d in ORDER:
            family, r, choice = t.rules[d]
            best = choice.best.get((d, family))
            cv_text = f"{pct(best.share_of_ceiling, 0)} / {best.detours_per_episode:.2f}" if best else "—"
            rows.append([d, f"{family}: {choice.rule(d, family).label()}", cv_text,
                         ci(share_of_ceiling(r, t.ceilings), 0), f"{r.detours / len(r.episodes):.2f}"])  # fmt: skip
        lines += ["", "A threshold per decision and per-site calibration (`flows price --choose-rule`'s six families), "
                  "chosen the same way, by leaving one τ²-bench agent out (the calibrations' own cross-validation "
                  "folds by agent too), then replayed once on τ-bench:", "",
                  table(("Decider", "Rule picked overall", "Over agents: share / detours", "Held out: share of the "
                         "ceiling (95% CI)", "Detours per episode"), rows)]  # fmt: skip
    return "\n".join(lines), figures


def _within_section(key: str, s: AgentStudy) -> tuple[str, dict[str, float]]:
    cv: AgentCrossval = s.cv
    total = anatomy(s.runs.timelines)[0]
    diff = saved_difference(s.held_out["reach"], s.held_out["next-step"])
    rows = []
    predicted: dict[str, float] = {}
    for d in ORDER:
        n = s.nested[d]
        episodes = {agent: sum(1 for t in s.runs.timelines if t.agent == agent) for agent in cv.agents}
        weighted = sum(p.detours_per_episode * episodes[a] for a, p in n.picks if p is not None)
        predicted[d] = weighted / sum(episodes.values())
        thetas = sorted({p.theta for _, p in n.picks if p is not None})
        rows.append([d, ", ".join(f"{th:g}" for th in thetas) or "none", ci(saved_share(s.held_out[d])),
                     ci(share_of_ceiling(s.held_out[d], s.ceilings), 0), f"{n.detours_per_episode:.2f}",
                     f"{predicted[d]:.2f}"])  # fmt: skip
    text = "\n".join(
        [
            f"### {key}",
            "",
            f"{len(cv.agents)} agents, {total.episodes} episodes, {total.turns:,} turns, ceiling {pct(total.share('ceiling'))} "
            f"of turns. Each agent replayed with the flow and θ chosen over the others only (nested), learned on the "
            f"others. {_choice_text(s)}",
            "",
            table(
                (
                    "Decider",
                    "θ chosen (per agent left out)",
                    "Saved (95% CI)",
                    "Share of the ceiling (95% CI)",
                    "Detours per episode, held out",
                    "Predicted by the others' cross-validation",
                ),
                rows,
            ),
            "",
            f"Reach minus next-step, paired over tasks: {ci(diff, points=True)}.",
            "",
            table(AGENT_HEADER, _by_agent(s.held_out, s.ceilings)),
        ]
    )
    figures = {"difference": diff.mean, "difference low": diff.low, "difference high": diff.high}
    for d in ORDER:
        figures[f"{d} share"] = share_of_ceiling(s.held_out[d], s.ceilings).mean
        figures[f"{d} detours"] = s.nested[d].detours_per_episode
        figures[f"{d} predicted"] = predicted[d]
    return text, figures


def _pooled(name: str, studies: list[AgentStudy], seed: str) -> str:
    """Every agent's held-out replay of several studies taken together: one share and one paired difference."""
    held = {d: ReplayResult(d, -1.0, [e for s in studies for e in s.held_out[d].episodes], []) for d in ORDER}
    ceilings = {e: c for s in studies for e, c in s.ceilings.items()}
    diff = saved_difference(held["reach"], held["next-step"])
    shares = "; ".join(
        f"{d} {ci(saved_share(held[d]))} of turns, {ci(share_of_ceiling(held[d], ceilings), 0)} of the ceiling, "
        f"{held[d].detours / max(len(held[d].episodes), 1):.2f} detours an episode"
        for d in ORDER
    )
    return (f"**{name}**, each agent held out: {shares}. Reach minus next-step, paired over tasks: "
            f"{ci(diff, points=True)} (the seed, on newer pipelines: {seed}).")  # fmt: skip


CAVEATS = """## What this page does not show, and why

- **BFCL**: two models' files of 2 entries per category (16 episodes): ceilings only; leaving one of two agents out
  leaves one to learn from. AIREV-Agent-0.8B's files record no call's result (refused, D341).
- **WorkBench**: ceilings only here (two agents); its replays are on docs/results/flows.md.
- **telecom-workflow**: one agent (grok-3): no agent to leave out.
- **Replays from the record**: a lookup is a saving only if the agent's own later call before its next write
  answers it; detours are lower bounds (seed 003: 55–72% of an environment replay's), and an agent that repeats
  its own reads would repeat a lookup's too.
- **Another harness**: τ-bench's runs are served τ²-bench's catalog, whose tools are τ-bench's and one more read
  (`get_flight_status`, `get_item_details`) that τ-bench's agents never call, so a lookup of it is a detour."""


def _goals(transfers: dict[str, dict[str, float]], within: dict[str, dict[str, float]]) -> str:
    rows = []
    for domain, f in transfers.items():
        for d in ORDER:
            share, det = f[f"{d} share"], f[f"{d} detours"]
            goal = GOAL_SHARE[domain]
            budget = " at ≤ 0.5 detours an episode" if domain == "airline" else ""
            met = share >= goal and (domain != "airline" or det <= BUDGET)
            rows.append([f"τ-bench {domain}, {d}", f"≥ {goal:.0%} of the ceiling{budget}",
                         f"{pct(share, 0)} at {det:.2f}", "met" if met else "not met"])  # fmt: skip
    for domain, f in [
        ("τ-bench retail", transfers.get("retail")),
        ("τ²-bench retail", within.get("τ²-bench/retail")),
    ]:
        if f:
            ok = f["difference"] >= 0
            rows.append([f"{domain}: reach ≥ next-step", "reach ≥ next-step, with the interval",
                         f"{100 * f['difference']:+.2f} points (low {100 * f['difference low']:+.2f})",
                         "met" if ok else "not met"])  # fmt: skip
    for name, f in list(transfers.items()) + list(within.items()):
        for d in ORDER:
            gap = f[f"{d} detours"] - f[f"{d} predicted"]
            rows.append([f"{name}, {d}: cross-validated detours", f"within ±{DETOUR_GAP:g} of the held-out detours",
                         f"{f[f'{d} predicted']:.2f} predicted, {f[f'{d} detours']:.2f} held out ({gap:+.2f})",
                         "met" if abs(gap) <= DETOUR_GAP else "not met"])  # fmt: skip
    return (
        "## Against the goals\n\nEvery goal read off the held-out replays above (agents no choice saw).\n\n"
        + table(("Where", "Goal", "Measured", ""), rows)
    )


def render(study: Study) -> str:
    transfers, within = {}, {}
    parts = [
        "# Flows learned from many agents' runs",
        "",
        f"Generated by `{COMMAND}` from the repository root, with the published runs in "
        f"`../shared/data/published-runs` (PROVENANCE.md there), τ-bench's GPT-4o airline trials and WorkBench's runs "
        f"({study.seconds:.0f} s). Do not edit by hand: change `src/toolshift/flows/many.py` or `many_page.py` and run "
        "it again.",
        "",
        "The rules are seed 003's: a lookup counts as a saving only when the agent's own later call with the same "
        "arguments, before its next write, answers it; any other lookup is a detour (a lower bound). Every choice — "
        "how the flow learns (every run or the successful ones; episodes counted once, an agent's trials of a task "
        "as one, or every agent alike: D342; walks; record bindings; fallback sources), each decider's θ, the "
        "per-decision rules and calibration — is made by cross-validation over agents: learn on all agents but one, "
        "replay that one, for each agent (`toolshift.flows.agentfolds`). Replayed agents are never read to choose. "
        "Intervals are 95%, from a bootstrap over tasks, a task's episodes of every agent drawn together.",
        "",
        _runs_section(study),
        "",
        _ceilings_section(study),
        "",
        "## τ²-bench → τ-bench: flows learned on one benchmark's agents, replayed on another's",
    ]
    for domain, t in study.transfers.items():
        text, transfers[domain] = _transfer_section(domain, t)
        parts += ["", text]
    parts += ["", "## Across agents within τ²-bench: leave one agent out"]
    for key, s in study.within.items():
        if key.startswith("τ²-bench"):
            text, within[key] = _within_section(key, s)
            parts += ["", text]
    parts += ["", "## AgentDojo across pipelines: leave one pipeline out",
              "", "Each suite's 2024 pipelines (models and defences); the seed replayed newer pipelines with flows "
              "learned on these."]  # fmt: skip
    for key, s in study.within.items():
        if key.startswith("AgentDojo"):
            text, within[key] = _within_section(key, s)
            suite = s.runs.domain
            parts += [
                "",
                text,
                "",
                f"The seed ({suite}, reach / next-step at θ = {SEED_THETA:g}): {SEED_DOJO.get(suite, '—')}.",
            ]
    dojo = [s for key, s in study.within.items() if key.startswith("AgentDojo")]
    if dojo:
        parts += [
            "",
            _pooled("All AgentDojo suites", dojo, "−0.53 points (−1.74 – 0.00): a tie, 32% of the ceiling"),
        ]
    parts += ["", _goals(transfers, within), "", CAVEATS, ""]
    return "\n".join(parts)
