"""The experiment's results file (`toolshift.steward-results/1`), its markdown tables and a PNG per metric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolshift.bench.ecosystem.store import build_fingerprint
from toolshift.fileio import write_text_atomic
from toolshift.intervals import signed_points
from toolshift.steward.experiment import KINDS, Context, write_results

STRICT = "strict SR"
PART2_METRICS = ("SR", STRICT, "P", "R", "F1", "Step-SPE", "Cost-SPE")
PART2_METRICS += ("Step-IDR", "Step-DAR", "Cost-IDR", "Cost-DAR")
VS_DOMAIN = "SR vs domain-tools"
SEED = {
    "supply": "the seed's models: P ≈ 19%, R ≈ 77–90%, F1 ≈ 28–32% (its Table 1)",
    "steward_sr": "the seed's Steward: 39.04% SR averaged over six versions (DeepSeek-V3.2; SkillOpt 36.36%)",
}


def frozen_v1(ctx: Context, sample: int | None) -> Path:
    """The benchmark's own frozen-v1 baseline on the same test tasks (toolshift.bench), for the comparison."""
    from toolshift.bench.ecosystem.baselines import run_baseline

    return run_baseline(
        ctx.build,
        "frozen-v1",
        ctx.run / "follow",
        split="test",
        sample=sample,
        seed=0,
        setting="domain-tools",
        executor=ctx.executor,
        nodes=ctx.nodes,
    )


def evaluate_follow(
    ctx: Context, paths: list[Path], resamples: int, *, paired: bool = False
) -> dict[str, Any]:
    """Part 2's scores by the benchmark's metrics (`toolshift bench eval`'s API), per agent and version,
    with strict SR (no collateral write) computed here from each episode's world diff; with `paired`
    (part 3), each row's SR minus the `[domain-tools]` row's on the same instances."""
    from toolshift.bench.ecosystem.evaluate import evaluate

    _, evals = evaluate(ctx.build, paths, resamples=resamples)
    strict = strict_sr(ctx, paths, resamples)
    out: dict[str, Any] = {}
    for ev in evals:
        assert ev.summary is not None
        out[ev.agent] = {
            ("all" if v == 0 else f"v{v}"): {m: iv.as_dict() for m, iv in row.items()}
            for v, row in sorted(ev.summary.by_version.items())
        }
        for v, iv in strict.get(ev.agent, {}).items():
            out[ev.agent].setdefault(v, {})[STRICT] = iv
        out[ev.agent]["excluded"] = dict(ev.excluded)
        out[ev.agent]["recorded_at"] = ev.recorded_at()
    if paired:
        _paired_against_domain_tools(out, evals, resamples)
    return out


def _paired_against_domain_tools(out: dict[str, Any], evals: list[Any], resamples: int) -> None:
    """Each row's SR minus the `[domain-tools]` row's (the seed's No Skill) on the same task × version
    instances, with a paired bootstrap over tasks: the rows' own intervals overlap at this scale, and only
    a paired interval says whether the difference is there."""
    from toolshift.intervals import bootstrap_mean

    base = next((ev for ev in evals if ev.agent.endswith("[domain-tools]")), None)
    if base is None:
        return
    solved = {(s.task_id, s.version): float(s.success) for s in base.scores}
    for ev in evals:
        if ev is base:
            continue
        pairs = [(s, solved[(s.task_id, s.version)]) for s in ev.scores if (s.task_id, s.version) in solved]
        for v in [*sorted({s.version for s, _ in pairs}), 0]:
            here = [(s, b) for s, b in pairs if v in (0, s.version)]
            out[ev.agent].setdefault("all" if v == 0 else f"v{v}", {})[VS_DOMAIN] = bootstrap_mean(
                [float(s.success) - b for s, b in here],
                groups=[s.task_id for s, _ in here],
                resamples=resamples,
            ).as_dict()


