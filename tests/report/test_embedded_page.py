"""The embedded results page: which tasks count as naming every value, and the user-prompt check on a build."""

from __future__ import annotations

from toolshift.agents.demo import demo_tasks
from toolshift.agents.embedded_study import NAMED, Picked, names_every_value
from toolshift.agents.tasks import task_from_path
from toolshift.models import UserInstruction
from toolshift.report.embedded import episode_rows, paired_section, success_section
from toolshift.traces.episode import Episode, Outcome


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


def _episode(task_id: str, trial: int, success: bool | None) -> Episode:
    outcome = None if success is None else Outcome(success=success, judged_by="delta-cover")
    return Episode(id=f"k:{task_id}:{trial}", task_id=task_id, trial=trial, domain="d", outcome=outcome)


def test_the_tables_count_solved_episodes_per_group_and_pair_the_first_trials():
    demo = [t.id for t in demo_tasks()]
    cancel = demo_tasks()[0]
    picked = [Picked("d", cancel.model_copy(update={"id": "named-1"}), NAMED)]
    episodes = {
        "embedded": [_episode(demo[0], 0, True), _episode(demo[0], 1, False), _episode(demo[1], 0, False),
                     _episode("named-1", 0, True), _episode("named-1", 1, None)],
        "embedded:recent": [_episode(demo[0], 0, False), _episode(demo[1], 0, True), _episode("named-1", 0, True)],
    }  # fmt: skip
    text, figures = success_section(picked, episodes)
    assert figures["demo (clinic)"]["embedded"]["solved"] == 1
    assert figures["demo (clinic)"]["embedded"]["episodes"] == 3
    assert figures["demo (clinic)"]["embedded:recent"]["solved"] == 1
    assert figures[NAMED]["embedded"]["episodes"] == 1  # an unjudged episode is not counted
    assert "| demo (clinic) | 3 | 1/3 = " in text
    paired = paired_section(picked, episodes)
    # demo: two tasks ran both (demo[0]: model only; demo[1]: rule only); named-1: both solved
    assert "| demo (clinic) | 2 | 1 | 1 | 1 | 1 |" in paired
    assert f"| {NAMED} | 1 | 1 | 1 | 0 | 0 |" in paired
    rows = episode_rows(picked, episodes)
    assert "| named-1 | " in rows and "| 1/2 | 1/1 |" in rows


def test_strict_success_stands_beside_success_and_unknowns_are_not_clean():
    """On the real clinic world: a greedy episode of demo-cancel (also cancels APT-00019) succeeds, not strictly;
    a careful one does both; an episode recorded with neither verdict fields nor a diff is unknown."""
    from collateral import cancel_episode, without_verdict_fields

    demo = demo_tasks()
    episodes = {
        "embedded": [
            without_verdict_fields(cancel_episode(greedy=True, trial=0)),
            cancel_episode(greedy=False, trial=1),
            _episode(demo[1].id, 0, True),  # no world diff, no strict verdict
        ],
        "embedded:recent": [cancel_episode(greedy=False, trial=0)],
    }
    text, figures = success_section([], episodes)
    mine = figures["demo (clinic)"]["embedded"]
    assert mine["solved"] == 3 and mine["episodes"] == 3
    assert mine["strict_solved"] == 1 and mine["strict_unknown"] == 1  # the greedy one, from its world diff
    assert "Strict success (no collateral write)" in text and "1/2 = " in text and "; 1 unknown" in text
    assert figures["demo (clinic)"]["embedded:recent"]["strict_solved"] == 1
