"""Verification before solving: the ground truth replayed on a fresh world; broken tasks rejected with why."""

from __future__ import annotations

import pytest

from toolshift.evolve.program import CallSpec, ChangeSpec, CriteriaSpec
from toolshift.evolve.verify import Rejected, verify

from .builders import spec_of


def test_a_good_task_gets_the_worlds_changes_as_its_gold(cancel):
    v = verify("x", "clinic", spec_of(cancel))
    assert [c.model_dump() for c in v.task.expected_changes] == [
        c.model_dump() for c in cancel.expected_changes
    ]
    assert [g.result for g in v.task.gold_path] == [g.result for g in cancel.gold_path]


@pytest.mark.parametrize(
    ("calls", "says"),
    [
        ([("cancel_appointment", {"appointment_id": "APT-99999"})], "not_found"),
        ([("cancel_appointmnt", {"appointment_id": "APT-00003"})], "unknown_tool"),
        ([("cancel_appointment", {"appointment": "APT-00003"})], "invalid_arguments"),
        ([("get_appointment", {"appointment_id": "APT-00003"})], "changes nothing"),
        (
            [
                ("cancel_appointment", {"appointment_id": "APT-00003"}),
                ("cancel_appointment", {"appointment_id": "APT-00003"}),
            ],
            "step 1 cancel_appointment failed",
        ),
    ],
)
def test_broken_ground_truth_is_rejected_with_the_reason(cancel, calls, says):
    spec = spec_of(cancel).model_copy(
        update={"ground_truth_calls": [CallSpec(tool=t, arguments=a) for t, a in calls]}
    )
    with pytest.raises(Rejected, match=says) as err:
        verify("x", "clinic", spec)
    assert err.value.stage == "verify"


def test_a_policy_refusal_is_a_rejection(cancel):
    """Inconsistent state dependencies (the seed's example: a message to someone not in the contacts)."""
    spec = spec_of(cancel).model_copy(
        update={
            "initial_state": [CallSpec(tool="cancel_appointment", arguments={"appointment_id": "APT-00003"})],
        }
    )
    with pytest.raises(Rejected, match="ground truth step 1 cancel_appointment failed"):
        verify("x", "clinic", spec)


def test_the_starting_state_is_applied_before_the_ground_truth(cancel):
    spec = spec_of(cancel).model_copy(
        update={
            "initial_state": [
                CallSpec(
                    tool="update_appointment", arguments={"appointment_id": "APT-00003", "reason": "moved"}
                )
            ]
        }
    )
    v = verify("x", "clinic", spec)
    assert v.initial_state[0].tool == "update_appointment"
    assert [c.field for c in v.task.expected_changes] == ["status"]


def test_criteria_are_met_by_the_ground_truth_or_the_task_is_rejected(cancel):
    ok = CriteriaSpec(
        expected_changes=[ChangeSpec(table="appointment", key="APT-00003", field="status", after="cancelled")]
    )
    v = verify("x", "clinic", spec_of(cancel).model_copy(update={"evaluation_criteria": ok}))
    assert len(v.task.expected_changes) == 1
    bad = CriteriaSpec(
        expected_changes=[ChangeSpec(table="appointment", key="APT-00003", field="status", after="completed")]
    )
    with pytest.raises(Rejected, match="criterion 0 wants"):
        verify("x", "clinic", spec_of(cancel).model_copy(update={"evaluation_criteria": bad}))
    elsewhere = CriteriaSpec(
        expected_changes=[ChangeSpec(table="patient", key="PAT-00001", field="email", after="a@b")]
    )
    with pytest.raises(Rejected, match="not changed by the ground truth"):
        verify("x", "clinic", spec_of(cancel).model_copy(update={"evaluation_criteria": elsewhere}))


def test_the_users_text_never_names_a_tool(cancel):
    spec = spec_of(cancel).model_copy(update={"public_request": "Please call cancel_appointment for me."})
    with pytest.raises(Rejected, match="names the tool 'cancel_appointment'"):
        verify("x", "clinic", spec)


def test_an_unknown_world_is_a_rejection(cancel):
    with pytest.raises(Rejected, match="no world"):
        verify("x", "no_such_domain", spec_of(cancel))
