"""Write docs/results/anatomy.md: the turn anatomy of the published τ-bench and WorkBench runs in ../shared/data."""

from __future__ import annotations

from pathlib import Path

from toolshift.traces.anatomy import Anatomy, anatomy, total
from toolshift.traces.conversion import Conversion
from toolshift.traces.taubench import convert_taubench_v1
from toolshift.traces.workbench import convert_workbench

COMMAND = "toolshift traces anatomy-report ../shared/data --out docs/results/anatomy.md"
TAU_FILE = Path("tau-bench/gpt-4o-airline.trials-0-1.json")
WORKBENCH_DIR = Path("workbench/results")
# Seed 003, "What decides an agent's turns" (turns, replies %, writes %, reads %).
SEED_TAU_AIRLINE = (1904, 46.1, 17.0, 36.9)
SEED_WORKBENCH = (13869, 27.4, 26.6, 46.1)
AGENT_NAMES = {"gpt-4o": "GPT-4o", "gpt-4": "GPT-4", "claude-2": "Claude-2"}
DOMAIN_NAMES = {
    "customer_relationship_manager": "CRM",
    "multi_domain": "multi-domain",
    "project_management": "project management",
}

HEADER = "| {} | episodes | tasks | turns | replies | writes | reads | neither | unknown |"


def _row(label: list[str], g: Anatomy, bold: bool = False) -> str:
    cells = [
        *label,
        str(g.episodes),
        str(len(g.tasks)),
        f"{g.turns:,}",
        *(f"{g.share(k):.1f}%" for k in ("reply", "write", "read", "neither", "unknown")),
    ]
    if bold:
        cells = [f"**{c}**" if c else c for c in cells]
    return "| " + " | ".join(cells) + " |"


def _effects(conv: Conversion) -> dict[str, dict[str, str]]:
    return {d: dict(c.effects()) for d, c in conv.catalogs.items()}


def _table(conv: Conversion, by: tuple[str, ...], names: list[str], total_label: str | None) -> list[str]:
    groups = anatomy(conv.episodes, _effects(conv), by=by)  # type: ignore[arg-type]
    lines = [HEADER.format(" | ".join(names)), "|" + "---|" * (len(names) + 8)]
    for key, g in groups.items():
        label = [DOMAIN_NAMES.get(k, AGENT_NAMES.get(k, k.rsplit("/", 1)[-1])) for k in key]
        lines.append(_row(label, g))
    if total_label is not None:
        lines.append(_row([total_label] + [""] * (len(names) - 1), total(groups), bold=True))
    return lines


def _no_trajectory(conv: Conversion) -> int:
    return sum(1 for e in conv.episodes if e.outcome is not None and e.outcome.info.get("no_trajectory"))


def _skips(conv: Conversion) -> str:
    if not conv.skipped:
        return "none"
    return "; ".join(f"{n} × {reason}" for reason, n in conv.skipped.most_common())


def _more_or_less(ours: float, theirs: float, more: str, less: str) -> str:
    return more if ours > theirs else less


def _comparison(tau_all: Anatomy, wb_all: Anatomy, wb_agents: dict[tuple[str, ...], Anatomy]) -> str:
    t_turns, t_rep, t_wr, t_rd = SEED_TAU_AIRLINE
    w_turns, w_rep, w_wr, w_rd = SEED_WORKBENCH
    reply, write, read, neither = (tau_all.share(k) for k in ("reply", "write", "read", "neither"))
    agents = "; ".join(
        f"{AGENT_NAMES.get(k[0], k[0])} {g.share('reply'):.1f}% / {g.share('write'):.1f}% / {g.share('read'):.1f}%"
        for k, g in wb_agents.items()
    )
    return (
        f'Seed 003 ("What decides an agent\'s turns") reports τ-bench airline at {t_turns:,} turns, {t_rep}% replies, '
        f"{t_wr}% writes and {t_rd}% reads, for two agents over four trials. GPT-4o alone over trials 0–1 gives "
        f"{tau_all.turns:,} turns: {reply:.1f}% replies, {write:.1f}% writes, {read:.1f}% reads and {neither:.1f}% "
        f"think/calculate/transfer turns; the seed's three columns sum to 100%, so it counts those with the reads, "
        f"which gives {read + neither:.1f}% reads here. GPT-4o "
        f"{_more_or_less(reply, t_rep, 'replies more', 'replies less')} and "
        f"{_more_or_less(write, t_wr, 'writes more', 'writes less')} per turn than the seed's pair of agents. "
        f"The seed's WorkBench row ({w_turns:,} turns, {w_rep}% replies, {w_wr}% writes, {w_rd}% reads) is a 2026 "
        f"re-run by a different set of agents; the published GPT-4 and Claude-2 runs give {wb_all.turns:,} turns, "
        f"{wb_all.share('reply'):.1f}% replies, {wb_all.share('write'):.1f}% writes and {wb_all.share('read'):.1f}% reads "
        f"(replies / writes / reads: {agents})."
    )


def anatomy_markdown(shared_data: Path) -> str:
    """The whole anatomy.md text, computed from the shared data (nothing is hard-coded but the seed's figures)."""
    shared_data = Path(shared_data)
    tau = convert_taubench_v1(shared_data / TAU_FILE)
    wb = convert_workbench(shared_data / WORKBENCH_DIR)
    tau_all = total(anatomy(tau.episodes, _effects(tau)))  # type: ignore[arg-type]
    wb_all = total(anatomy(wb.episodes, _effects(wb)))  # type: ignore[arg-type]
    wb_agents = anatomy(wb.episodes, _effects(wb), by=("agent",))  # type: ignore[arg-type]
    lines = [
        "# Turn anatomy of published runs",
        "",
        f"Regenerate: `{COMMAND}` (reads the published runs in `../shared/data`; takes a few seconds).",
        "",
        "A turn is one assistant message. A **reply** has no tool call; a **write** turn has at least one call",
        "to a tool that changes state; a **read** turn's calls are reads (plus any `neither` tools); a",
        "**neither** turn calls only tools that touch no world (τ-bench's `think`, `calculate`,",
        "`transfer_to_human_agents`; WorkBench calls to tools that do not exist); **unknown** counts turns",
        "calling a tool no catalog lists (none here). Labels come from the tool catalogs the converters",
        "write (`toolshift traces convert`), i.e. from what each tool's implementation does. Same numbers:",
        "`toolshift traces convert ... --out DIR && toolshift traces stats DIR/*.episodes.jsonl`.",
        "",
        "## τ-bench airline, GPT-4o (tool-calling agent, trials 0–1 of the 50 test tasks)",
        "",
        *_table(tau, ("domain", "agent"), ["domain", "agent"], None),
        "",
        f"Records: {tau.records}, kept {tau.kept}, skipped: {_skips(tau)}.",
        "",
        "## WorkBench (2024 published runs), per domain and agent, both toolsets (`all`, `domains`) together",
        "",
        *_table(wb, ("domain", "agent"), ["domain", "agent"], "all"),
        "",
        "By agent and toolset:",
        "",
        *_table(wb, ("agent", "harness"), ["agent", "toolset"], None),
        "",
        f"Records: {wb.records} rows, kept {wb.kept}, skipped: {_skips(wb)}. Of those kept, "
        f"{_no_trajectory(wb)} rows have no trajectory (the agent raised before returning; WorkBench scores them "
        "wrong): their episodes hold the query alone, so they add episodes and no turns.",
        "",
        "## Compared with the seed's table",
        "",
        _comparison(tau_all, wb_all, wb_agents),
        "",
    ]
    return "\n".join(lines)
