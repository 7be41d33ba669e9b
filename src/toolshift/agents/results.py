"""Results of a run with their variance: pass^k over trials, bootstrap intervals over tasks, flip share.

Beside success (the benchmark's SR, Δgold ⊆ Δagent, or the benchmark's own judge) stands strict
success: success and no collateral write (no change in Δagent outside Δgold under the judge's renaming
σ; `toolshift.models.judge_diff`, D116). An episode's strict verdict is its `outcome.info` fields; for an
episode recorded before they existed it is computed from its `world_diff` and its task when the task is
given, else it is unknown — counted apart, never taken as 0 collateral.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from math import comb
from typing import Any

from rich.markup import escape
from rich.table import Table

from toolshift.intervals import Interval, bootstrap_mean
from toolshift.models import Task
from toolshift.traces.episode import Episode


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """τ-bench's pass^k for one task: the chance that k trials drawn without replacement all succeed."""
    if k > trials:
        raise ValueError("k exceeds the number of trials")
    return comb(successes, k) / comb(trials, k)


def episode_tokens(episode: Episode) -> int:
    total = 0
    for m in episode.messages:
        if m.role == "assistant" and m.usage is not None:
            total += (m.usage.prompt_tokens or 0) + (m.usage.completion_tokens or 0)
    return total


@dataclass(frozen=True)
class Collateral:
    """An episode's strict verdict: strict success, and its collateral changes and rows."""

    strict_success: bool
    changes: int
    rows: tuple[str, ...]


def episode_collateral(episode: Episode, tasks: Mapping[str, Task] | None = None) -> Collateral | None:
    """The strict verdict of a judged episode: from `outcome.info`, else computed from its world diff and
    its task (when `tasks` has it, with the fingerprint the episode names); None when it cannot be known."""
    outcome = episode.outcome
    if outcome is None or outcome.success is None:
        return None
    info = outcome.info
    strict, changes = info.get("strict_success"), info.get("collateral_changes")
    if isinstance(strict, bool) and isinstance(changes, int):
        rows = info.get("collateral_rows")
        return Collateral(strict, changes, tuple(str(r) for r in rows) if isinstance(rows, list) else ())
    task = (tasks or {}).get(episode.task_id)
    if task is None or episode.world_diff is None:
        return None
    fingerprint = episode.source.get("task_fingerprint")
    if fingerprint is not None and fingerprint != task.fingerprint():
        return None  # the task changed since: its Δgold is not the one this episode was judged on
    verdict = task.verdict(episode.world_diff)
    rows = tuple(verdict.collateral_rows())
    return Collateral(bool(outcome.success) and not verdict.collateral, len(verdict.collateral), rows)


@dataclass
class RunResults:
    """What a run measured over its judged episodes; invalid tasks and simulator failures kept apart."""

    tasks: int
    judged_tasks: int
    episodes: int
    trials: int
    success: Interval
    pass_k: dict[int, Interval]
    flip_share: Interval
    invalid_tasks: list[str] = field(default_factory=list)
    not_charged: int = 0
    """Episodes ended by the user simulator or the harness: not scored against the agent."""
    terminations: Counter[str] = field(default_factory=Counter)
    mean_turns: float = 0.0
    mean_calls: float = 0.0
    mean_failed_calls: float = 0.0
    mean_tokens: float = 0.0
    cost: float | None = None
    mean_seconds: float = 0.0
    strict_success: Interval = field(default_factory=lambda: bootstrap_mean([]))
    """Success with no collateral write, per task over its episodes whose strict verdict is known."""
    strict_pass_k: dict[int, Interval] = field(default_factory=dict)
    strict_unknown: int = 0
    """Judged episodes whose strict verdict is unknown (no info fields, no world diff or no task)."""
    mean_collateral: float | None = None
    """Collateral changes per judged episode whose verdict is known (None when none is)."""
    collateral_episodes: int = 0
    """Episodes with at least one collateral change."""
    successes_with_collateral: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": "toolshift.run-results/1",
            "tasks": self.tasks,
            "judged_tasks": self.judged_tasks,
            "episodes": self.episodes,
            "trials": self.trials,
            "success": self.success.as_json(),
            "pass_k": {str(k): v.as_json() for k, v in self.pass_k.items()},
            "flip_share": self.flip_share.as_json(),
            "invalid_tasks": self.invalid_tasks,
            "not_charged": self.not_charged,
            "terminations": dict(self.terminations),
            "mean_turns": self.mean_turns,
            "mean_calls": self.mean_calls,
            "mean_failed_calls": self.mean_failed_calls,
            "mean_tokens": self.mean_tokens,
            "cost": self.cost,
            "mean_seconds": self.mean_seconds,
            "strict_success": self.strict_success.as_json(),
            "strict_pass_k": {str(k): v.as_json() for k, v in self.strict_pass_k.items()},
            "strict_unknown": self.strict_unknown,
            "mean_collateral": self.mean_collateral,
            "collateral_episodes": self.collateral_episodes,
            "successes_with_collateral": self.successes_with_collateral,
        }


