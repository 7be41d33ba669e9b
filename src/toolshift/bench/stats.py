"""Per-domain statistics of a build: tools, tasks, splits, path lengths, functions per task, task quality, a PNG."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from toolshift.bench.audit import TaskReader, duplicate_groups, reordered_creates, replay_order
from toolshift.bench.build import (
    build_world,
    domain_report,
    iter_domain_tasks,
    load_manifest,
    require_gold_paths,
)
from toolshift.bench.instructions import entity_noun
from toolshift.bench.naturalness import RULES, JudgeCache, rule_score
from toolshift.fileio import atomic_path
from toolshift.models import Task


@dataclass
class DomainStats:
    name: str
    tools: int
    tasks: int
    train: int
    test: int
    path_lengths: list[int] = field(default_factory=list)
    functions: list[int] = field(default_factory=list)
    writes: list[int] = field(default_factory=list)
    spliced: int = 0
    repeated: int = 0
    status: str = "ok"
    attempts: int = 0
    used_tools: int = 0
    """Distinct tools at least one task's gold path calls."""
    rejections: Counter[str] = field(default_factory=Counter)
    candidates: Counter[str] = field(default_factory=Counter)

    @property
    def mean_path(self) -> float:
        return statistics.fmean(self.path_lengths) if self.path_lengths else 0.0


def build_stats(out: str | Path) -> list[DomainStats]:
    m = load_manifest(out)
    by_name = {e.name: e for e in m.domains}
    stats: list[DomainStats] = []
    for name, tasks in iter_domain_tasks(out):
        e = by_name[name]
        train = sum(1 for t in tasks if t.split == "train")
        s = DomainStats(
            name, e.tools, len(tasks), train, sum(1 for t in tasks if t.split == "test"), status=e.status
        )
        rep = domain_report(out, name)
        s.attempts = rep.attempts
        s.rejections = Counter({_family(k): 0 for k in rep.rejections})
        for k, v in rep.rejections.items():
            s.rejections[_family(k)] += v
        for k, v in rep.candidates_passed_over.items():
            s.candidates[_family(k)] += v
        s.used_tools = len({c.tool for t in tasks for c in t.gold_path})
        for t in tasks:
            s.path_lengths.append(len(t.gold_path))
            s.functions.append(len(set(t.base_functions)))
            s.writes.append(int(t.difficulty.get("writes", 0)))
            s.spliced += bool(t.difficulty.get("spliced"))
            s.repeated += int(t.difficulty.get("repeated", 1)) > 1
        stats.append(s)
    return stats


@dataclass
class Quality:
    """What `toolshift.bench.audit` and the naturalness rubric find in a build's tasks (counts of tasks)."""

    tasks: int = 0
    policy_conflicts: int = 0
    """Tasks naming a row by something other than an identifier its domain accepts, or taking one the user never identifies."""
    policy_by_entity: Counter[str] = field(default_factory=Counter)
    duplicate_groups: int = 0
    duplicate_tasks: int = 0
    duplicate_groups_across_split: int = 0
    routed: int = 0
    """Tasks whose writes take a row the agent reaches through another record."""
    routed_despite_identifier: int = 0
    reorderable: int = 0
    """Tasks with two independent row-creating writes that can run in the other order."""
    reorderable_same_table: int = 0
    reordered_pass: int = 0
    reordered_pass_exact: int = 0
    """Of the reorderable tasks, those the old exact-identity judge would still pass."""
    rule_scores: list[float] = field(default_factory=list)
    rule_failures: Counter[str] = field(default_factory=Counter)
    all_rules_pass: int = 0
    judge: str = ""
    judge_scores: list[int] = field(default_factory=list)
    judge_unscored: int = 0


def quality_stats(
    out: str | Path, judge: tuple[str, Callable[[str], int | None]] | None = None, progress=None
) -> Quality:
    """Audit every task of a build against its domain (policy, routing, reordered creates) and score
    its wording (rules; and a judge model when given as `(name, scorer)`)."""
    q = Quality(judge=judge[0] if judge else "")
    cache = JudgeCache(Path(out) / "naturalness.json", judge[0]) if judge else None
    everything: list[Task] = []
    for name, tasks in iter_domain_tasks(out):
        world = build_world(out, name)
        require_gold_paths(world, tasks, str(Path(out) / "domains" / name / "tasks.jsonl"))
        reader = TaskReader(world)
        nouns = [entity_noun(e.name) for e in world.domain.spec.entities]
        for t in tasks:
            q.tasks += 1
            conflicts = reader.policy_conflicts(t)
            if conflicts:
                q.policy_conflicts += 1
                q.policy_by_entity[f"{name}.{conflicts[0].split(' ', 1)[0]}"] += 1
            q.routed += bool(reader.routed(t))
            despite = bool(reader.routed_despite_identifier(t))
            q.routed_despite_identifier += despite
            swap = reordered_creates(t, world)
            if swap is not None:
                q.reorderable += 1
                q.reorderable_same_table += swap.same_table
                diff = replay_order(t, world, swap.order)
                q.reordered_pass += t.covered_by(diff)
                made = {c.identity() for c in diff}
                q.reordered_pass_exact += all(c.identity() in made for c in t.expected_changes)
            s = rule_score(t, nouns, despite)
            q.rule_scores.append(s.score)
            q.all_rules_pass += all(s.passed.values())
            q.rule_failures.update(k for k, v in s.passed.items() if not v)
            if judge and cache is not None:
                got = cache.score(t, judge[1])
                if got is None:
                    q.judge_unscored += 1
                else:
                    q.judge_scores.append(got)
            if progress is not None:
                progress()
        world.close()
        everything += tasks
    if cache is not None:
        cache.save()
    groups = duplicate_groups(everything)
    q.duplicate_groups = len(groups)
    q.duplicate_tasks = sum(len(g) for g in groups)
    q.duplicate_groups_across_split = sum(1 for g in groups if len({t.split for t in g}) > 1)
    return q