def strict_sr(ctx: Context, paths: list[Path], resamples: int) -> dict[str, dict[str, dict[str, Any]]]:
    """Strict SR per agent and version (`Task.verdict`: Δgold ⊆ Δagent and nothing else written), over
    the instances `bench eval` scores (valid reference path; the step or both-criteria episode), with
    bootstrap intervals over tasks (overall: tasks resampled with all their versions)."""
    from toolshift.bench.ecosystem.evaluate import agent_label
    from toolshift.intervals import bootstrap_mean
    from toolshift.traces.store import iter_episodes

    valid = {(r.task_id, r.version) for r in ctx.records if r.valid and r.step is not None}
    found: dict[tuple[str, str, int], dict[str, bool]] = {}
    for path in paths:
        for ep in iter_episodes(path):
            _, _, ver = (ep.ecosystem_version or "").partition("/v")
            task = ctx.tasks.get(ep.task_id)
            if not ver.isdigit() or task is None or (ep.task_id, int(ver)) not in valid:
                continue
            crit = str(ep.source.get("criterion") or "both")
            verdict = task.verdict(ep.world_diff or [])
            found.setdefault((agent_label(ep), ep.task_id, int(ver)), {})[crit] = verdict.strict_success
    by_agent: dict[str, list[tuple[str, int, float]]] = {}
    for (agent, task_id, v), by_crit in sorted(found.items()):
        ok = by_crit.get("step", by_crit.get("both"))
        if ok is not None:
            by_agent.setdefault(agent, []).append((task_id, v, float(ok)))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for agent, rows in by_agent.items():
        out[agent] = {
            f"v{v}": bootstrap_mean([x for _, w, x in rows if w == v], resamples=resamples).as_dict()
            for v in sorted({w for _, w, _ in rows})
        }
        out[agent]["all"] = bootstrap_mean(
            [x for *_, x in rows], groups=[t for t, _, _ in rows], resamples=resamples
        ).as_dict()
    return out


def _pct(d: dict[str, Any] | None, n: bool = False) -> str:
    if not d or not d.get("n"):
        return "–"
    cell = f"{100 * d['mean']:.1f} [{100 * d['low']:.1f}, {100 * d['high']:.1f}]"
    return cell + (f" (n={d['n']})" if n else "")


def _build_commands(ctx: Context) -> str:
    from toolshift.bench.build import load_manifest
    from toolshift.bench.ecosystem.store import load_ecosystem

    m, eco = load_manifest(ctx.build), load_ecosystem(ctx.build)
    b = ctx.build
    return (
        f"`toolshift bench build --out {b} --seed {m.seed} --per-domain {m.per_domain}`, "
        f"`toolshift bench evolve {b} --versions {eco.config.versions} --seed {eco.config.seed} "
        f"--min-transforms {eco.config.min_transforms} --max-transforms {eco.config.max_transforms} "
        f"--perturb-rate {eco.config.perturb_rate}`, "
        f"`toolshift bench reference {b}`"
    )


def _versions(ctx: Context) -> list[str]:
    return [f"v{v}" for v in range(1, ctx.versions + 1)]


