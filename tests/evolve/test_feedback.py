"""The feedback generator's structured diff, failure modes and features by rules, and the trivial-failure judge,
on attempts run through the real agent loop by scripted policies (measuring instruments)."""

from __future__ import annotations

import asyncio
import random

from toolshift.agents.loop import run_episode
from toolshift.agents.policies import ScriptedCall, ScriptedPolicy
from toolshift.agents.users import ScriptedUser
from toolshift.evolve.edits import apply_edit
from toolshift.evolve.feedback import diff_attempt, failure_mode, summarise, task_failure_mode
from toolshift.evolve.judge import rule_verdict
from toolshift.evolve.solver import world_with_setup
from toolshift.evolve.structural import Lineage, StructuralProposer
from toolshift.evolve.taxonomy import task_features
from toolshift.evolve.verify import verify
from toolshift.world import load_domain

from .builders import spec_of

WRITES = {t.name for t in load_domain("clinic").tools if t.effect == "write"}


def _attempt(task, calls, trial=0):
    policy = ScriptedPolicy("scripted-wrong", [ScriptedCall(t, a) for t, a in calls])
    user = ScriptedUser(task.public_request, task.instruction)
    return asyncio.run(
        run_episode(
            task, policy, user, world_with_setup(task.domain, []), episode_id=f"t:{trial}", trial=trial
        )
    )


def test_a_wrong_record_is_named_with_both_values(cancel):
    episode = _attempt(cancel, [("cancel_appointment", {"appointment_id": "APT-00019"})])
    assert episode.outcome.success is False
    d = diff_attempt(episode, cancel, WRITES)
    assert d.wrong_arguments == [
        'called cancel_appointment with appointment_id "APT-00019" instead of "APT-00003"'
    ]
    assert d.missing_changes and "APT-00003.status" in d.missing_changes[0]
    assert d.extra_rows == ["appointment APT-00019"]
    assert d.unseen_values == ["APT-00019"]
    assert failure_mode(d, cancel, []) == "hallucination"


def test_a_missing_write_is_incompletion_and_the_summary_counts_it(cancel):
    episodes = [
        _attempt(cancel, [("get_appointment", {"appointment_id": "APT-00003"})], trial=k) for k in range(3)
    ]
    diffs = [diff_attempt(e, cancel, WRITES) for e in episodes]
    assert diffs[0].missing_calls == ['cancel_appointment(appointment_id="APT-00003")']
    assert task_failure_mode(diffs, cancel, []) == "incompletion"
    text = summarise(diffs, 10)
    assert text.startswith("3 of 10 attempts failed")
    assert 'never called cancel_appointment(appointment_id="APT-00003") (3)' in text


def test_an_unknown_tool_is_an_invalid_api(cancel):
    episode = _attempt(cancel, [("cancel_appointmnt", {"appointment_id": "APT-00003"})])
    d = diff_attempt(episode, cancel, WRITES)
    assert d.failed_calls == ["cancel_appointmnt: unknown_tool"]
    assert failure_mode(d, cancel, []) == "invalid_apis"


def test_a_difference_of_form_is_a_formatting_error_and_judged_trivial(demo):
    email = demo[1]
    gold_email = email.gold_path[1].arguments["email"]
    shouted = gold_email.upper()
    episode = _attempt(email, [("update_patient", {"patient_id": "PAT-00001", "email": shouted})])
    d = diff_attempt(episode, email, WRITES)
    assert d.wrong_values and d.wrong_values[0][1] == shouted
    assert failure_mode(d, email, []) == "formatting_errors"
    verdict = rule_verdict([d])
    assert verdict.trivial and "only in form" in verdict.reason
    other = diff_attempt(
        _attempt(email, [("update_patient", {"patient_id": "PAT-00001", "email": "x@y.example"})]),
        email,
        WRITES,
    )
    assert failure_mode(other, email, []) == "incorrect_data_processing"
    assert not rule_verdict([other]).trivial


def test_features_by_rules(demo, bench_clinic):
    cancel = demo[0]
    assert task_features(cancel, WRITES) == []
    proposer = StructuralProposer()
    spec = spec_of(cancel)
    found = {}
    for op in ("hide_identifier", "add_distractor"):
        edit, _ = getattr(proposer, op)(proposer.scene("clinic"), cancel, spec, Lineage(), random.Random(0))
        child = verify("c", "clinic", apply_edit(spec, edit)).task
        found[op] = task_features(child, WRITES)
    assert "intermediate_tool_call" in found["hide_identifier"]
    assert "distractor" in found["add_distractor"]
    bench = {f for t in bench_clinic for f in task_features(t, WRITES)}
    assert "intermediate_tool_call" in bench
