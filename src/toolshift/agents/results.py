"""Results of a run with their variance: pass^k over trials, bootstrap intervals over tasks, flip share."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from math import comb
from typing import Any

from rich.table import Table

from toolshift.report.intervals import Interval, bootstrap_mean
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": "toolshift.run-results/1",
            "tasks": self.tasks,
            "judged_tasks": self.judged_tasks,
            "episodes": self.episodes,
            "trials": self.trials,
            "success": self.success.as_dict(),
            "pass_k": {str(k): v.as_dict() for k, v in self.pass_k.items()},
            "flip_share": self.flip_share.as_dict(),
            "invalid_tasks": self.invalid_tasks,
            "not_charged": self.not_charged,
            "terminations": dict(self.terminations),
            "mean_turns": self.mean_turns,
            "mean_calls": self.mean_calls,
            "mean_failed_calls": self.mean_failed_calls,
            "mean_tokens": self.mean_tokens,
            "cost": self.cost,
            "mean_seconds": self.mean_seconds,
        }


def summarize(episodes: list[Episode], *, trials: int, invalid_tasks: set[str] | None = None) -> RunResults:
    """Score episodes per task: episodes of invalid tasks and simulator/harness failures are left out."""
    invalid = invalid_tasks or set()
    by_task: dict[str, list[bool]] = defaultdict(list)
    not_charged = 0
    scored: list[Episode] = []
    for e in episodes:
        if e.task_id in invalid:
            continue
        if e.outcome is None or e.outcome.success is None:
            not_charged += 1
            continue
        scored.append(e)
        by_task[e.task_id].append(bool(e.outcome.success))
    per_task_rate = [sum(v) / len(v) for v in by_task.values()]
    pass_k: dict[int, Interval] = {}
    for k in range(1, trials + 1):
        values = [pass_hat_k(sum(v), len(v), k) for v in by_task.values() if len(v) >= k]
        pass_k[k] = bootstrap_mean(values)
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
    )


def results_table(title: str, results: RunResults) -> Table:
    """The run's figures as a rich table: rates in percent with 95% bootstrap intervals over tasks."""
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("tasks judged / in file", f"{results.judged_tasks} / {results.tasks}")
    table.add_row("episodes", str(results.episodes))
    table.add_row("success % [95% CI over tasks]", results.success.percent())
    for k, interval in results.pass_k.items():
        if k > 1:
            table.add_row(f"pass^{k} %", interval.percent())
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


def episodes_table(title: str, episodes: list[Episode]) -> Table:
    """One row per episode: task, trial, success, turns, calls, tokens, termination."""
    table = Table(title=title, header_style="bold")
    for name in ("task", "trial", "success", "turns", "calls", "failed", "tokens", "ended by"):
        table.add_column(name, justify="right" if name not in ("task", "ended by") else "left")
    for e in sorted(episodes, key=lambda e: (e.task_id, e.trial)):
        info = e.outcome.info if e.outcome else {}
        ok = e.outcome.success if e.outcome else None
        mark = "–" if ok is None else ("[green]yes[/]" if ok else "[red]no[/]")
        table.add_row(
            e.task_id,
            str(e.trial),
            mark,
            str(info.get("turns", "")),
            str(info.get("tool_calls", "")),
            str(info.get("failed_calls", "")),
            str(episode_tokens(e)),
            e.termination_reason or "",
        )
    return table
