"""BadInputError: a pydantic validation error becomes one line naming the file, record and field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from toolshift.errors import BadInputError
from toolshift.models import Task


def test_from_validation_names_the_nested_field():
    with pytest.raises(ValidationError) as caught:
        Task.model_validate(
            {
                "id": "t1",
                "domain": "clinic",
                "public_request": "hi",
                "instruction": {"intent": "x", "facts": {"email": 3}},
                "gold_path": [],
                "base_functions": [],
                "expected_changes": [],
            }
        )
    bad = BadInputError.from_validation(caught.value, source="tasks.jsonl", record=4, prefix="task")
    assert (bad.source, bad.record, bad.field) == ("tasks.jsonl", 4, "task.instruction.facts.email")
    assert str(bad).startswith("tasks.jsonl: record 4: field 'task.instruction.facts.email': ")
