"""Per-domain statistics of a build: tools, tasks, splits, path lengths and functions per task, plus a PNG."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from toolshift.bench.build import domain_report, iter_domain_tasks, load_manifest
from toolshift.fileio import atomic_path


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
        s = DomainStats(name, e.tools, len(tasks), e.train, e.test, status=e.status)
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


def _family(reason: str) -> str:
    """`precondition:order_not_refundable` → `precondition:*` (one row per kind of reason)."""
    kind, _, _ = reason.partition(":")
    return f"{kind}:*" if kind in ("precondition", "unreachable", "no_candidate", "no_rows") else reason


def distribution(values: list[int]) -> dict[int, int]:
    return dict(sorted(Counter(values).items()))


def markdown(stats: list[DomainStats], command: str, build_command: str = "") -> str:
    """The stats as markdown tables (what docs/results/bench-stats.md holds)."""
    made_by = [build_command, command] if build_command else [command]
    lines = [
        "# Benchmark build statistics",
        "",
        f"{len(stats)} domains, {sum(s.tools for s in stats)} tools, {sum(s.tasks for s in stats)} validated "
        f"tasks ({sum(s.train for s in stats)} train / {sum(s.test for s in stats)} test). Made by:",
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
    return "\n".join(lines) + "\n"


def histogram_png(stats: list[DomainStats], path: Path) -> Path:
    """Two histograms: distinct functions per task and gold path length, over all domains."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    allf = [v for s in stats for v in s.functions]
    allp = [v for s in stats for v in s.path_lengths]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    if allf:
        a.hist(allf, bins=range(1, max(allf) + 2), align="left", rwidth=0.85, color="#4c72b0")
    a.set_xlabel("distinct functions per task")
    a.set_ylabel("tasks")
    a.set_title(f"functions per task ({len(allf)} tasks)")
    if allp:
        b.hist(allp, bins=range(1, max(allp) + 2), align="left", rwidth=0.85, color="#dd8452")
    b.set_xlabel("gold path length (calls)")
    b.set_title(f"path length ({len(stats)} domains)")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    return path
