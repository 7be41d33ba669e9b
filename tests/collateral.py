"""Episodes with collateral writes, made on the real clinic world: the task done, and another record broken.

`demo-cancel` asks to cancel appointment APT-00003. The greedy agent here does that through the real
agent loop and also cancels APT-00019 (a scheduled appointment the clinic's policy lets it cancel): the
benchmark's SR (Δgold ⊆ Δagent) counts it solved, strict SR does not, and the collateral row is
`appointment/APT-00019`. The careful agent does only the task.
"""

from __future__ import annotations

import asyncio

from toolshift.agents.demo import demo_tasks
from toolshift.agents.loop import run_episode
from toolshift.agents.policies import ScriptedCall, ScriptedPolicy
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.models import Task
from toolshift.traces.episode import Episode

EXTRA = "APT-00019"
COLLATERAL_ROW = f"appointment/{EXTRA}"


def cancel_task() -> Task:
    return demo_tasks()[0]


def cancel_episode(
    *, greedy: bool, trial: int = 0, episode_id: str | None = None, task: Task | None = None
) -> Episode:
    """One `demo-cancel` episode through the real loop on a fresh clinic world; `greedy` also cancels EXTRA."""
    task = task or cancel_task()
    calls = [
        ScriptedCall("get_appointment", {"appointment_id": "APT-00003"}),
        ScriptedCall("cancel_appointment", {"appointment_id": "APT-00003"}),
    ]
    if greedy:
        calls.append(ScriptedCall("cancel_appointment", {"appointment_id": EXTRA}))
    name = "greedy" if greedy else "careful"
    return asyncio.run(
        run_episode(
            task,
            ScriptedPolicy(name, calls),
            ScriptedUser(task.public_request, task.instruction),
            world_opener(task.domain),
            episode_id=episode_id or f"{name}:{task.id}:{trial}",
            trial=trial,
        )
    )


def without_verdict_fields(episode: Episode) -> Episode:
    """The episode as a run from before strict success recorded it: no strict_success or collateral fields."""
    assert episode.outcome is not None
    info = {
        k: v
        for k, v in episode.outcome.info.items()
        if k not in ("strict_success", "collateral_changes", "collateral_rows", "missing_rows")
    }
    return episode.model_copy(update={"outcome": episode.outcome.model_copy(update={"info": info})})
