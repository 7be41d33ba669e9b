"""Tasks made by replaying a call sequence on a fresh world (tests and the demo); task files are `toolshift.taskfile`."""

from __future__ import annotations

from typing import Any

from toolshift.errors import BadInputError
from toolshift.models import GoldCall, Task, UserInstruction


def task_from_path(
    domain: str,
    task_id: str,
    public_request: str,
    instruction: UserInstruction,
    calls: list[tuple[str, dict[str, Any]]],
) -> Task:
    """A task whose Δgold is what replaying `calls` on a fresh world of `domain` changes.

    Every call must succeed (a failing gold path makes no task). Used by tests and the demo until a
    benchmark build supplies tasks.
    """
    from toolshift.world import World

    world = World.load(domain)
    try:
        before = world.snapshot()
        gold: list[GoldCall] = []
        for name, arguments in calls:
            result = world.call(name, arguments)
            if not result.ok:
                raise BadInputError(
                    f"gold call {name} failed: {result.error}", record=task_id, field="gold_path"
                )
            gold.append(GoldCall(tool=name, arguments=arguments, result=result.result, function=name))
        changes = world.changes_since(before)
    finally:
        world.close()
    return Task(
        id=task_id,
        domain=domain,
        public_request=public_request,
        instruction=instruction,
        gold_path=gold,
        base_functions=[c.tool for c in gold],
        expected_changes=changes,
    )
