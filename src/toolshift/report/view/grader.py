"""The viewer's grader and task panels: what each judge checked, and the task an episode ran.

The grader breakdown is read from what the episode recorded (`outcome.info`), by judge: τ²-bench's
reward checks (`reward_info`: the DB check, each expected action, each communicate check, the
environment and natural-language assertions, the reward basis), BFCL's multi-turn checker (valid, the
error type and message), AgentDojo's utility and security, and for Δgold ⊆ Δagent the missing gold
changes and the collateral changes, each named with its table, key, field and value. Where the task is
known (a benchmark build among the viewer's inputs) and the episode kept its world diff, Δgold vs Δagent
is judged afresh (`Task.verdict`, `toolshift.models.judge_diff`), so an episode that recorded only
`missing_changes: 9` still shows which nine.

The task panel shows the task from the build: the public request, the user's instruction and facts,
the expected changes (Δgold), the gold path, and the reference path (fewest steps) computed for the
episode's ecosystem version (`bench reference`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.errors import ToolshiftError
from toolshift.models import RowChange, Task
from toolshift.traces.episode import Episode

VERSION = re.compile(r"(?:^|/)v(\d+)$")


def change_row(c: RowChange) -> dict[str, Any]:
    return {
        "table": c.table,
        "key": c.key,
        "field": c.field,
        "op": c.op,
        "before": c.before,
        "after": c.after,
    }


def version_number(ecosystem_version: str | None) -> int | None:
    """`eco-08fb09623c/v3` → 3; None for an episode outside an evolved ecosystem."""
    m = VERSION.search(ecosystem_version or "")
    return int(m.group(1)) if m else None


@dataclass
class TaskBook:
    """The tasks (and reference paths) of the benchmark builds among the inputs, read when first asked."""

    builds: list[Path]
    _tasks: dict[tuple[str, str], tuple[Task, Path]] | None = None
    _refs: dict[tuple[str, str, int], Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _load(self) -> dict[tuple[str, str], tuple[Task, Path]]:
        from toolshift.bench.build import load_tasks
        from toolshift.bench.ecosystem.paths import load_references

        with self._lock:
            if self._tasks is not None:
                return self._tasks
            tasks: dict[tuple[str, str], tuple[Task, Path]] = {}
            for build in self.builds:
                try:
                    for t in load_tasks(build):
                        tasks.setdefault((t.domain, t.id), (t, build))
                except ToolshiftError as exc:
                    self.problems.append(str(exc))
                    continue
                if not (build / "ecosystem" / "references.jsonl").is_file():
                    continue
                try:
                    _, records = load_references(build)
                except ToolshiftError as exc:
                    self.problems.append(str(exc))
                    continue
                for r in records:
                    self._refs.setdefault((r.domain, r.task_id, r.version), r)
            self._tasks = tasks
            return tasks

    def warm(self) -> None:
        """Read the builds' tasks and reference paths in the background (a large build takes seconds)."""
        if self.builds:
            threading.Thread(target=self._load, name="toolshift-view-tasks", daemon=True).start()

    def task(self, domain: str, task_id: str) -> tuple[Task, Path] | None:
        return self._load().get((domain, task_id)) if self.builds else None

    def reference(self, domain: str, task_id: str, version: int) -> Any:
        self._load()
        return self._refs.get((domain, task_id, version))


def _path_record(record: Any) -> dict[str, Any] | None:
    if record is None:
        return None
    return {"steps": record.steps, "cost": record.cost, "tools": list(record.tools),
            "calls": [{"tool": t, "arguments": a} for t, a in record.calls], "replay_ok": record.replay_ok}  # fmt: skip


def _actions(raw: Any) -> list[dict[str, Any]]:
    out = []
    for a in raw if isinstance(raw, list) else ():
        if isinstance(a, dict):
            out.append({"name": a.get("name"), "arguments": a.get("arguments", a.get("kwargs"))})
    return out


