"""`toolshift evolve report`: the analyses of one or more runs as PNGs and a markdown page.

Before = the runs' seed tasks, after = their final datasets. The page holds the command that made it,
the completion-rate distributions beside the seed paper's, cost and tokens per generation, feature and
failure-mode frequencies, the feature × failure heatmap, the instruction-embedding map with the largest
moves, tool co-occurrence, and what each operator did.
"""

from __future__ import annotations

import shlex
from collections import Counter
from pathlib import Path

import numpy as np

from toolshift.errors import BadInputError
from toolshift.evolve.analysis import (
    BINS,
    completion_histogram,
    cosine_distance,
    embed,
    failure_shares,
    feature_failure_matrix,
    feature_shares,
    instruction,
    share_between,
    tool_cooccurrence,
    tool_pairs,
    tsne,
)
from toolshift.evolve.archive import ProgramRecord
from toolshift.evolve.evidence import evolved_only, lineage_lines, lineages, rubric_lines, source_of
from toolshift.evolve.feedback import FAILURE_MODES
from toolshift.evolve.select import read_selection
from toolshift.evolve.store import RunStore, generation_stats
from toolshift.evolve.taxonomy import FEATURES

SEED_PAPER = (
    "The seed paper (TURTLE, AppWorld, Gemma 4 31B-it solver): before evolution 69% of tasks were always "
    "solved and 12% never; after, nearly all tasks lie within 40–60% completion (τ-telecom, τ-banking and "
    "AutomationBench likewise largely in 40–60%)."
)


class RunData:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.store = RunStore(folder)
        self.config = self.store.config()
        self.records = self.store.records()
        self.by_id = {r.id: r for r in self.records}
        self.seeds = [r for r in self.records if r.step is None and r.evaluated]
        selection = read_selection(folder)
        kept = [i for root in selection.roots for i in root.kept] if selection else []
        self.final_all = [self.by_id[i] for i in kept if i in self.by_id]
        # "final" figures count only what evolved: seeds kept unchanged are reported apart
        self.final, self.unchanged = evolved_only(self.final_all)
        self.selection = selection


def run_command(folder: Path, config) -> str:  # type: ignore[no-untyped-def]
    """The `toolshift evolve run` command equivalent to a run's configuration."""
    c, sc = config, config.solver
    args = ["toolshift", "evolve", "run", "--seeds", "SEEDS.jsonl", "--out", str(folder), "--solver", sc.model,
            "--attempts", str(sc.attempts), "--generations", str(c.generations), "--max-turns", str(sc.max_turns),
            "--seed", str(c.seed)]  # fmt: skip
    for flag, value, default in (("--user", sc.user, "scripted"), ("--proposer", c.proposer, "structural"),
                                 ("--moves", c.moves, "coarse"),
                                 ("--feedback", c.feedback, "rules"), ("--judge", c.judge, "rules"),
                                 ("--labeler", c.labeler, "rules")):  # fmt: skip
        if value != default:
            args += [flag, value]
    if sc.partial_credit:
        args.append("--partial-credit")
    return shlex.join(args)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(
    path: Path, labels: list[str], before: list[float], after: list[float], title: str, ylabel: str
) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 4))
    x = np.arange(len(labels))
    ax.bar(x - 0.2, before, 0.4, label="seed tasks (before)", color="#f28e2b")
    ax.bar(
        x + 0.2, after, 0.4, label="evolved final tasks (after; unchanged seeds excluded)", color="#4e79a7"
    )
    ax.set_xticks(x, labels, rotation=30 if len(labels) > 6 and max(map(len, labels)) > 4 else 0, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


HEATMAP_DPI = 110
HEATMAP_NUMBER_PT = 10
"""The cell numbers' size: with panels stacked one above the other, the feature × failure map is about 1,100 px
wide, so a report card (1,300 px) shows it unscaled and its numbers about 15 px high (they were 6 pt in two
side-by-side panels shrunk to the card: 8 px)."""


def heatmap_figsize(rows: int, cols: int, panels: int) -> tuple[float, float]:
    """Inches for `panels` heatmaps of rows × cols stacked vertically: 0.85 in a column, 0.5 in a row."""
    return max(6.0, 0.85 * cols + 3.0), panels * (0.5 * rows + 2.6)


def _heatmaps(
    path: Path, mats: list[np.ndarray], titles: list[str], rows: list[str], cols: list[str], title: str
) -> None:
    plt = _plt()
    fig, axes = plt.subplots(len(mats), 1, figsize=heatmap_figsize(len(rows), len(cols), len(mats)))
    top = max(float(m.max()) for m in mats) or 1.0
    number_pt = HEATMAP_NUMBER_PT if len(cols) <= 16 else HEATMAP_NUMBER_PT - 2
    for ax, m, t in zip(np.atleast_1d(axes), mats, titles, strict=True):
        ax.imshow(m, cmap="Blues", vmin=0, vmax=top, aspect="auto")
        ax.set_xticks(range(len(cols)), cols, rotation=40, ha="right", fontsize=9)
        ax.set_yticks(range(len(rows)), rows, fontsize=9)
        for i in range(len(rows)):
            for j in range(len(cols)):
                if m[i, j] == 0:
                    ax.add_patch(
                        plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#e15759", lw=0.6)
                    )
                else:
                    dark = m[i, j] > 0.6 * top
                    ax.text(j, i, f"{100 * m[i, j]:.0f}", ha="center", va="center", fontsize=number_pt,
                            color="white" if dark else "#1d2330")  # fmt: skip
        ax.set_title(t, fontsize=11)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=HEATMAP_DPI)
    plt.close(fig)


