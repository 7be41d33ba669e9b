"""What counts as evidence of evolution: only evolved tasks, per lineage, and the text rubric for both sides.

The report's "final" figures are the final dataset's evolved tasks: a seed the selection kept unchanged
(it had the lineage's best variance itself) is listed apart and counted in none of them. Per lineage:
the seed's completion and its evolved final tasks' mean, and whether the seed started outside 30–70%.
The naturalness rubric (`toolshift.evolve.render`) is scored on seed and final tasks alike, rule by rule,
with the children the rubric rejected and the ones the writer revised.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from toolshift.evolve.archive import ProgramRecord
from toolshift.evolve.render import RULES, RubricResult, score_task
from toolshift.world.state.registry import world_domains

BAND = (0.3, 0.7)


def in_band(c: float | None) -> bool:
    return c is not None and BAND[0] - 1e-9 <= c <= BAND[1] + 1e-9


def evolved_only(final: list[ProgramRecord]) -> tuple[list[ProgramRecord], list[ProgramRecord]]:
    """(evolved final tasks, unchanged seeds the selection kept)."""
    return [r for r in final if r.id != r.root], [r for r in final if r.id == r.root]


def source_of(r: ProgramRecord) -> str:
    """Which benchmark a lineage's tasks come from: τ²-bench airline/retail, BFCL, AgentDojo, toolshift's
    hand-written worlds (the demo's clinic, library, freight depot) or the synthesised benchmark."""
    d = r.domain
    if d.startswith("tau2"):
        return "τ²-bench " + d.removeprefix("tau2-").removeprefix("tau2_")
    if d == "bfcl":
        return "BFCL multi-turn"
    if d.startswith("agentdojo"):
        return "AgentDojo"
    if d in world_domains():
        return "toolshift built-in worlds"
    return "toolshift bench"


@dataclass
class Lineage:
    root: ProgramRecord
    evolved: list[ProgramRecord]
    seed_kept: bool

    @property
    def after(self) -> float | None:
        rates = [r.completion for r in self.evolved if r.completion is not None]
        return sum(rates) / len(rates) if rates else None


def lineages(seeds: list[ProgramRecord], final: list[ProgramRecord]) -> list[Lineage]:
    out = []
    for s in seeds:
        mine = [r for r in final if r.root == s.id]
        out.append(Lineage(s, [r for r in mine if r.id != s.id], any(r.id == s.id for r in mine)))
    return out


def rubric_of(r: ProgramRecord) -> RubricResult | None:
    return score_task(r.task) if r.task is not None else None


def rubric_lines(
    seeds: list[ProgramRecord], evolved: list[ProgramRecord], records: list[ProgramRecord]
) -> list[str]:
    """The rubric's pass rate for seed and final tasks, per rule, and what it did to children."""
    rb = [x for x in (rubric_of(r) for r in seeds) if x is not None]
    ra = [x for x in (rubric_of(r) for r in evolved) if x is not None]

    def rate(rs: list[RubricResult], rule: str | None = None) -> str:
        if not rs:
            return "–"
        ok = sum(1 for x in rs if (x.ok if rule is None else x.passed[rule]))
        return f"{ok} of {len(rs)} ({100 * ok / len(rs):.0f}%)"

    rejected = [r for r in records if r.stage == "rubric"]
    why = Counter(rule for r in rejected for rule in (r.rubric_failed or []))
    revised = [r for r in records if r.step is not None and "(writer: " in r.mutation.description]
    lines = [
        "## Naturalness rubric (seed and final tasks alike)",
        "",
        "Every task's text scored by the rules the benchmark's synthesised tasks pass "
        "(`toolshift.bench.naturalness`, on the intent) and the user-side rules of `toolshift.evolve.render` "
        "(the opening line's articles, no parenthesised aside, facts as values, no unfilled slot). A seed is scored "
        "as its benchmark wrote it; a child goes through the writer and is rejected if it still fails a rule.",
        "",
        "| tasks | pass every rule |",
        "|---|---|",
        f"| seed tasks (n={len(rb)}) | {rate(rb)} |",
        f"| evolved final tasks (n={len(ra)}) | {rate(ra)} |",
        "",
        "| rule | seed tasks | evolved final tasks |",
        "|---|---|---|",
    ]
    lines += [f"| {rule} | {rate(rb, rule)} | {rate(ra, rule)} |" for rule in RULES]
    lines += [
        "",
        f"Children rejected by the rubric: {len(rejected)} (failed rules: "
        + (", ".join(f"{k} {v}" for k, v in why.most_common()) or "none")
        + f"); children the writer revised: {len(revised)}.",
    ]
    if rejected:
        lines += ["", "Examples of rejections (the reason each record keeps):", ""]
        lines += [f"- `{r.id}`: {r.reason}" for r in rejected[:4]]
    return [*lines, ""]


def lineage_lines(seeds: list[ProgramRecord], final: list[ProgramRecord]) -> list[str]:
    """Per lineage: seed completion → its evolved final tasks' mean; unchanged seeds listed apart."""
    ls = lineages(seeds, final)
    outside = sum(1 for x in ls if not in_band(x.root.completion))
    moved = [x for x in ls if x.evolved]
    into = sum(1 for x in moved if not in_band(x.root.completion) and in_band(x.after))
    kept = [x for x in ls if x.seed_kept]
    lines = [
        "## Lineages: before and after",
        "",
        f"{outside} of {len(ls)} seeds start outside 30–70%. {len(moved)} lineages have evolved final tasks; "
        f"{into} of them moved from outside the band to a mean inside it.",
        "",
        "| source | seeds | outside 30–70% at the start | lineages with evolved final tasks | mean c before → after (those lineages) |",
        "|---|---|---|---|---|",
    ]  # fmt: skip
    for src in sorted({source_of(x.root) for x in ls}):
        mine = [x for x in ls if source_of(x.root) == src]
        ev = [x for x in mine if x.evolved]
        b = [x.root.completion or 0.0 for x in ev]
        a = [x.after or 0.0 for x in ev]
        change = f"{sum(b) / len(b):.2f} → {sum(a) / len(a):.2f}" if ev else "–"
        lines.append(
            f"| {src} | {len(mine)} | {sum(1 for x in mine if not in_band(x.root.completion))} | {len(ev)} | {change} |"
        )
    lines += [
        "",
        "| seed | source | c before | evolved final tasks | their c | mean after |",
        "|---|---|---|---|---|---|",
    ]
    for x in ls:
        rates = ", ".join(f"{r.completion:.2f}" for r in x.evolved if r.completion is not None) or "–"
        after = f"{x.after:.2f}" if x.after is not None else "–"
        c = f"{x.root.completion:.2f}" if x.root.completion is not None else "–"
        lines.append(f"| `{x.root.id}` | {source_of(x.root)} | {c} | {len(x.evolved)} | {rates} | {after} |")
    lines += [
        "",
        f"Unchanged seeds the selection kept (their own variance was the lineage's best), excluded from every "
        f"final-task figure on this page: {len(kept)}"
        + (" — " + ", ".join(f"`{x.root.id}` (c = {x.root.completion:.2f})" for x in kept) if kept else "")
        + ".",
        "",
    ]
    return lines
