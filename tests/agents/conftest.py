"""Tasks for agent-run tests, made the way a benchmark makes them: run a gold path on a world, record Δ."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolshift.agents.tasks import task_from_path
from toolshift.models import RowChange, Task, UserInstruction
from toolshift.taskfile import write_tasks


def clinic_tasks() -> list[Task]:
    cancel = task_from_path(
        "clinic",
        "cancel-apt3",
        "I need to cancel my appointment.",
        UserInstruction(intent="Cancel appointment APT-00003.", facts={"appointment id": "APT-00003"}),
        [
            ("get_appointment", {"appointment_id": "APT-00003"}),
            ("cancel_appointment", {"appointment_id": "APT-00003"}),
        ],
    )
    email = task_from_path(
        "clinic",
        "email-pat1",
        "Please change the email on my file.",
        UserInstruction(
            intent="Change my email to ana@new.example.",
            facts={"full name": "Ana Abbott", "new email": "ana@new.example", "patient id": "PAT-00001"},
        ),
        [
            ("search_patients", {"full_name": "Ana Abbott"}),
            ("update_patient", {"patient_id": "PAT-00001", "email": "ana@new.example"}),
        ],
    )
    return [cancel, email]


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