def _lineage_plot(path: Path, ls: list) -> None:  # type: ignore[type-arg]
    """Each lineage's seed completion (orange) and its evolved final tasks' mean (blue), by source; a
    lineage without evolved final tasks shows its seed alone."""
    plt = _plt()
    ls = sorted(ls, key=lambda x: (source_of(x.root), x.root.completion or 0.0, x.root.id))
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(ls) + 1.6))
    ax.axvspan(0.3, 0.7, color="#59a14f", alpha=0.12, label="30–70%")
    for y, x in enumerate(ls):
        b = x.root.completion or 0.0
        ax.scatter([b], [y], color="#f28e2b", zorder=3, s=28)
        if x.after is not None:
            ax.annotate("", xy=(x.after, y), xytext=(b, y), arrowprops={"arrowstyle": "->", "color": "#888"})
            ax.scatter([x.after], [y], color="#4e79a7", zorder=4, s=16)
    ax.set_yticks(range(len(ls)), [f"{x.root.id} ({source_of(x.root)})" for x in ls], fontsize=7)
    ax.set_xlim(-0.05, 1.05)
    ax.set_xlabel("completion rate: seed (orange) → mean of its evolved final tasks (blue)")
    ax.set_title("Per lineage, before and after (unchanged seeds excluded from after)")
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _descendant_pairs(runs: list[RunData]) -> list[tuple[ProgramRecord, ProgramRecord]]:
    pairs = []
    for run in runs:
        for r in run.final:
            seed = run.by_id.get(r.root)
            if seed is not None and seed.id != r.id:
                pairs.append((seed, r))
    return pairs


def _embedding_map(
    path: Path, runs: list[RunData], before: list[ProgramRecord], after: list[ProgramRecord], how: str
):
    items = [*before, *[r for r in after if r.id not in {b.id for b in before}]]
    texts = [instruction(r) for r in items]
    if len(texts) < 3:
        return None, [], "none (fewer than three tasks)"
    vectors, method = embed(texts, how)
    pos = {r.id: i for i, r in enumerate(items)}
    moves = []
    for seed, evolved in _descendant_pairs(runs):
        if seed.id in pos and evolved.id in pos:
            moves.append((cosine_distance(vectors[pos[seed.id]], vectors[pos[evolved.id]]), seed, evolved))
    moves.sort(key=lambda m: -m[0])
    y = tsne(vectors, seed=0)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 6))
    b = [pos[r.id] for r in before]
    a = [pos[r.id] for r in after if r.id in pos]
    ax.scatter(y[a, 0], y[a, 1], c="#4e79a7", s=28, label="evolved final tasks", alpha=0.8)
    ax.scatter(y[b, 0], y[b, 1], facecolors="none", edgecolors="#f28e2b", s=70, lw=1.5, label="seed tasks")
    for _, seed, evolved in moves[:10]:
        i, j = pos[seed.id], pos[evolved.id]
        ax.annotate("", xy=y[j], xytext=y[i], arrowprops={"arrowstyle": "->", "color": "#59a14f", "lw": 1})
    ax.set_title(f"t-SNE of instruction embeddings ({method}); arrows: 10 largest cosine moves")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path, moves[:10], method