def recorded_task(episode: Episode) -> dict[str, Any] | None:
    """The task as a converted episode carries it: τ²-bench's `Results.tasks` entry, τ-bench's instruction
    and gold actions; None when it carries none."""
    info = episode.outcome.info if episode.outcome is not None else {}
    tau2 = episode.source.get("tau2_task")
    if isinstance(tau2, dict):
        scenario = tau2.get("user_scenario") if isinstance(tau2.get("user_scenario"), dict) else {}
        criteria = (
            tau2.get("evaluation_criteria") if isinstance(tau2.get("evaluation_criteria"), dict) else {}
        )
        return {"from": "τ²-bench Results.tasks", "instruction": scenario.get("instructions"),
                "description": tau2.get("description"), "expected_actions": _actions(criteria.get("actions")),
                "communicate": criteria.get("communicate_info") or [], "nl_assertions": criteria.get("nl_assertions") or []}  # fmt: skip
    if "instruction" in info or "gold_actions" in info:
        return {"from": f"the {episode.outcome.judged_by if episode.outcome else ''} record".replace("  ", " "),
                "instruction": info.get("instruction"), "expected_actions": _actions(info.get("gold_actions")),
                "communicate": info.get("outputs") or [], "nl_assertions": []}  # fmt: skip
    return own_record(episode)


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def own_record(episode: Episode) -> dict[str, Any] | None:
    """The task as any episode shows it when no build is given: the request (its first user message), the
    policy it was given (its system message), the tools it was shown, the plan a loop or Steward handed it, and
    what its judge recorded of Δgold (the gold rows it left undone, the rows it changed besides); None for an
    episode with none of these (a gateway's recording)."""
    first = {m.role: m.content for m in reversed(episode.messages) if isinstance(m.content, str)}
    info = episode.outcome.info if episode.outcome is not None else {}
    loop = episode.source.get("loop") if isinstance(episode.source.get("loop"), dict) else {}
    out = {
        "from": "the episode itself (give the benchmark build among the inputs for Δgold and the gold path)",
        "request": first.get("user"),
        "policy": first.get("system"),
        "tools": _strings(episode.source.get("exposed_tools")),
        "plan": loop.get("plan") or episode.source.get("plan"),
        "missing_rows": _strings(info.get("missing_rows")),
        "missing_changes": info.get("missing_changes"),
        "collateral_rows": _strings(info.get("collateral_rows")),
        "judged_by": episode.outcome.judged_by if episode.outcome is not None else None,
        "expected_actions": [],
        "communicate": [],
        "nl_assertions": [],
    }
    return out if out["request"] or out["policy"] or out["tools"] else None


def task_panel(episode: Episode, book: TaskBook) -> dict[str, Any]:
    """`{found, …}`: the task's request, instruction, facts, Δgold, gold path and the version's reference path;
    for a task no build holds, what the episode recorded of it (`recorded`)."""
    found = book.task(episode.domain, episode.task_id)
    if found is None:
        why = "no benchmark build among the inputs" if not book.builds else "not in the builds given"
        out: dict[str, Any] = {"found": False, "reason": f"task {episode.task_id} of {episode.domain}: {why}"}
        recorded = recorded_task(episode)
        if recorded is not None:
            out["recorded"] = recorded
        return out
    task, build = found
    fingerprint = episode.source.get("task_fingerprint")
    version = version_number(episode.ecosystem_version)
    out: dict[str, Any] = {
        "found": True,
        "build": str(build),
        "id": task.id,
        "domain": task.domain,
        "split": task.split,
        "public_request": task.public_request,
        "intent": task.instruction.intent,
        "motivation": task.instruction.motivation,
        "facts": dict(task.instruction.facts),
        "rules": list(task.instruction.rules),
        "turns": [t.text for t in task.turns],
        "judge": task.judge or "delta-cover",
        "expected_changes": [change_row(c) for c in task.expected_changes],
        "gold_path": [{"tool": g.tool, "arguments": g.arguments} for g in task.gold_path],
        "same_task": None if fingerprint is None else fingerprint == task.fingerprint(),
        "version": version,
    }
    if version is not None:
        record = book.reference(task.domain, task.id, version)
        out["reference"] = None if record is None else {
            "step": _path_record(record.step), "cost": _path_record(record.cost)}  # fmt: skip
    return out