def _pass_k(by_task: dict[str, list[bool]], trials: int) -> dict[int, Interval]:
    out: dict[int, Interval] = {}
    for k in range(1, trials + 1):
        values = [pass_hat_k(sum(v), len(v), k) for v in by_task.values() if len(v) >= k]
        out[k] = bootstrap_mean(values)
    return out


def summarize(
    episodes: list[Episode],
    *,
    trials: int,
    invalid_tasks: set[str] | None = None,
    tasks: Mapping[str, Task] | None = None,
) -> RunResults:
    """Score episodes per task: episodes of invalid tasks and simulator/harness failures are left out.
    `tasks` (by id) lets episodes recorded without a strict verdict get one from their world diff."""
    invalid = invalid_tasks or set()
    by_task: dict[str, list[bool]] = defaultdict(list)
    strict_by_task: dict[str, list[bool]] = defaultdict(list)
    not_charged = strict_unknown = 0
    scored: list[Episode] = []
    known: list[Collateral] = []
    successes_hurt = 0
    for e in episodes:
        if e.task_id in invalid:
            continue
        if e.outcome is None or e.outcome.success is None:
            not_charged += 1
            continue
        scored.append(e)
        by_task[e.task_id].append(bool(e.outcome.success))
        verdict = episode_collateral(e, tasks)
        if verdict is None:
            strict_unknown += 1
            continue
        known.append(verdict)
        strict_by_task[e.task_id].append(verdict.strict_success)
        successes_hurt += bool(e.outcome.success) and verdict.changes > 0
    per_task_rate = [sum(v) / len(v) for v in by_task.values()]
    pass_k = _pass_k(by_task, trials)
    flips = [float(0 < sum(v) < len(v)) for v in by_task.values() if len(v) >= 2]
    n = max(1, len(scored))
    costs = [e.agent_cost for e in scored if e.agent_cost is not None]
    return RunResults(
        tasks=len({e.task_id for e in episodes} | invalid),
        judged_tasks=len(by_task),
        episodes=len(episodes),
        trials=trials,
        success=bootstrap_mean(per_task_rate),
        pass_k=pass_k,
        flip_share=bootstrap_mean(flips),
        invalid_tasks=sorted(invalid),
        not_charged=not_charged,
        terminations=Counter(e.termination_reason or "unknown" for e in episodes),
        mean_turns=sum(int(e.outcome.info.get("turns", 0)) for e in scored if e.outcome) / n,
        mean_calls=sum(int(e.outcome.info.get("tool_calls", 0)) for e in scored if e.outcome) / n,
        mean_failed_calls=sum(int(e.outcome.info.get("failed_calls", 0)) for e in scored if e.outcome) / n,
        mean_tokens=sum(episode_tokens(e) for e in scored) / n,
        cost=sum(costs) if costs else None,
        mean_seconds=sum(e.duration or 0.0 for e in scored) / n,
        strict_success=bootstrap_mean([sum(v) / len(v) for v in strict_by_task.values()]),
        strict_pass_k=_pass_k(strict_by_task, trials),
        strict_unknown=strict_unknown,
        mean_collateral=sum(c.changes for c in known) / len(known) if known else None,
        collateral_episodes=sum(1 for c in known if c.changes),
        successes_with_collateral=successes_hurt,
    )