def _operators(runs: list[RunData]) -> list[tuple[str, int, int, float, float]]:
    """(operator, children, evaluated, mean completion change from the parent, share landing in 30–70%)."""
    stats: dict[str, list[tuple[bool, float | None, bool]]] = {}
    for run in runs:
        for r in run.records:
            if r.step is None:
                continue
            op = r.mutation.operator or r.mutation.proposer
            parent = run.by_id.get(r.parent or "")
            delta = None
            if (
                r.evaluated
                and parent is not None
                and parent.completion is not None
                and r.completion is not None
            ):
                delta = r.completion - parent.completion
            band = r.evaluated and r.completion is not None and 0.3 <= r.completion <= 0.7
            stats.setdefault(op, []).append((r.evaluated, delta, band))
    out = []
    for op, rows in sorted(stats.items()):
        deltas = [d for _, d, _ in rows if d is not None]
        evaluated = sum(1 for e, _, _ in rows if e)
        out.append(
            (
                op,
                len(rows),
                evaluated,
                sum(deltas) / len(deltas) if deltas else 0.0,
                sum(b for *_, b in rows) / len(rows),
            )
        )
    return out


def strict_lines(before: list[ProgramRecord], after: list[ProgramRecord]) -> list[str]:
    """Completion by strict success (what fitness uses) beside completion by SR (collateral writes allowed)."""

    def row(name: str, records: list[ProgramRecord]) -> str:
        both = [r for r in records if r.completion is not None and r.sr_completion is not None]
        attempts = [a for r in records for a in r.attempts if a.success is not None]
        hurt = sum(1 for a in attempts if a.success and a.strict_success is False)
        if not both:
            return f"| {name} | – | – | – | {hurt} of {len(attempts)} |"
        strict = sum(r.completion or 0.0 for r in both) / len(both)
        sr = sum(r.sr_completion or 0.0 for r in both) / len(both)
        return f"| {name} (n={len(both)}) | {_pct(strict)} | {_pct(sr)} | {_pct(sr - strict)} | {hurt} of {len(attempts)} |"

    old = sum(1 for r in [*before, *after] if r.completion is not None and r.sr_completion is None)
    return [
        "Completion counts an attempt solved only by strict success: Δgold ⊆ Δagent and no collateral write "
        "(no change outside Δgold). Beside it, completion by SR (Δgold ⊆ Δagent alone) and the attempts that "
        "passed SR while changing other records:",
        "",
        "| tasks | mean completion (strict) | mean completion (SR) | SR − strict | attempts succeeding with collateral writes |",
        "|---|---|---|---|---|",
        row("seed tasks", before),
        row("final tasks", after),
        *(["", f"{old} program record(s) predate strict success: their completion is SR's."] if old else []),
    ]  # fmt: skip