def _tau2(reward_info: dict[str, Any]) -> dict[str, Any]:
    db = reward_info.get("db_check") if isinstance(reward_info.get("db_check"), dict) else None
    actions = []
    for a in reward_info.get("action_checks") or ():
        if isinstance(a, dict):
            act = a.get("action") if isinstance(a.get("action"), dict) else {}
            actions.append({"name": act.get("name"), "arguments": act.get("arguments"), "requestor": act.get("requestor"),
                            "match": a.get("action_match"), "reward": a.get("action_reward"),
                            "tool_type": a.get("tool_type")})  # fmt: skip
    communicate = [{"info": c.get("info"), "met": c.get("met")} for c in reward_info.get("communicate_checks") or ()
                   if isinstance(c, dict)]  # fmt: skip
    env = [{"assertion": e.get("env_assertion"), "met": e.get("met")} for e in reward_info.get("env_assertions") or ()
           if isinstance(e, dict)]  # fmt: skip
    nl = [{"assertion": n.get("nl_assertion"), "met": n.get("met"), "justification": n.get("justification")}
          for n in reward_info.get("nl_assertions") or () if isinstance(n, dict)]  # fmt: skip
    info = reward_info.get("info") if isinstance(reward_info.get("info"), dict) else {}
    return {
        "kind": "tau2",
        "reward": reward_info.get("reward"),
        "basis": reward_info.get("reward_basis"),
        "breakdown": reward_info.get("reward_breakdown"),
        "db": None if db is None else {"match": db.get("db_match"), "reward": db.get("db_reward")},
        "actions": actions,
        "communicate": communicate,
        "env_assertions": env,
        "nl_assertions": nl,
        "note": info.get("note"),
    }


def _taubench(reward_info: dict[str, Any]) -> dict[str, Any]:
    """τ-bench v1's reward: `r_actions` (the final database's hash equals the gold actions' replay) and,
    where the task asks for outputs, `r_outputs` (each was said to the user)."""
    info = reward_info.get("info") if isinstance(reward_info.get("info"), dict) else {}
    return {"kind": "taubench", "reward": reward_info.get("reward"), "r_actions": info.get("r_actions"),
            "r_outputs": info.get("r_outputs"), "outputs": info.get("outputs"),
            "gold_actions": _actions(reward_info.get("actions"))}  # fmt: skip


def _delta(episode: Episode, task: Task | None) -> dict[str, Any]:
    """Δgold vs Δagent: judged afresh where the task and the world diff are known, else as recorded."""
    info = episode.outcome.info if episode.outcome is not None else {}
    out: dict[str, Any] = {
        "kind": "delta",
        "agent_changes": None if episode.world_diff is None else len(episode.world_diff),
    }
    fingerprint = episode.source.get("task_fingerprint")
    same = task is not None and (fingerprint is None or fingerprint == task.fingerprint())
    if same and task is not None and episode.world_diff is not None and task.judge is None:
        verdict = task.verdict(episode.world_diff)
        out |= {"from": "judged here from the task and the episode's world diff", "gold_changes": len(task.expected_changes),
                "missing": [change_row(c) for c in verdict.missing],
                "collateral": [change_row(c) for c in verdict.collateral],
                "success": verdict.success, "strict_success": verdict.strict_success}  # fmt: skip
        return out
    out["from"] = "as the episode recorded it" + (
        " (its task changed since)" if task is not None and not same else ""
    )
    for name in ("missing", "collateral"):
        rows = info.get(f"{name}_rows")
        out[f"{name}_rows"] = [str(r) for r in rows] if isinstance(rows, list) else None
        out[f"{name}_changes"] = info.get(f"{name}_changes")
    return out


def grader(episode: Episode, book: TaskBook) -> dict[str, Any]:
    """What each check of the episode's judge found: `{judged_by, reward, success, checks: [...]}`."""
    outcome = episode.outcome
    if outcome is None:
        return {"judged_by": None, "checks": []}
    info = outcome.info
    judge = outcome.judged_by or ""
    found = book.task(episode.domain, episode.task_id)
    task = found[0] if found else None
    checks: list[dict[str, Any]] = []
    if judge == "tau-bench-v1" and isinstance(info.get("reward_info"), dict):
        checks.append(_taubench(info["reward_info"]))
    elif isinstance(info.get("reward_info"), dict):
        checks.append(_tau2(info["reward_info"]))
    if judge.startswith("bfcl"):
        checks.append({"kind": "bfcl", "valid": outcome.success, "error_type": info.get("error_type"),
                       "error_message": info.get("error_message"), "dropped": info.get("dropped")})  # fmt: skip
    if judge.startswith("agentdojo"):
        checks.append({"kind": "agentdojo", "utility": outcome.success, "security": info.get("security"),
                       "replayed": info.get("replayed"), "error": info.get("error")})  # fmt: skip
    if judge == "delta-cover" or episode.world_diff is not None or "missing_changes" in info:
        checks.append(_delta(episode, task))
    return {
        "judged_by": outcome.judged_by,
        "reward": outcome.reward,
        "success": outcome.success,
        "checks": checks,
    }