def results_table(title: str, results: RunResults) -> Table:
    """The run's figures as a rich table: rates in percent with 95% bootstrap intervals over tasks."""
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("tasks judged / in file", f"{results.judged_tasks} / {results.tasks}")
    table.add_row("episodes", str(results.episodes))
    table.add_row("success % [95% CI over tasks]", results.success.known(results.not_charged, "unjudged"))
    table.add_row(
        "strict success % (no collateral write)",
        results.strict_success.known(results.strict_unknown, "strict unknown"),
    )
    for k, interval in results.pass_k.items():
        if k > 1:
            table.add_row(f"pass^{k} %", interval.known(0, ""))
            strict = results.strict_pass_k.get(k)
            unknown = results.strict_unknown
            table.add_row(f"strict pass^{k} %", strict.known(unknown, "strict unknown") if strict else "—")
    if results.strict_unknown:
        table.add_row("strict verdict unknown (episodes)", str(results.strict_unknown))
    table.add_row(
        "collateral writes: mean per episode / episodes with any / successes with any",
        "unknown"
        if results.mean_collateral is None
        else f"{results.mean_collateral:.2f} / {results.collateral_episodes} / {results.successes_with_collateral}",
    )
    if results.trials > 1:
        table.add_row("tasks flipping between trials %", results.flip_share.percent())
    table.add_row("invalid tasks (oracle cannot solve)", str(len(results.invalid_tasks)))
    table.add_row("not charged to the agent (user/harness)", str(results.not_charged))
    table.add_row(
        "mean turns / calls / failed calls",
        f"{results.mean_turns:.1f} / {results.mean_calls:.1f} / {results.mean_failed_calls:.1f}",
    )
    table.add_row("mean tokens per episode", f"{results.mean_tokens:.0f}")
    table.add_row("agent cost (USD)", "–" if results.cost is None else f"{results.cost:.4f}")
    table.add_row("mean seconds per episode", f"{results.mean_seconds:.2f}")
    table.add_row("terminations", ", ".join(f"{k} {v}" for k, v in sorted(results.terminations.items())))
    return table


def collateral_cell(verdict: Collateral | None, judged: bool) -> str:
    """An episode's collateral writes as the listing shows them: `1: appointment/APT-00019`, `0`, or unknown."""
    if verdict is None:
        return "unknown" if judged else "–"
    if not verdict.changes:
        return "0"
    rows = ", ".join(verdict.rows[:4]) + (" …" if len(verdict.rows) > 4 else "")
    return f"{verdict.changes}: {rows}"


def episode_rows(episodes: list[Episode], tasks: Mapping[str, Task] | None = None) -> list[dict[str, Any]]:
    """`episodes_table`'s rows as data (`agents results --episodes --json`): one dict per episode."""
    out = []
    for e in sorted(episodes, key=lambda e: (e.task_id, e.trial)):
        info = e.outcome.info if e.outcome else {}
        verdict = episode_collateral(e, tasks)
        out.append(
            {
                "task": e.task_id,
                "trial": e.trial,
                "success": e.outcome.success if e.outcome else None,
                "strict_success": None if verdict is None else verdict.strict_success,
                "collateral_changes": None if verdict is None else verdict.changes,
                "collateral_rows": None if verdict is None else list(verdict.rows),
                "turns": info.get("turns"),
                "calls": info.get("tool_calls"),
                "failed_calls": info.get("failed_calls"),
                "tokens": episode_tokens(e),
                "termination": e.termination_reason,
            }
        )
    return out


def episodes_table(title: str, episodes: list[Episode], tasks: Mapping[str, Task] | None = None) -> Table:
    """One row per episode: task, trial, success, strict success, collateral writes, turns, calls, tokens,
    termination."""
    table = Table(title=title, header_style="bold")
    cols = (
        "task",
        "trial",
        "success",
        "strict",
        "collateral",
        "turns",
        "calls",
        "failed",
        "tokens",
        "ended by",
    )
    for name in cols:
        table.add_column(name, justify="left" if name in ("task", "collateral", "ended by") else "right")
    for e in sorted(episodes, key=lambda e: (e.task_id, e.trial)):
        info = e.outcome.info if e.outcome else {}
        ok = e.outcome.success if e.outcome else None
        mark = "–" if ok is None else ("[green]yes[/]" if ok else "[red]no[/]")
        verdict = episode_collateral(e, tasks)
        strict = (
            ("unknown" if ok is not None else "–")
            if verdict is None
            else ("[green]yes[/]" if verdict.strict_success else "[red]no[/]")
        )
        table.add_row(
            e.task_id,
            str(e.trial),
            mark,
            strict,
            escape(collateral_cell(verdict, ok is not None)),
            str(info.get("turns", "")),
            str(info.get("tool_calls", "")),
            str(info.get("failed_calls", "")),
            str(episode_tokens(e)),
            e.termination_reason or "",
        )
    return table