def _family(reason: str) -> str:
    """`precondition:order_not_refundable` → `precondition:*` (one row per kind of reason)."""
    kind, _, _ = reason.partition(":")
    return f"{kind}:*" if kind in ("precondition", "unreachable", "no_candidate", "no_rows") else reason


def distribution(values: list[int]) -> dict[int, int]:
    return dict(sorted(Counter(values).items()))


def quality_rows(q: Quality) -> list[tuple[str, str, str]]:
    """(measure, value, what it means) rows for the console and the markdown page."""
    mean = statistics.fmean(q.rule_scores) if q.rule_scores else 0.0
    rows = [
        ("policy conflicts", f"{q.policy_conflicts} of {q.tasks} tasks",
         "a row named by something its domain's policy does not accept as an identifier (its `lookup`), or "
         "taken by a write without the user ever identifying it"),
        ("duplicate Δgold", f"{q.duplicate_groups} groups ({q.duplicate_tasks} tasks), "
         f"{q.duplicate_groups_across_split} across train/test",
         "tasks of one domain whose Δgold are equal up to a renaming of generated keys"),
        ("write targets reached through another record", f"{q.routed} tasks",
         "rows without identifiers of their own, named by a record that holds or lists them"),
        ("… although the user states the row's own identifier", f"{q.routed_despite_identifier} tasks",
         "\"the opportunity of … whose opportunity number is …\""),
        ("independent creates in the other order", f"{q.reordered_pass} of {q.reorderable} pass "
         f"({q.reorderable_same_table} in one table; {q.reordered_pass_exact} would pass by exact identity)",
         "replayed with the later create moved first; judged by `Task.covered_by`"),
        ("naturalness (rules)", f"{mean:.2f} / 5 mean; {q.all_rules_pass} of {q.tasks} pass every rule",
         "the rubric of `toolshift.bench.naturalness`"),
    ]  # fmt: skip
    if q.judge:
        jm = statistics.fmean(q.judge_scores) if q.judge_scores else 0.0
        rows.append(
            (f"naturalness (judge {q.judge})", f"{jm:.2f} / 5 mean over {len(q.judge_scores)} tasks"
             f" ({q.judge_unscored} unscored)", "the same rubric in the judge's prompt")
        )  # fmt: skip
    return rows