def plot(series: dict[str, dict[str, float]], versions: list[str], title: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, by_v in series.items():
        xs = [k for k, v in enumerate(versions) if v in by_v]
        ax.plot([versions[k] for k in xs], [100 * by_v[versions[k]] for k in xs], marker="o", label=name)
    ax.set_ylim(0, 105)
    ax.set_ylabel("%")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _model_condition(agent: str) -> str:
    """Which of the seed's model conditions a part-3 row is (`model_agent.model_label`'s names)."""
    if agent.endswith("[domain-tools]") or agent.startswith("domain-"):
        return "No Skill"
    for kind, condition in (("frozen", "frozen"), ("full", "full rebuild")):
        if agent.startswith(f"steward-plan-{kind}-"):
            return condition
    return "Steward" if agent.startswith("steward-plan-") else agent


def write_report(
    ctx: Context,
    quality: dict[str, Any],
    scores: dict[str, Any],
    work: dict[str, Any],
    command: str,
    markdown: Path | None,
    *,
    train_sample: int | None,
    sample: int | None,
    models: dict[str, Any] | None = None,
    model_sample: int | None = None,
    note: str = "",
) -> Path:
    versions = _versions(ctx)
    results = ctx.run / "results.json"
    body = {
        "ecosystem": ctx.eco_id,
        "command": command,
        "train_sample": train_sample,
        "sample": sample,
        "supply": quality,
        "follow": scores,
        "work": {k: {str(v): w for v, w in by.items()} for k, by in work.items()},
        "model": models or {},
        "model_sample": model_sample,
    }
    write_results(results, body)
    if markdown is None:
        return results
    figures = markdown.parent
    stem = markdown.stem
    lines = [
        "# Steward on the evolved ecosystem",
        "",
        f"Generated by `{command}` (ecosystem `{ctx.eco_id}`, build `{build_fingerprint(ctx.build)}`). Values are "
        "percentages with 95% bootstrap",
        "intervals over tasks. Training tasks per version: "
        + ("all" if train_sample is None else f"a sample of {train_sample}")
        + "; test tasks per version: "
        + ("all" if sample is None else f"a sample of {sample}")
        + " (the same tasks on every version and for every library).",
        "",
        f"The build: {_build_commands(ctx)}.",
        "",
        "Training trajectories are the train split's step-optimal reference paths replayed through the agent",
        "loop by the `FactReplay` instrument (it asks the scripted user for the task's facts, then makes the",
        "calls); Steward's maintainer sees only those episodes and the version's catalog. Libraries:",
        "**incremental** (initialised on v1, then local edits per version), **full** (rebuilt from each",
        "version's episodes alone), **frozen** (the v1 library on every version).",
        "",
        "## 1. Supply quality (no agent)",
        "",
        "P / R / F1 of the exposed tool set against the step-optimal reference path's tools, per version;",
        f"`exposed` is the mean number of tools exposed. For scale, {SEED['supply']}.",
        "Steward's rows: the view for the plan chosen from the conversation's words (the request and the",
        "scripted user's answer to what they want), as in part 2. `bm25-instruction@5` is the 5 tools BM25",
        "ranks first for the task's instruction; `dense-instruction@5` the same by all-MiniLM-L6-v2 cosine",
        "similarity, `hybrid-instruction@5` by BM25 and dense ranks fused (reciprocal rank, k = 60;",
        "`toolshift.steward.dense`; with `--dense` and the `embeddings` extra, rows absent otherwise).",
        "",
        "| condition | " + " | ".join(versions) + " |",
        "|---|" + "---|" * len(versions),
    ]
    for name, by_v in quality.items():
        cells = []
        for v in versions:
            q = by_v.get(v)
            cells.append(
                "–"
                if not q
                else f"{100 * q['P']['mean']:.1f} / {100 * q['R']['mean']:.1f} / "
                f"{100 * q['F1']['mean']:.1f} ({q['exposed']:g})"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Steward (incremental) F1 with intervals:", ""]
    inc = quality.get("steward-incremental", {})
    lines.append("| | " + " | ".join(versions) + " |")
    lines.append("|---|" + "---|" * len(versions))
    for m in ("P", "R", "F1"):
        lines.append(f"| {m} | " + " | ".join(_pct(inc.get(v, {}).get(m)) for v in versions) + " |")
    lines += [
        "",
        "## 2. Does the knowledge stay usable? The skill-following instrument",
        "",
        "`steward-skill-follower` is a measuring instrument, not a model: it asks the user what they want in",
        "their own words, lets the supply choose the plan from the conversation's words and the tools it was",
        'offered (never from fact names; a later clause, "…; then …", adds the part it names; a write the',
        "conversation leaves unnamed is dropped, one the catalog names better swapped in, D182), asks for the",
        "facts the plan binds and the fields its writes may set, and executes its steps, binding each",
        "argument from the user's facts (under the user's own name for them; normalised to the schema: enum",
        "members, numbers) or from earlier results by the skill's argument flow (a later page looked at when",
        "no item matches); a lookup by a fact the user lacks is rebound to another field its tool searches by,",
        "or to another route the catalog has to the same records (D192); a write no stored skill makes is",
        "planned from the catalog tool the request names (D193); a fact the request names twice goes to the",
        'part whose clause it is (D194); "… and every other X of the same P whose F is V" repeats the write',
        "on P's other records, listed by the catalog's lookup of them (D191). `frozen-v1` is",
        "the benchmark's baseline (the v1 reference path replayed by name on every version, in the Domain tools",
        "setting, as the instrument runs on its task's domain world) on the same tasks.",
        "Metrics are `toolshift bench eval`'s, beside **strict SR**: solved (Δgold ⊆ Δagent) and nothing",
        "else written (every change of the agent's the image of a gold change; `Task.verdict`), computed",
        f"here from each episode's world diff. For scale, {SEED['steward_sr']}.",
        "",
    ]
    for agent, by_v in scores.items():
        lines += [f"### {agent}", "", "| version | " + " | ".join(PART2_METRICS) + " |"]
        lines.append("|---|" + "---|" * len(PART2_METRICS))
        for v in [*versions, "all"]:
            row = by_v.get(v, {})
            lines.append(
                f"| {v} | "
                + " | ".join(_pct(row.get(m), m.endswith(("IDR", "DAR"))) for m in PART2_METRICS)
                + " |"
            )
        if by_v.get("excluded"):
            lines.append("")
            lines.append("Excluded: " + ", ".join(f"{k}: {n}" for k, n in by_v["excluded"].items()))
        if by_v.get("recorded_at"):
            lines += ["", f"Recorded {by_v['recorded_at']}."]
        lines.append("")
    lines += [
        "### Maintenance work per version",
        "",
        "Content edits are skills written (add, revise): what a model-driven maintainer would spend tokens",
        "on. Renames substitute a tool's new name in the skills using it, where the catalog has exactly one",
        "new tool of the domain with the very same input schema, and move a result path the version's results",
        "contradict to where they hold the value (`data.items` for `items`; mechanical, nothing written, no",
        "tokens; counted apart, and in `+ renames` beside). State edits flip a skill active or inactive by tool",
        "presence and schema (no content). `distilled` counts episodes distilled (an episode whose call",
        "sequence an active planning skill already has is not, nor one with the calls and the kind of facts",
        "of one distilled earlier in the same pass); CPU seconds are the maintainer's own. Model-free",
        "distillation spends no tokens.",
        "",
        "| version | incremental content + renames + state edits | full-rebuild edits | incremental content / full (+ renames) | incremental distilled / full | incremental CPU s | full CPU s | skills in incremental (active) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tot = {"content": 0, "renames": 0, "all": 0, "full": 0, "dist": 0, "fdist": 0}
    for v in range(1, ctx.versions + 1):
        i, f = work["incremental"].get(v, {}), work["full"].get(v, {})
        if not i or not f:
            continue
        ops = i.get("by_op", {})
        content = ops.get("add", 0) + ops.get("revise", 0)
        renames = ops.get("rename", 0)
        state = i["edits"] - content - renames
        if v > 1:
            tot["content"] += content
            tot["renames"] += renames
            tot["all"] += i["edits"]
            tot["full"] += f["edits"]
            tot["dist"] += i["distilled"]
            tot["fdist"] += f["distilled"]
        ratio = (
            f"{100 * content / f['edits']:.0f}% ({100 * (content + renames) / f['edits']:.0f}%)"
            if f["edits"]
            else "–"
        )
        dist = f"{i['distilled']} / {f['distilled']} ({100 * i['distilled'] / max(1, f['distilled']):.0f}%)"
        lines.append(
            f"| v{v} | {content} + {renames} + {state} | {f['edits']} | {ratio} | {dist} | {i['seconds']:.2f} | "
            f"{f['seconds']:.2f} | {sum(i['skills'].values())} ({i['active']}) |"
        )
    if tot["full"]:
        lines += [
            "",
            f"Over v2–v{ctx.versions}: incremental maintenance wrote {tot['content']} skills "
            f"({100 * tot['content'] / tot['full']:.0f}% of full rebuilding's {tot['full']}; with "
            f"{tot['renames']} renames {100 * (tot['content'] + tot['renames']) / tot['full']:.0f}%), "
            f"{tot['all']} edits with renames and state changes ({100 * tot['all'] / tot['full']:.0f}%), and "
            f"distilled {tot['dist']} episodes ({100 * tot['dist'] / max(1, tot['fdist']):.0f}% of {tot['fdist']}).",
        ]
    lines += [
        "",
        "## 3. With a model agent",
        "",
    ]
    if models:
        lines += [
            f"At the scale run: {model_sample} test task(s) per version asked (`n` says how many each file holds:"
            " a file recorded earlier at a larger sample keeps its episodes). `steward-plan-<model>` is the model",
            "behind `StewardServer` (the incremental library) with the plan the request's words choose handed to",
            "it by the harness: its facts and steps lead the system prompt and its tools are supplied (D196);",
            "the three Steward tools are not listed, so the supply is fixed for the episode. `steward-<model>`",
            "is the same model shown `steward_plan`, `retrieve_tools` and `explore_capabilities` with the",
            "initial supply, left to ask. `steward-plan-full-<model>` and `steward-plan-frozen-<model>` are the",
            "handoff with the full-rebuild library of each version and with the v1 library on every version",
            "(the seed's full-rebuild and frozen conditions). The `[domain-tools]` row is the same model on its",
            "task's domain tools (`toolshift bench baseline`, the seed's No Skill / Domain Tools setting).",
            "",
            "| agent | version | n | SR | strict SR | P | R | F1 | Step-SPE |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for agent, by_v in models.items():
            for v in [*versions, "all"]:
                row = by_v.get(v, {})
                lines.append(
                    f"| {agent} | {v} | {row.get('SR', {}).get('n', 0)} | "
                    + " | ".join(_pct(row.get(m)) for m in ("SR", STRICT, "P", "R", "F1", "Step-SPE"))
                    + " |"
                )
        paired = {
            a: by_v for a, by_v in models.items() if any(VS_DOMAIN in by_v.get(v, {}) for v in versions)
        }
        if paired:
            lines += [
                "",
                "SR minus the `[domain-tools]` row's on the same tasks and versions, percentage points [95% paired"
                " bootstrap interval over tasks]:",
                "",
                "| agent | " + " | ".join([*versions, "all"]) + " |",
                "|---|" + "---|" * (len(versions) + 1),
            ]
            lines += [
                f"| {agent} | "
                + " | ".join(signed_points(by_v.get(v, {}).get(VS_DOMAIN)) for v in [*versions, "all"])
                + " |"
                for agent, by_v in paired.items()
            ]
        lines += [
            "",
            "Cost-SPE beside IDR (on the tasks whose reference path got cheaper since the previous version: did"
            " the agent find the better path) and DAR (on those whose path got dearer: did it adapt), seed §4;"
            " `n` counts the tasks each rate stands on:",
            "",
            "| agent | version | Cost-SPE | Step-IDR | Step-DAR | Cost-IDR | Cost-DAR |",
            "|---|---|---|---|---|---|---|",
        ]
        for agent, by_v in models.items():
            for v in [*versions, "all"]:
                row = by_v.get(v, {})
                lines.append(
                    f"| {agent} | {v} | {_pct(row.get('Cost-SPE'))} | "
                    + " | ".join(
                        _pct(row.get(m), True) for m in ("Step-IDR", "Step-DAR", "Cost-IDR", "Cost-DAR")
                    )
                    + " |"
                )
        lines += ["", "Recorded (each episode keeps the commit that made it, `source.code`):", ""]
        lines += [
            f"- {agent}: recorded {by_v.get('recorded_at') or '(no episode)'}"
            for agent, by_v in models.items()
        ]
        lines.append("")
    if note:
        lines += [note, ""]
    kinds = {_model_condition(agent) for agent in models or {}}
    missing = [c for c in ("No Skill", "frozen", "full rebuild", "Steward") if c not in kinds]
    lines += [
        "Not run: "
        + (f"the seed's model conditions {', '.join(missing)}; " if missing else "")
        + "its supply diagnostics (Standard, Domain, Task, Oracle tools, Oracle path) with a model and its",
        "capability-supply ablation (skill search alone, tool search alone, full supply).",
        "",
        "## Figures",
        "",
    ]
    for m in ("SR", STRICT, "F1", "Step-SPE", "Cost-SPE", "Step-IDR", "Step-DAR", "Cost-IDR", "Cost-DAR"):
        series = {
            a: {v: by_v[v][m]["mean"] for v in versions if v in by_v and by_v[v].get(m, {}).get("n")}
            for a, by_v in scores.items()
        }
        png = plot(
            series, versions, f"{m} per version", figures / f"{stem}_{m.lower().replace(' ', '_')}.png"
        )
        lines.append(f"![{m} per version]({png.name})")
    sup = {
        c: {v: q["F1"]["mean"] for v, q in by_v.items()} for c, by_v in quality.items() if c != "full catalog"
    }
    png = plot(sup, versions, "supply F1 per version (no agent)", figures / f"{stem}_supply_f1.png")
    lines += [f"![supply F1 per version]({png.name})", ""]
    markdown.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(markdown, "\n".join(lines))
    return results


__all__ = ["KINDS", "evaluate_follow", "frozen_v1", "write_report"]
