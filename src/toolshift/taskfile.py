"""Task files: JSONL of `toolshift.models.Task`, one per line, an optional format header first.

The one reader and writer of the task model's files: agent runs read them, benchmark builds
write and read them (docs/formats.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import atomic_text, loads_json, read_text, require_regular
from toolshift.models import Task

TASKS_FORMAT = "toolshift.tasks/1"


def read_tasks(path: str | Path, *, missing_ok: bool = False, allow_empty: bool = False) -> list[Task]:
    """All tasks of a file, in order. Errors name the file, the 0-based task index and the field.

    A first line that is an object with `format` and no `id` is a header: its format must be
    `toolshift.tasks/1` (benchmark builds write none). Blank lines are skipped. Task ids must be
    unique within a file. `missing_ok` and `allow_empty` give an empty list instead of an error
    (a build's domain that has no tasks yet, or kept none).
    """
    path = Path(path)
    if not path.exists() and missing_ok:
        return []
    require_regular(path, what="task file")
    tasks: list[Task] = []
    seen: set[str] = set()
    lines = read_text(path, what="task file").splitlines()
    index = 0
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            raw = loads_json(line)
        except BadInputError as exc:
            raise BadInputError(
                f"{exc.detail} (line {number + 1})", source=str(path), record=index, field=exc.field
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
            raise BadInputError.from_validation(exc, source=str(path), record=index) from None
        if task.id in seen:
            raise BadInputError(f"task id {task.id!r} repeats", source=str(path), record=index, field="id")
        seen.add(task.id)
        tasks.append(task)
        index += 1
    if not tasks and not allow_empty:
        raise BadInputError("the task file holds no tasks", source=str(path))
    return tasks


def write_tasks(path: str | Path, tasks: list[Task]) -> Path:
    """Write tasks as JSONL with the format header (atomically: temp file then rename)."""
    path = Path(path)
    with atomic_text(path) as fh:
        fh.write(json.dumps({"format": TASKS_FORMAT}) + "\n")
        for task in tasks:
            fh.write(task.model_dump_json() + "\n")
    return path