def markdown(
    stats: list[DomainStats],
    command: str,
    build_command: str = "",
    quality: Quality | None = None,
    fingerprint: str = "",
) -> str:
    """The stats as markdown tables (what docs/results/bench-stats.md holds); `fingerprint` names the build
    (`build_fingerprint`), as every results page resting on a build does."""
    made_by = [build_command, command] if build_command else [command]
    named = f"Build `{fingerprint}`: " if fingerprint else ""
    lines = [
        "# Benchmark build statistics",
        "",
        f"{named}{len(stats)} domains, {sum(s.tools for s in stats)} tools, {sum(s.tasks for s in stats)} "
        f"validated tasks ({sum(s.train for s in stats)} train / {sum(s.test for s in stats)} test). Made by:",
        "",
        *[f"    {c}" for c in made_by],
        "",
        "Every task replayed its gold path on a fresh world to exactly its Δgold before it was kept; Δgold",
        "is never empty nor true of the initial state, and the gold path's reads alone never reach it.",
        "Path len = gold calls per task; functions/task = distinct tools per task; multi-write = tasks with",
        "more than one write; spliced = a second write joined on a row the path already found; repeated =",
        "the same change applied to 2–3 sibling records.",
        "",
        "| domain | tools | tools used | tasks | train | test | path len (mean / min–max) | functions/task (mean) | multi-write | spliced | repeated |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for s in stats:
        lo, hi = (min(s.path_lengths), max(s.path_lengths)) if s.path_lengths else (0, 0)
        fmean = statistics.fmean(s.functions) if s.functions else 0.0
        multi = sum(1 for w in s.writes if w > 1)
        lines.append(
            f"| {s.name} | {s.tools} | {s.used_tools} | {s.tasks} | {s.train} | {s.test} | "
            f"{s.mean_path:.2f} / {lo}–{hi} | "
            f"{fmean:.2f} | {multi} | {s.spliced} | {s.repeated} |"
        )
    allp = [v for s in stats for v in s.path_lengths]
    allf = [v for s in stats for v in s.functions]
    tot = (
        f"| **total ({len(stats)} domains)** | {sum(s.tools for s in stats)} | {sum(s.used_tools for s in stats)} | "
        f"{sum(s.tasks for s in stats)} | "
        f"{sum(s.train for s in stats)} | {sum(s.test for s in stats)} | "
        f"{(statistics.fmean(allp) if allp else 0):.2f} / {min(allp, default=0)}–{max(allp, default=0)} | "
        f"{(statistics.fmean(allf) if allf else 0):.2f} | {sum(1 for s in stats for w in s.writes if w > 1)} | "
        f"{sum(s.spliced for s in stats)} | {sum(s.repeated for s in stats)} |"
    )
    lines.append(tot)
    dist_f = distribution(allf)
    dist_p = distribution(allp)
    lines += [
        "",
        "Distinct functions per task (all domains):",
        "",
        "| functions | " + " | ".join(str(k) for k in dist_f) + " |",
        "|---|" + "---:|" * len(dist_f),
        "| tasks | " + " | ".join(str(v) for v in dist_f.values()) + " |",
        "",
        "Gold path length (calls) per task (all domains):",
        "",
        "| calls | " + " | ".join(str(k) for k in dist_p) + " |",
        "|---|" + "---:|" * len(dist_p),
        "| tasks | " + " | ".join(str(v) for v in dist_p.values()) + " |",
    ]
    rejections: Counter[str] = Counter()
    candidates: Counter[str] = Counter()
    for s in stats:
        rejections.update(s.rejections)
        candidates.update(s.candidates)
    lines += [
        "",
        f"Synthesis attempts: {sum(s.attempts for s in stats)} for {sum(s.tasks for s in stats)} tasks. "
        "Attempts rejected, by reason:",
        "",
        "| reason | attempts |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in rejections.most_common()],
        "",
        "Candidate rows passed over inside attempts (a policy refused the row's state, or no read reaches it):",
        "",
        "| reason | candidates |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in candidates.most_common()],
    ]
    if quality is not None:
        lines += [
            "",
            "## Task quality",
            "",
            "Every task read against its domain's spec and seeded rows (`toolshift.bench.audit`) and its intent",
            "scored by the naturalness rubric (`toolshift.bench.naturalness`; rules unless a judge model is given):",
            "",
            "| measure | value | what it counts |",
            "|---|---|---|",
            *[f"| {a} | {b} | {c} |" for a, b, c in quality_rows(quality)],
            "",
            "Naturalness rules failed (tasks):",
            "",
            "| rule | tasks failing |",
            "|---|---:|",
            *[f"| {r} | {quality.rule_failures.get(r, 0)} |" for r in RULES],
        ]
        if quality.policy_by_entity:
            lines += [
                "",
                "Policy conflicts by entity:",
                "",
                "| entity | tasks |",
                "|---|---:|",
                *[f"| {k} | {v} |" for k, v in quality.policy_by_entity.most_common()],
            ]
    return "\n".join(lines) + "\n"


def histogram_png(stats: list[DomainStats], path: Path, quality: Quality | None = None) -> Path:
    """Histograms over all domains: distinct functions per task, gold path length and (with `quality`)
    the naturalness rubric's score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    allf = [v for s in stats for v in s.functions]
    allp = [v for s in stats for v in s.path_lengths]
    panels = 3 if quality is not None else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4))
    a, b = axes[0], axes[1]
    if allf:
        a.hist(allf, bins=range(1, max(allf) + 2), align="left", rwidth=0.85, color="#4c72b0")
    a.set_xlabel("distinct functions per task")
    a.set_ylabel("tasks")
    a.set_title(f"functions per task ({len(allf)} tasks)")
    if allp:
        b.hist(allp, bins=range(1, max(allp) + 2), align="left", rwidth=0.85, color="#dd8452")
    b.set_xlabel("gold path length (calls)")
    b.set_title(f"path length ({len(stats)} domains)")
    if quality is not None:
        c = axes[2]
        scores = Counter(round(s, 2) for s in quality.rule_scores)
        xs = sorted(scores)
        c.bar([f"{x:.1f}" for x in xs], [scores[x] for x in xs], color="#55a868")
        c.set_xlabel("naturalness score by rules (1–5)")
        c.set_title(f"naturalness ({quality.all_rules_pass} of {quality.tasks} pass every rule)")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    return path
