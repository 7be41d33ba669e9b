"""docs/results/harnesses.md: the comparison of `toolshift.harness.compare`, written from its episode files."""

from __future__ import annotations

from typing import Any

from toolshift.harness.compare import OWN_LOOP, ComparePlan, _ordered

PART_TITLES = {
    "delta": "Δτ-Bench test tasks (standard setting)",
    "tau2": "τ²-bench airline test tasks (judged by τ²'s reward)",
}


def _pct(cell: Any) -> str:
    if cell is None or not cell.n:
        return "—"
    return f"{100 * cell.mean:.1f} [{100 * cell.low:.1f}, {100 * cell.high:.1f}]"


def _points(cell: Any) -> str:
    if cell is None or not cell.n:
        return "—"
    return f"{100 * cell.mean:+.1f} [{100 * cell.low:+.1f}, {100 * cell.high:+.1f}]"


def _num(value: Any, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _retrieval(cells: dict[str, Any]) -> str:
    def one(m: str) -> str:
        c = cells.get(m)
        mean = c.get("mean") if isinstance(c, dict) else getattr(c, "mean", None)
        return "—" if mean is None or mean != mean else f"{100 * mean:.1f}"

    return " / ".join(one(m) for m in ("P", "R", "F1"))


def _step_spe(cells: dict[str, Any]) -> str:
    c = cells.get("Step-SPE")
    mean = c.get("mean") if isinstance(c, dict) else getattr(c, "mean", None)
    return "—" if mean is None or mean != mean else f"{100 * mean:.1f}"


def differing(parts: dict[str, Any]) -> list[str]:
    """The model rows whose paired difference with toolshift's own loop leaves out 0, as sentences."""
    out = []
    for name, part in parts.items():
        for label, r in part["rows"].items():
            cell = r["versus_own_loop"]
            if not r["model_row"] or cell is None or not cell.n:
                continue
            if cell.low > 0 or cell.high < 0:
                out.append(f"{label} on {PART_TITLES.get(name, name)}: {_points(cell)} points")
    return out


def render(plan: ComparePlan, parts: dict[str, Any], *, load: str = "") -> str:
    lines = [
        "# Harnesses on toolshift's tasks: your agent, not ours",
        "",
        "Each agent below runs on the same tasks with the same simulated user (scripted) and the same model, "
        f"`{plan.model}` (served to the outside agents by `toolshift.modelserver`, on the API each speaks), with at "
        f"most {plan.max_turns} turns (model calls) an episode; every episode is judged by the world's final state "
        "(Δgold ⊆ Δagent; on τ²-bench tasks τ²'s own reward) and scored by `bench eval`. Intervals are 95% "
        'bootstrap intervals over tasks; "− own loop" is the paired difference with toolshift\'s own agent loop on '
        "the same instances. Made by one command:",
        "",
        "```",
        plan.command or "toolshift harness compare …",
        "```",
        "",
    ]
    lines += [
        "The builds: Δτ-Bench as docs/results/ecosystem.md makes it; τ²-bench airline by `toolshift bench import "
        "tau2-airline --out DIR`, `bench evolve DIR --versions 1` and `bench reference DIR`. The run resumes: "
        "episodes already in `--out` are not run again (`docs/results/episodes/` keeps this page's).",
        "",
    ]
    if load:
        lines += [f"Load: {load}.", ""]
    found = differing(parts)
    lines += [
        "**What differs from toolshift's own loop** (a paired interval that leaves out 0): "
        + (
            "; ".join(found)
            if found
            else "nothing: every harness's SR is within its interval of the own loop's."
        )
        + "",
        "",
    ]
    for name, part in parts.items():
        rows = part["rows"]
        models = [k for k in _ordered(rows, plan.spec(OWN_LOOP)) if rows[k]["model_row"]]
        if not models:
            continue
        versions = ", ".join(f"v{v}" for v in part["versions"]) if part["versions"] else "every version"
        lines += [
            f"## {PART_TITLES.get(name, name)}",
            "",
            f"{_tasks(part)} × {versions}; build `{part['build']}`.",
            "",
            "| agent | episodes | SR % | strict SR % | SR − own loop, points | tool P / R / F1 | Step-SPE | "
            "turns | tokens in / out | wall s (p50) | agent errors |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for label in models:
            r = rows[label]
            versus = "—" if r["agent"] == plan.spec(OWN_LOOP) else _points(r["versus_own_loop"])
            lines.append(
                f"| `{label}` | {r['episodes']} | {_pct(r['sr'])} | {_pct(r['strict'])} | {versus} | "
                f"{_retrieval(r['retrieval'])} | {_step_spe(r['retrieval'])} | {_num(r['turns'])} | "
                f"{_num(r['prompt_tokens'], 0)} / {_num(r['completion_tokens'], 0)} | {_num(r['wall_p50'])} | "
                f"{r['agent_errors']} |"
            )
        lines += ["", _endings(name, [(label, rows[label]) for label in models]), ""]
    lines += _sends(plan, parts)
    lines += _instrument(plan, parts)
    return "\n".join(lines).rstrip() + "\n"


def _sends(plan: ComparePlan, parts: dict[str, Any]) -> list[str]:
    first = next(iter(parts.values()), {"rows": {}})
    rows = {k: r for k, r in first["rows"].items() if r["model_row"] and r["agent"] != plan.spec(OWN_LOOP)}
    if not rows:
        return []
    lines = [
        "## What each harness sends its model, and what that costs a 135M model",
        "",
        "Per model call (the largest seen): the instructions the harness sends (system and developer messages) and "
        "its tool definitions, in characters; the tools it offers (its own and the episode's MCP tools) and the "
        "ones of kinds a model cannot call (not offered to it); how many model calls a user message takes; and "
        "which tools the model called: the harness's own or the episode's.",
        "",
        "| agent | instructions chars | tool definitions chars | tools offered | left out | model calls per "
        "user message | calls to its own tools | calls to the episode's tools |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label in _ordered(rows, plan.spec(OWN_LOOP)):
        r = rows[label]
        lines.append(
            f"| `{label}` | {_num(r['system_chars'], 0)} | {_num(r['tools_chars'], 0)} | {_num(r['tools'], 0)} | "
            f"{_num(r['left_out'], 0)} | {_num(r['model_calls_per_turn'])} | {r['own_tool_calls']} | "
            f"{r['episode_tool_calls']} |"
        )
    lines += [
        "",
        "The embedded model reads none of this whole: its context is 4,096 tokens, so each turn it builds a compact "
        "prompt of its own (`toolshift.agents.embedded`): the first 300 characters after the `# Policy` heading of "
        "the system text (every agent here passes toolshift's instructions, which carry the domain policy under that "
        "heading, into its system prompt), the 8 tools whose names and parameters share most words with what the user "
        "said (a harness's own tools compete with the episode's), and the user's messages — where a harness adds its environment, "
        "its instructions file or a skills list as user messages, those words steer the choice of tool and the "
        "values copied. The prompt tokens above are the ones it read, not the ones it was sent.",
        "",
    ]
    return lines


def _instrument(plan: ComparePlan, parts: dict[str, Any]) -> list[str]:
    first = next(iter(parts.values()), {"rows": {}})
    rows = {k: r for k, r in first["rows"].items() if r["instrument_row"]}
    if not rows:
        return []
    lines = [
        "## The instrument: each harness driven by the oracle",
        "",
        "The oracle served as the model (`@oracle`: the task's reference path, read off the conversation one step "
        f"per model call) on {plan.instrument_sample} of the first part's tasks, at most {plan.instrument_max_turns} "
        "model calls an episode. Whatever it loses is the harness's plumbing: its MCP client, "
        "its model client, its configuration. In the standard setting the agent is given `search_tools` and each "
        "tool appears once a search finds it; in the domain-tools setting every tool of the task's domain is "
        "listed from the start.",
        "",
        "| agent | setting | episodes | SR % | strict SR % |",
        "|---|---|---|---|---|",
    ]
    for label in _ordered(rows, plan.spec(OWN_LOOP)):
        r = rows[label]
        lines.append(
            f"| `{r['agent']}` | {r['setting']} | {r['episodes']} | {_pct(r['sr'])} | {_pct(r['strict'])} |"
        )
    lines += [
        "",
        "Codex CLI and Qwen Code list an MCP server's tools when they start and not again within a run, though the "
        "server says its list changed (`notifications/tools/list_changed`, delivered: the `mcp` SDK's client sees it): "
        "a tool found by `search_tools` cannot be called before the next user message, so in the standard setting "
        "the gold path breaks at its first found tool. The Agents SDK (`cache_tools_list=False`) and the chat-loop "
        "example list the tools at every step. This is how these harnesses behave with a server whose tools change, "
        "measured, not worked around (D281).",
        "",
    ]
    return lines


def _tasks(part: dict[str, Any]) -> str:
    """The tasks a part ran, and why fewer than asked where the build has fewer valid test tasks."""
    asked, ran = part["sample"], part.get("tasks", part["sample"])
    if ran >= asked:
        return f"{asked} test tasks"
    return (
        f"{ran} test tasks ({asked} asked: the build has {ran} test tasks whose reference path replays, and a "
        "baseline runs those only)"
    )


def _endings(name: str, rows: list[tuple[str, dict[str, Any]]]) -> str:
    """How the episodes ended, per agent: what a success rate alone does not say."""
    said = "; ".join(
        f"`{label}` {r['silent_successes']} of {r['successes']} successes with no tool call, "
        f"{r['at_turn_limit']} of {r['episodes']} episodes stopped at the turn limit"
        for label, r in rows
        if "successes" in r
    )
    text = f"How the episodes ended: {said}."
    if name == "tau2":
        text += (
            " τ²'s evaluator gives 0 to an episode stopped at the turn limit (it scores an agent's or the user's "
            "stop only), and a task whose gold path writes nothing is passed by leaving the database as it was."
        )
    return text