def write_report(
    folders: list[Path], out: Path, *, embeddings: str = "auto", title: str = "", note: str = ""
) -> Path:
    """Write `out` (markdown) and its PNGs beside it, from the given run folders."""
    runs = []
    for folder in folders:
        if not (folder / "evolve.json").is_file():
            raise BadInputError("not an evolve run folder", source=str(folder))
        runs.append(RunData(folder))
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.stem
    before = [r for run in runs for r in run.seeds]
    after = [r for run in runs for r in run.final]
    lines = [
        f"# Task evolution (TURTLE): {title or 'results'}",
        "",
        "Made by: `" + shlex.join(["toolshift", "evolve", "report", *map(str, folders), "--out", str(out)]
                                  + (["--embeddings", embeddings] if embeddings != "auto" else [])
                                  + (["--title", title] if title else [])
                                  + (["--note", note] if note else [])) + "`",
        "",
        *([note, ""] if note else []),
        "",
        "Before = each run's seed tasks as its solver did on them; after = the evolved tasks of its final dataset "
        "(per seed, the programs with the highest completion-rate variance, ties kept, after the trivial-failure "
        "judge). A seed the selection kept unchanged is not an evolved task: it is listed apart (Lineages) and "
        "counted in no final-task figure.",
        "",
        "## Runs",
        "",
        "| run | seeds | generations | solver (N attempts) | proposer | programs | evaluated | rejected (by stage) | final tasks: evolved (+ unchanged seeds) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for run in runs:
        c = run.config
        stages = Counter(r.stage for r in run.records if not r.evaluated)
        rej = ", ".join(f"{k} {v}" for k, v in stages.most_common()) or "none"
        lines.append(
            f"| `{run.folder.name}` | {len(run.seeds)} | {c.generations} | {c.solver.model} ({c.solver.attempts}) | "
            f"{c.proposer} | {len(run.records)} | {sum(r.evaluated for r in run.records)} | {rej} | {len(run.final)} (+ {len(run.unchanged)}) |"
        )
    lines += [
        "",
        "Each run was made by (SEEDS.jsonl: the run's `seeds.jsonl`, from `toolshift evolve seeds`):",
        "",
    ]
    lines += [f"- `{run_command(run.folder, run.config)}`" for run in runs]
    lines += ["", "## Completion rates before and after", ""]
    hb, ha = completion_histogram(before), completion_histogram(after)
    nb, na = max(sum(hb), 1), max(sum(ha), 1)
    _bars(out.with_name(f"{stem}-completion.png"), [f"{b:.1f}" for b in BINS], [h / nb for h in hb], [h / na for h in ha],
          "Completion rate of the solver, seed vs evolved tasks", "share of tasks")  # fmt: skip
    lines += [
        f"![completion rates]({stem}-completion.png)",
        "",
        "| completion rate | " + " | ".join(f"{b:.1f}" for b in BINS) + " | in 30–70% | in 40–60% |",
        "|---|" + "---|" * (len(BINS) + 2),
        f"| seed tasks (n={sum(hb)}) | " + " | ".join(map(str, hb)) + f" | {_pct(share_between(before, 0.3, 0.7))} | {_pct(share_between(before, 0.4, 0.6))} |",
        f"| evolved final tasks (n={sum(ha)}) | " + " | ".join(map(str, ha)) + f" | {_pct(share_between(after, 0.3, 0.7))} | {_pct(share_between(after, 0.4, 0.6))} |",
        "",
        SEED_PAPER,
        "",
    ]  # fmt: skip
    lines += [*strict_lines(before, after), ""]
    finals = [r for run in runs for r in run.final_all]
    _lineage_plot(out.with_name(f"{stem}-lineages.png"), lineages(before, finals))
    lines += lineage_lines(before, finals)
    lines += [f"![lineages before and after]({stem}-lineages.png)", ""]
    lines += rubric_lines(before, after, [r for run in runs for r in run.records])
    goal = share_between(after, 0.3, 0.7)
    lines.append(
        f"Goal (≥ 80% of the final tasks within 30–70%): **{_pct(goal)} — {'met' if goal >= 0.8 else 'not met'}**"
        f" (seed tasks: {_pct(share_between(before, 0.3, 0.7))}; always solved {_pct(share_between(before, 1.0, 1.0))}, "
        f"never solved {_pct(share_between(before, 0.0, 0.0))})."
    )
    lines += ["", "## Cost and tokens per generation", ""]
    for run in runs:
        lines += [f"`{run.folder.name}`:", "", "| generation | programs | evaluated | feasible | in 30–70% | proposer s | verify s | solver s | solver tokens | model tokens (proposer, feedback, labels) | cost |", "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for g in generation_stats(run.records):
            sec = {k: g.costs[k].seconds if k in g.costs else 0.0 for k in ("proposer", "verify", "solver")}
            stok = (
                g.costs["solver"].prompt_tokens + g.costs["solver"].completion_tokens
                if "solver" in g.costs
                else 0
            )
            mtok = sum(c.prompt_tokens + c.completion_tokens for k, c in g.costs.items() if k != "solver")
            costs = [c.cost for c in g.costs.values() if c.cost is not None]
            lines.append(
                f"| {g.generation} | {g.programs} | {g.evaluated} | {g.feasible} | {g.in_band} | {sec['proposer']:.1f} | "
                f"{sec['verify']:.1f} | {sec['solver']:.0f} | {stok:,} | {mtok:,} | {f'${sum(costs):.4f}' if costs else '$0 (local)'} |"
            )
        lines.append("")
    fb, fa = feature_shares(before), feature_shares(after)
    _bars(out.with_name(f"{stem}-features.png"), list(FEATURES), [fb[f] for f in FEATURES], [fa[f] for f in FEATURES],
          "Task features (share of tasks)", "share of tasks")  # fmt: skip
    by = sorted({r.features_by for r in [*before, *after]} | {r.failure_by for r in [*before, *after]}) or [
        "rules"
    ]
    lines += ["## Task features and failure modes", "", f"Labelled by: {', '.join(by)} (rules over the ground truth where no judge model is configured).", "",
              f"![features]({stem}-features.png)", "", "| feature | seed tasks | final tasks |", "|---|---|---|"]  # fmt: skip
    lines += [f"| {f} | {_pct(fb[f])} | {_pct(fa[f])} |" for f in FEATURES]
    mb, ma = failure_shares(before), failure_shares(after)
    lines += [
        "",
        "| failure mode (tasks with a failed attempt) | seed tasks | final tasks |",
        "|---|---|---|",
    ]
    lines += [f"| {m} | {_pct(mb[m])} | {_pct(ma[m])} |" for m in FAILURE_MODES]
    hb_m, ha_m = feature_failure_matrix(before), feature_failure_matrix(after)
    _heatmaps(out.with_name(f"{stem}-heatmap.png"), [hb_m, ha_m], ["seed tasks", "final tasks"], list(FEATURES), list(FAILURE_MODES),
              "Task feature × failure mode (% of tasks; red outline: no task)")  # fmt: skip
    lines += ["", "## Feature × failure mode", "", f"![heatmap]({stem}-heatmap.png)", "",
              f"(feature, failure) pairs covered: seed tasks {int((hb_m > 0).sum())}, final tasks {int((ha_m > 0).sum())} "
              f"of {len(FEATURES) * len(FAILURE_MODES)}.", ""]  # fmt: skip
    shown, moves, method = _embedding_map(
        out.with_name(f"{stem}-embedding.png"), runs, before, after, embeddings
    )
    lines += ["## Instruction embeddings", ""]
    if shown is not None:
        lines += [f"Embeddings: {method}; map: t-SNE.", "", f"![embedding map]({stem}-embedding.png)", "",
                  "| cosine distance | seed instruction | evolved instruction |", "|---|---|---|"]  # fmt: skip
        for d, s, e in moves:
            lines.append(f"| {d:.2f} | {instruction(s)[:160]} | {instruction(e)[:220]} |")
    else:
        lines.append(f"No map: {method}.")
    tools = [
        t
        for t, _ in Counter(
            g.tool for r in [*before, *after] if r.task for g in r.task.gold_path
        ).most_common(16)
    ]
    if tools:
        _heatmaps(out.with_name(f"{stem}-cooccurrence.png"), [tool_cooccurrence(before, tools), tool_cooccurrence(after, tools)],
                  ["seed tasks", "final tasks"], tools, tools, "Tool co-occurrence in ground truths (% of tasks; diagonal: uses the tool)")  # fmt: skip
        lines += ["", "## Tool co-occurrence", "", f"![co-occurrence]({stem}-cooccurrence.png)", "",
                  f"Distinct tool pairs used together: seed tasks {tool_pairs(before)}, final tasks {tool_pairs(after)}. "
                  f"Mean distinct tools per task: {np.mean([len({g.tool for g in r.task.gold_path}) for r in before if r.task] or [0]):.1f} → "
                  f"{np.mean([len({g.tool for g in r.task.gold_path}) for r in after if r.task] or [0]):.1f}.", ""]  # fmt: skip
    lines += [
        "## Operators",
        "",
        "| made by | children | evaluated | mean change of c from the parent | share in 30–70% |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {op} | {n} | {e} | {d:+.2f} | {_pct(b)} |" for op, n, e, d, b in _operators(runs)]
    lines += ["", "## Lineage examples", ""]
    pairs = _descendant_pairs(runs)
    firsts = list({source_of(seed): (seed, evolved) for seed, evolved in reversed(pairs)}.values())[::-1]
    shown_pairs = (firsts + [p for p in pairs if p not in firsts])[
        : max(4, len(firsts))
    ]  # one per source first
    for seed, evolved in shown_pairs:
        run = next(r for r in runs if evolved.id in r.by_id)
        chain, node = [], evolved
        while node is not None and node.parent:
            chain.append(node.mutation)
            node = run.by_id.get(node.parent)
        ops = " → ".join(m.operator or m.proposer for m in reversed(chain))
        b, a = instruction(seed), instruction(evolved)
        same = next((i for i, (x, y) in enumerate(zip(b, a, strict=False)) if x != y), min(len(a), len(b)))
        start = max(0, same - 60)
        after = ("…" if start else "") + a[start : start + 360].replace("\n", " ")
        lines += [f"- **{seed.id}** ({source_of(seed)}, c = {seed.completion:.1f}) → **{evolved.id}** "
                  f"(c = {evolved.completion:.1f}) by {ops}",
                  *[f"  - {m.operator}: {m.description}" for m in reversed(chain)],
                  f"  - before: {b[:240].replace(chr(10), ' ')}", f"  - after: {after}"]  # fmt: skip
        if evolved.task is not None and seed.task is not None and seed.task.turns:
            lines.append(f"  - turns: {len(seed.task.turns)} → {len(evolved.task.turns)}; ground-truth calls "
                         f"{len(seed.task.gold_path)} → {len(evolved.task.gold_path)}")  # fmt: skip
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
