"""The embedded results page: which tasks count as naming every value, and the user-prompt check on a build."""

from __future__ import annotations

from toolshift.agents.demo import demo_tasks
from toolshift.agents.tasks import task_from_path
from toolshift.models import UserInstruction
from toolshift.report.embedded import names_every_value


def test_a_task_names_every_value_when_its_write_takes_only_what_the_user_holds():
    cancel, email, invoice = demo_tasks()
    assert names_every_value(cancel) and names_every_value(invoice)
    assert names_every_value(email)  # patient id and new email are both the user's facts
    found = task_from_path(
        "clinic",
        "by-name",
        "Please change the email on my file.",
        UserInstruction(
            intent="Change my email.", facts={"full name": "Ana Abbott", "new email": "a@b.example"}
        ),
        [
            ("search_patients", {"full_name": "Ana Abbott"}),
            ("update_patient", {"patient_id": "PAT-00001", "email": "a@b.example"}),
        ],
    )
    assert not names_every_value(found)  # the patient's key comes from the search, not from the user
