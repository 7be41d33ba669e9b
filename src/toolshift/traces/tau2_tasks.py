"""τ²-bench `Task` records for a Results export: the tasks the episodes ran, from wherever they are known.

τ²-bench's metrics, `tau2 view` and `evaluate-trajs` look each simulation's task up in
`Results.tasks`, so an export needs one task per task id. In order of preference (docs/formats.md):

- a toolshift task file (`--tasks`, `toolshift.tasks/1`): the task the run used, checked against each
  episode's `source.task_fingerprint`; a task judged by τ²'s reward (`judge: tau2-evaluator`) keeps
  τ²'s own `evaluation_criteria` (`Task.criteria`), any other's gold path becomes
  `evaluation_criteria.actions` and its judge (Δgold ⊆ Δagent, a database check) `reward_basis: ["DB"]`;
- the τ²-bench task the episode was read with (`source.tau2_task`, kept verbatim by the reader);
- for converted τ-bench v1 runs, what each episode carries: the user's instruction, the gold actions
  (`{name, kwargs}` → τ² `Action`s) and the outputs the agent must say (`communicate_info`), judged
  like τ-bench judged them (`reward_basis: ["DB", "COMMUNICATE"]`).

An episode whose task is known from none of these is refused, naming the episode.
"""

from __future__ import annotations

from typing import Any

from toolshift.errors import BadInputError
from toolshift.models import Task
from toolshift.traces.episode import Episode

TAUBENCH_JUDGE = "tau-bench-v1"


def _criteria(task: Task) -> dict[str, Any]:
    """τ²-bench's `evaluation_criteria` of a task: its own (`Task.criteria`), else its gold path judged by DB."""
    if task.criteria is None:
        return {
            "actions": [
                {
                    "action_id": f"{task.id}_{i}",
                    "requestor": "assistant",
                    "name": call.tool,
                    "arguments": call.arguments,
                }
                for i, call in enumerate(task.gold_path)
            ],
            "reward_basis": ["DB"],
        }
    c = task.criteria
    actions = None
    if c.actions is not None:
        actions = [
            {
                "action_id": a.action_id or f"{task.id}_{i}",
                "requestor": a.requestor,
                "name": a.name,
                "arguments": a.arguments,
                "info": a.info,
                "compare_args": a.compare_args,
            }
            for i, a in enumerate(c.actions)
        ]
    return {
        "actions": actions,
        "communicate_info": c.communicate_info,
        "nl_assertions": c.nl_assertions,
        "reward_basis": list(c.reward_basis),
    }


def task_from_toolshift(task: Task) -> dict[str, Any]:
    """A toolshift task as a τ²-bench Task dict (user scenario from its instruction, criteria from `_criteria`)."""
    instruction = task.instruction
    reason = instruction.intent + (f" ({instruction.motivation})" if instruction.motivation else "")
    known = "\n".join(f"{name}: {value}" for name, value in instruction.facts.items()) or None
    steps = [f"Open with: {task.public_request}", *instruction.rules]
    return {
        "id": task.id,
        "description": {
            "purpose": task.public_request,
            "relevant_policies": None,
            "notes": f"toolshift task {task.id} v{task.version} (fingerprint {task.fingerprint()}); "
            + (
                f"judged by Δgold ⊆ Δagent over {len(task.expected_changes)} row changes"
                if task.criteria is None
                else f"judged by {task.judge}: τ²-bench's reward over its evaluation_criteria"
            ),
        },
        "user_scenario": {
            "persona": None,
            "instructions": {
                "domain": task.domain,
                "reason_for_call": reason,
                "known_info": known,
                "unknown_info": None,
                "task_instructions": "\n".join(steps),
            },
        },
        "evaluation_criteria": _criteria(task),
    }


def task_from_taubench(episode: Episode) -> dict[str, Any]:
    """The τ-bench v1 task a converted episode ran, from the ground truth it carries in `outcome.info`."""
    info = episode.outcome.info if episode.outcome else {}
    actions = info.get("gold_actions") or []
    return {
        "id": episode.task_id,
        "description": {
            "purpose": None,
            "relevant_policies": None,
            "notes": f"τ-bench v1 {episode.domain.removeprefix('taubench-v1-')} task {episode.task_id}"
            + (f" (user {info['user_id']})" if info.get("user_id") else "")
            + ", rebuilt by toolshift from the published trajectory",
        },
        "user_scenario": {"persona": None, "instructions": info.get("instruction") or ""},
        "evaluation_criteria": {
            "actions": [
                {
                    "action_id": f"{episode.task_id}_{i}",
                    "requestor": "assistant",
                    "name": action["name"],
                    "arguments": action.get("kwargs") or {},
                }
                for i, action in enumerate(actions)
            ],
            "communicate_info": list(info.get("outputs") or []),
            "reward_basis": ["DB", "COMMUNICATE"],
        },
    }


def _episode_task(episode: Episode, given: dict[str, Task] | None) -> dict[str, Any] | None:
    if given is not None and episode.task_id in given:
        task = given[episode.task_id]
        ran = episode.source.get("task_fingerprint")
        if ran is not None and ran != task.fingerprint():
            raise BadInputError(
                f"ran task {episode.task_id!r} with fingerprint {ran}, but the task file's is "
                f"{task.fingerprint()}: the task changed since",
                record=episode.id,
                field="source.task_fingerprint",
            )
        return task_from_toolshift(task)
    if isinstance(episode.source.get("tau2_task"), dict):
        return episode.source["tau2_task"]
    if episode.outcome is not None and episode.outcome.judged_by == TAUBENCH_JUDGE:
        return task_from_taubench(episode)
    return None


def tau2_tasks(episodes: list[Episode], given: dict[str, Task] | None = None) -> list[dict[str, Any]]:
    """One τ²-bench task per task id the episodes ran, trials agreeing on it: in the task file's order when
    one is given (a run appends episodes as they finish, so first-seen order varies run to run), else in
    first-seen order."""
    tasks: dict[str, dict[str, Any]] = {}
    for episode in episodes:
        task = _episode_task(episode, given)
        if task is None:
            hint = (
                "pass --tasks with the task file the run used" if given is None else "the task file lacks it"
            )
            raise BadInputError(
                f"task {episode.task_id!r} is not known, and a τ²-bench Results lists every task it ran; {hint}",
                record=episode.id,
                field="task_id",
            )
        seen = tasks.setdefault(episode.task_id, task)
        if seen != task:
            raise BadInputError(
                f"carries a different task {episode.task_id!r} than an earlier episode of it",
                record=episode.id,
                field="task_id",
            )
    if given is not None:
        rank = {task_id: i for i, task_id in enumerate(given)}
        return [tasks[t] for t in sorted(tasks, key=lambda t: rank.get(t, len(rank)))]
    return list(tasks.values())
