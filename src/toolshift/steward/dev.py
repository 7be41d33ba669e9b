"""Held-out training tasks (`steward eval --dev N`): strict SR per version and failures by kind (D190)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from toolshift.agents.users import END_CONVERSATION
from toolshift.steward.experiment import Context, write_results
from toolshift.traces.episode import Episode, paired_calls
from toolshift.traces.store import iter_episodes

CAUSES = ("no call", "refused call", "binding error", "shorter run", "other tools", "other arguments")
CAUSES += ("collateral write",)


def failure_kind(ep: Episode, reference: list[str], strict: bool, solved: bool) -> str:
    """A failed episode's kind, from the episode alone (no look at the gold changes beyond the verdict):
    no call made; a call the world refused; the instrument stopped on a binding it could not fill; the
    run ended after fewer calls than the reference path makes; other tools called; the reference's tools
    with other arguments; solved but with a write the task did not ask for. "" for a strict success."""
    if strict:
        return ""
    if solved:
        return "collateral write"
    calls = [(k, c, r) for k, c, r in paired_calls(ep) if c.name != END_CONVERSATION]
    failure = str(ep.source.get("failure") or "")
    if not calls:
        return "no call"
    if failure.startswith("call failed"):
        return "refused call"
    if failure:
        return "binding error"
    tools = [c.name for _, c, _ in calls]
    if len(tools) < len(reference):
        return "shorter run"
    if set(tools) != set(reference):
        return "other tools"
    return "other arguments"


def dev_summary(ctx: Context, paths: list[Path]) -> dict[str, Any]:
    """Per library kind and version: tasks, strict successes, and failures by kind (with their episode
    ids, so each can be read)."""
    refs = {(r.task_id, r.version): r for r in ctx.records if r.valid and r.step is not None}
    out: dict[str, Any] = {}
    for path in paths:
        for ep in iter_episodes(path):
            _, _, ver = (ep.ecosystem_version or "").partition("/v")
            ref = refs.get((ep.task_id, int(ver))) if ver.isdigit() else None
            task = ctx.tasks.get(ep.task_id)
            if ref is None or task is None or ref.step is None:
                continue
            verdict = task.verdict(ep.world_diff or [])
            kind = failure_kind(ep, [n for n, _ in ref.step.calls], verdict.strict_success, verdict.success)
            row = out.setdefault(str(ep.source.get("baseline")), {}).setdefault(
                f"v{ver}", {"tasks": 0, "strict": 0, "failures": {}}
            )
            row["tasks"] += 1
            row["strict"] += int(not kind)
            if kind:
                row["failures"].setdefault(kind, []).append(ep.id)
    return out


def dev_table(summary: dict[str, Any]) -> str:
    """Strict SR per version and failure counts by kind, one block per library kind (plain text)."""
    lines = []
    for agent, by_v in sorted(summary.items()):
        versions = sorted(by_v, key=lambda v: int(v[1:]))
        lines.append(f"{agent}: strict SR " + " / ".join(
            f"{100 * by_v[v]['strict'] / max(by_v[v]['tasks'], 1):.1f}" for v in versions
        ) + f" ({' / '.join(str(by_v[v]['tasks']) for v in versions)} tasks)")  # fmt: skip
        counts = Counter({k: sum(len(by_v[v]["failures"].get(k, [])) for v in versions) for k in CAUSES})
        lines.append("  failures: " + ", ".join(f"{k} {n}" for k, n in counts.items() if n))
    return "\n".join(lines)


def write_dev(ctx: Context, summary: dict[str, Any], command: str) -> Path:
    path = ctx.run / "dev" / "results.json"
    write_results(path, {"ecosystem": ctx.eco_id, "command": command, "dev": summary})
    return path
