"""Read task files: JSONL of `toolshift.models.Task`, one per line, an optional format header first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolshift.errors import BadInputError
from toolshift.models import GoldCall, Task, UserInstruction

TASKS_FORMAT = "toolshift.tasks/1"


def load_tasks(path: str | Path) -> list[Task]:
    """All tasks of a file, in order. Errors name the file, the 0-based task index and the field.

    A first line that is an object with `format` and no `id` is a header: its format must be
    `toolshift.tasks/1`. Blank lines are skipped. Task ids must be unique within a file.
    """
    path = Path(path)
    if not path.is_file():
        raise BadInputError("no such task file", source=str(path))
    tasks: list[Task] = []
    seen: set[str] = set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read task file: {exc}", source=str(path)) from None
    index = 0
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInputError(
                f"not JSON (line {number + 1}): {exc.msg}", source=str(path), record=index
            ) from None
        if not isinstance(raw, dict):
            raise BadInputError("a task line must be a JSON object", source=str(path), record=index)
        if number == 0 and "format" in raw and "id" not in raw:
            if raw["format"] != TASKS_FORMAT:
                raise BadInputError(
                    f"unknown task file format {raw['format']!r} (this reader knows {TASKS_FORMAT})",
                    source=str(path),
                    record="header",
                    field="format",
                )
            continue
        try:
            task = Task.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or None
            raise BadInputError(err["msg"], source=str(path), record=index, field=field) from None
        if task.id in seen:
            raise BadInputError(f"task id {task.id!r} repeats", source=str(path), record=index, field="id")
        seen.add(task.id)
        tasks.append(task)
        index += 1
    if not tasks:
        raise BadInputError("the task file holds no tasks", source=str(path))
    return tasks


def write_tasks(path: str | Path, tasks: list[Task]) -> Path:
    """Write tasks as JSONL with the format header (atomically: temp file then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"format": TASKS_FORMAT}) + "\n")
        for task in tasks:
            fh.write(task.model_dump_json() + "\n")
    tmp.replace(path)
    return path


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
