"""docs/results/skill-methods.md: every method × version by the benchmark's metrics, paired differences against
No Skill and against Steward, and maintenance K tokens per training task (`toolshift skills eval --markdown`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolshift.bench.ecosystem.store import build_fingerprint
from toolshift.fileio import read_json, write_text_atomic
from toolshift.intervals import bootstrap_mean, signed_points
from toolshift.skillmethods.run import RIVALS, Spec, row_label
from toolshift.steward.report import STRICT, _build_commands, _pct, plot

METRICS = (
    "SR",
    STRICT,
    "P",
    "R",
    "F1",
    "Step-SPE",
    "Cost-SPE",
    "Step-IDR",
    "Step-DAR",
    "Cost-IDR",
    "Cost-DAR",
)
SOURCES = {
    "evoskill": ("sentient-agi/EvoSkill (Apache-2.0)", "Alzubi et al., 2026, arXiv 2603.02766"),
    "autoskill": ("ECNU-ICALK/AutoSkill", "Yang et al., 2026, arXiv 2603.01145"),
    "trace2skill": ("Qwen-Applications/Trace2Skill", "Ni et al., 2026, arXiv 2603.25158"),
    "skillopt": ("microsoft/SkillOpt (MIT; PyPI `skillopt` 0.2.0)", "Yang et al., 2026, arXiv 2605.23904"),
}


def method_of(agent: str, model: str) -> str:
    """The method a scored row is (the page's names)."""
    name = model.replace(":", "_").replace("/", "_")
    if (
        agent.endswith("[domain-tools]") and agent.startswith(f"{name} ")
    ) or agent == f"{name} [domain-tools]":
        return "No Skill"
    if agent.startswith(f"steward-plan-{name}"):
        return "Steward"
    for rival in RIVALS:
        if agent.startswith(row_label(rival, model)):
            return {"evoskill": "EvoSkill", "autoskill": "AutoSkill", "trace2skill": "Trace2Skill",
                    "skillopt": "SkillOpt"}[rival]  # fmt: skip
    return agent


def paired(evals: list[Any], base: Any, resamples: int) -> dict[str, dict[str, Any]]:
    """Each row's SR minus `base`'s on the same task × version instances, paired bootstrap over tasks."""
    out: dict[str, dict[str, Any]] = {}
    solved = {(s.task_id, s.version): float(s.success) for s in base.scores}
    for ev in evals:
        if ev is base:
            continue
        pairs = [(s, solved[(s.task_id, s.version)]) for s in ev.scores if (s.task_id, s.version) in solved]
        row = out.setdefault(ev.agent, {})
        for v in [*sorted({s.version for s, _ in pairs}), 0]:
            here = [(s, b) for s, b in pairs if v in (0, s.version)]
            row["all" if v == 0 else f"v{v}"] = bootstrap_mean(
                [float(s.success) - b for s, b in here],
                groups=[s.task_id for s, _ in here],
                resamples=resamples,
            ).as_dict()
    return out


def maintenance(spec: Spec, ctx: Any, methods: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """Method → version → {tokens, calls, rollouts, skills, train_tasks, k_per_task} (versions made so far)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in methods:
        if name in RIVALS:
            for v in range(1, ctx.versions + 1):
                f = Path(spec.run) / "methods" / name / f"v{v}.json"
                if f.exists():
                    w = read_json(f, what="maintenance record")
                    tokens = sum(w["call_tokens"].values()) + w["rollout_tokens"]
                    out.setdefault(name, {})[f"v{v}"] = {**w, "tokens": tokens,
                                                         "k_per_task": tokens / 1000 / max(1, w["train_tasks"])}  # fmt: skip
        elif name == "steward":
            from toolshift.steward.experiment import library_path
            from toolshift.steward.library import Library

            for v in range(1, ctx.versions + 1):
                path = library_path(ctx, "incremental", v)
                if path.exists():
                    with Library.open(path) as lib:
                        w = next(x for x in lib.work() if x.catalog_version == v)
                        active = len(lib.skills(active=True))
                    out.setdefault(name, {})[f"v{v}"] = {
                        "tokens": w.tokens, "calls": 0, "rollouts": 0, "skills": active,
                        "train_tasks": spec.train_sample, "k_per_task": w.tokens / 1000 / max(1, spec.train_sample),
                    }  # fmt: skip
    return out


def write_page(
    spec: Spec, methods: list[str], paths: list[Path], page: Path, resamples: int = 1000
) -> dict[str, Any]:
    """Score the rows and write the page (atomically) with its figures beside it; returns what it shows."""
    from toolshift.bench.ecosystem.evaluate import evaluate
    from toolshift.steward.experiment import context
    from toolshift.steward.report import evaluate_follow

    ctx = context(spec.build, spec.run)
    paths = [p for p in paths if p.exists()]
    scores = evaluate_follow(ctx, paths, resamples)
    _, evals = evaluate(ctx.build, paths, resamples=resamples)
    # every rival row is on the domain tools too, so No Skill is found by name, not by its setting
    base = {method_of(ev.agent, spec.model): ev for ev in evals}
    vs_none = paired(evals, base["No Skill"], resamples) if "No Skill" in base else {}
    vs_steward = paired(evals, base["Steward"], resamples) if "Steward" in base else {}
    work = maintenance(spec, ctx, methods)
    versions = [f"v{v}" for v in range(1, (spec.versions or ctx.versions) + 1)]
    names = {ev.agent: method_of(ev.agent, spec.model) for ev in evals}
    order = sorted(names, key=lambda a: ["No Skill", "Steward", "EvoSkill", "AutoSkill", "Trace2Skill", "SkillOpt"].index(names[a]) if names[a] in ("No Skill", "Steward", "EvoSkill", "AutoSkill", "Trace2Skill", "SkillOpt") else 9)  # fmt: skip
    lines = [
        "# Steward against the skill methods seed 000 compares it with",
        "",
        f"Generated by `{spec.command}` (ecosystem `{ctx.eco_id}`, build `{build_fingerprint(ctx.build)}`). "
        "Values are percentages with 95% bootstrap "
        "intervals over tasks; paired differences are percentage points over the same task × version instances.",
        "",
        f"The build: {_build_commands(ctx)}.",
        "",
        _protocol(spec),
        "",
        *_progress(spec, ctx, methods, work),
        "## Results per method and version",
        "",
        "| method | version | n | " + " | ".join(METRICS) + " |",
        "|---|---|---|" + "---|" * len(METRICS),
    ]
    for agent in order:
        for v in [*versions, "all"]:
            cell = scores.get(agent, {}).get(v)
            if not cell:
                continue
            n = (cell.get("SR") or {}).get("n", 0)
            lines.append(
                f"| {names[agent]} | {v} | {n} | "
                + " | ".join(_pct(cell.get(m), n=m.endswith(("IDR", "DAR"))) for m in METRICS)
                + " |"
            )
    lines += [
        "",
        "SR minus No Skill's on the same tasks and versions (percentage points, 95% paired bootstrap interval):",
        "",
    ]
    lines += _diff_table(order, names, {a: vs_none.get(a, {}) for a in order}, None, versions)
    if vs_steward:
        lines += ["", "SR minus Steward's on the same tasks and versions:", ""]
        lines += _diff_table(order, names, {a: vs_steward.get(a, {}) for a in order}, None, versions)
    lines += ["", *_skill_use(paths, names, spec.model)]
    lines += ["", "## Maintenance tokens", "", _tokens_note(), "",
              "| method | " + " | ".join(versions) + " | calls | rollouts |", "|---|" + "---|" * (len(versions) + 2)]  # fmt: skip
    for name in methods:
        if name == "no-skill":
            continue
        w = work.get(name, {})
        cells = [f"{w[v]['k_per_task']:.1f}" if v in w else "–" for v in versions]
        calls = sum((w[v].get("calls") or 0) for v in w)
        rolls = sum((w[v].get("rollouts") or 0) for v in w)
        label = "Steward" if name == "steward" else method_of(row_label(name, spec.model), spec.model)
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {calls} | {rolls} |")
    lines += ["", "## The methods", ""] + [_method_section(m) for m in methods if m in RIVALS]
    lines += ["", "## Recorded", ""]
    for agent in order:
        lines.append(f"- {names[agent]} (`{agent}`): {scores.get(agent, {}).get('recorded_at', '')}")
    figures = []
    for metric in ("SR", STRICT):
        series = {names[a]: {v: scores[a][v][metric]["mean"] for v in versions if scores.get(a, {}).get(v, {}).get(metric, {}).get("n")} for a in order}  # fmt: skip
        png = page.with_name(f"{page.stem}_{metric.replace(' ', '_').lower()}.png")
        plot(series, versions, f"{metric} per version", png)
        figures.append(f"![{metric} per version]({png.name})")
    lines += ["", "## Figures", "", *figures, ""]
    write_text_atomic(page, "\n".join(lines))
    body = {"scores": scores, "vs_no_skill": vs_none, "vs_steward": vs_steward, "maintenance": work}
    write_text_atomic(
        Path(spec.run) / "results.json", json.dumps(body, indent=1, sort_keys=True, default=str)
    )
    return body


def _progress(spec: Spec, ctx: Any, methods: list[str], work: dict[str, Any]) -> list[str]:
    """How far the run got: each method's test episodes against those planned, and its versions maintained."""
    from toolshift.skillmethods.run import method_file
    from toolshift.traces.store import iter_episodes

    planned = spec.sample * (spec.versions or ctx.versions)
    held = {}
    for m in methods:
        path = method_file(spec, m)
        held[m] = sum(1 for _ in iter_episodes(path)) if path.exists() else 0
    if all(n >= planned for n in held.values()):
        return []
    rows = ", ".join(f"{m} {n}" for m, n in held.items())
    made = ", ".join(f"{m} {len(work.get(m, {}))}" for m in methods if m != "no-skill")
    return [
        f"**This run did not finish: {sum(min(n, planned) for n in held.values())} of {planned * len(methods)} "
        f"test episodes** ({planned} per method). Test episodes per method: {rows}. Versions maintained per "
        f"method: {made}. The tables below show what the episodes present say (the page written by the same "
        "command with `--score-only`); rows and versions not yet run are absent. The run folder is kept "
        "(docs/results/episodes/README.md) and resumes by the same command.",
        "",
    ]


def _skill_use(paths: list[Path], names: dict[str, str], model: str) -> list[str]:
    """Per rival row: how many skills the agent was offered and how often it opened one (`source.skills`)."""
    from toolshift.bench.ecosystem.evaluate import agent_label
    from toolshift.traces.store import iter_episodes

    rows = []
    for path in paths:
        offered, opened, n = 0, 0, 0
        label = ""
        for ep in iter_episodes(path):
            record = ep.source.get("skills")
            if not isinstance(record, dict):
                break
            label = agent_label(ep)
            n += 1
            offered += len(record.get("offered") or [])
            opened += bool(record.get("opened"))
        if n:
            rows.append(
                f"| {names.get(label, method_of(label, model))} | {n} | {offered / n:.1f} | {opened} ({100 * opened / n:.0f}%) |"
            )
    if not rows:
        return []
    return [
        "How the agent used each rival's library on the test tasks (`source.skills` of each episode): the skills "
        "offered (listed in its prompt) and the episodes in which it opened one through `read_skill`.",
        "",
        "| method | episodes | skills offered (mean) | episodes that opened a skill |",
        "|---|---|---|---|",
        *rows,
    ]


def _diff_table(
    order: list[str],
    names: dict[str, str],
    cells: dict[str, dict[str, Any]],
    key: str | None,
    versions: list[str],
) -> list[str]:
    out = ["| method | " + " | ".join([*versions, "all"]) + " |", "|---|" + "---|" * (len(versions) + 1)]
    for agent in order:
        row = cells.get(agent) or {}
        vals = [signed_points((row.get(v) or {}).get(key) if key else row.get(v)) for v in [*versions, "all"]]
        if any(x != "–" for x in vals):
            out.append(f"| {names[agent]} | " + " | ".join(vals) + " |")
    return out


def _protocol(spec: Spec) -> str:
    return (
        "**Protocol (D401), the same for every method.** Each version has a training pool of "
        f"{spec.train_sample} train tasks (the same ids on every version) whose episodes are their step-optimal "
        "reference paths replayed by Steward's `FactReplay` instrument on that version (all strict successes; what "
        f"Steward maintains from, and what every method is given), and a validation split of {spec.val} other train "
        "tasks. At v1 every method starts empty; at each later version it continues from its previous library with "
        f"that version's pool only. The library after a version's maintenance is evaluated on that version's "
        f"{spec.sample} test tasks (the same tasks for every method and version). Every method's skills are written "
        f"by the same model as the agent (`{spec.model}`), every verdict is strict success (Δgold ⊆ Δagent and "
        "nothing else written). The agent is the model on its task's domain tools, the No Skill row "
        f"(`bench baseline --setting domain-tools`, at most {spec.max_turns} turns), given each rival's library as "
        "Agent Skills (names and descriptions in the prompt, bodies read through `read_skill`, D400); Steward's row "
        "is its own harness handoff (`steward eval`'s `plan` row) with the library maintained from the same pool."
    )


def _tokens_note() -> str:
    return (
        "K tokens per training task of the version's pool: every model call a method made to write, merge, analyse "
        "or rank a skill (prompt and completion tokens as the backend reports them) plus the agent's tokens in every "
        "rollout it ran to find failures or validate a skill (the scripted user spends none), divided by the pool's "
        "tasks. Steward's maintenance is model-free (its distillation extracts the workflow from the episodes; "
        "`--model` distillation, D177, is not used here): 0. The shared training episodes are an instrument's "
        "replays and cost no tokens for anyone. `calls` and `rollouts` count over the versions made."
    )


def _method_section(name: str) -> str:
    import importlib

    repo, paper = SOURCES[name]
    doc = (importlib.import_module(f"toolshift.skillmethods.{name}").__doc__ or "").split("\n\n", 1)[-1]
    title = {
        "evoskill": "EvoSkill",
        "autoskill": "AutoSkill",
        "trace2skill": "Trace2Skill",
        "skillopt": "SkillOpt",
    }[name]
    return f"### {title}\n\nFollows {repo} and its paper ({paper}). " + " ".join(doc.split()) + "\n"


__all__ = ["method_of", "paired", "write_page"]
