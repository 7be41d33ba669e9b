"""Tasks for agent-run tests, made the way a benchmark makes them: run a gold path on a world, record Δ."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolshift.agents.demo import demo_tasks
from toolshift.models import RowChange, Task
from toolshift.taskfile import write_tasks


def clinic_tasks() -> list[Task]:
    """The demo's first two clinic tasks (cancel an appointment, change an email), Δgold recorded by replay."""
    return demo_tasks()[:2]


def impossible_task() -> Task:
    """A task whose expected change its own gold path does not make: an invalid task."""
    base = clinic_tasks()[1]
    wrong = RowChange(table="patient", key="PAT-00001", field="email", op="update", before="x", after="no@x")
    return base.model_copy(update={"id": "impossible", "expected_changes": [wrong]})


@pytest.fixture(scope="session")
def tasks() -> list[Task]:
    return clinic_tasks()


@pytest.fixture(scope="session")
def impossible() -> Task:
    return impossible_task()


@pytest.fixture
def tasks_file(tmp_path: Path, tasks: list[Task]) -> Path:
    return write_tasks(tmp_path / "clinic.tasks.jsonl", [*tasks, impossible_task()])
