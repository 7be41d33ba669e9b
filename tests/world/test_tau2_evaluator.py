"""τ²-bench's reward as computed here (toolshift.world.tau2.evaluator): its rules on the imported tasks, no τ² needed.

The agreement with τ²-bench itself is tests/world/test_tau2_reward.py; these pin the rules τ²'s source
states, on the real tasks, where no Python 3.12 exists.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from toolshift.agents.demo import demo_tasks
from toolshift.models import ExpectedAction
from toolshift.world.tau2.domains import tau2_world
from toolshift.world.tau2.evaluator import Call, action_matches, evaluate
from toolshift.world.tau2.tasks import import_tasks

pytestmark = [pytest.mark.slow, pytest.mark.shared]


@pytest.fixture(scope="module")
def tasks():
    for name in ("tau2-airline", "tau2-retail"):
        why = tau2_world(name).unavailable()
        if why is not None:
            pytest.skip(f"{name} unavailable: {why}")
    return {name: import_tasks(name).tasks for name in ("tau2-airline", "tau2-retail")}


def _gold(task):
    return [Call(a.name, a.arguments) for a in task.criteria.actions or []]


def test_imported_tasks_carry_tau2s_criteria(tasks):
    for every in tasks.values():
        assert {t.judge for t in every} == {"tau2-evaluator"}
        assert all(t.criteria is not None and t.criteria.reward_basis for t in every)
    airline, retail = tasks["tau2-airline"], tasks["tau2-retail"]
    assert {tuple(t.criteria.reward_basis) for t in airline} == {("DB", "COMMUNICATE")}
    assert (
        sum(1 for t in retail if "NL_ASSERTION" in t.criteria.reward_basis and t.criteria.nl_assertions) == 40
    )


def test_the_gold_path_saying_what_it_must_scores_1_and_leaving_it_unsaid_0(tasks):
    for every in tasks.values():
        for task in every:
            said = " ".join(task.criteria.communicate_info or [])
            info = evaluate(task, _gold(task), [f"Done. {said}"], "user_stop")
            assert info["reward"] == 1.0 and info["db_check"]["db_match"], task.id
            if task.criteria.communicate_info and "COMMUNICATE" in task.criteria.reward_basis:
                silent = evaluate(task, _gold(task), ["Done."], "agent_stop")
                assert silent["reward"] == 0.0 and silent["reward_breakdown"]["COMMUNICATE"] == 0.0
                assert silent["db_check"]["db_match"]


def test_doing_nothing_passes_exactly_the_tasks_whose_gold_changes_nothing(tasks):
    passed = {}
    for name, every in tasks.items():
        passed[name] = 0
        for t in every:
            info = evaluate(t, [], [" ".join(t.criteria.communicate_info or [])], "user_stop")
            assert info["db_check"]["db_match"] == (t.expected_changes == []), t.id
            passed[name] += info["reward"] == 1.0
    assert passed == {"tau2-airline": 24, "tau2-retail": 11}


def test_any_ending_but_a_stop_scores_0(tasks):
    task = tasks["tau2-airline"][0]
    for ending in ("max_turns", "timeout", "agent_error"):
        info = evaluate(task, _gold(task), ["Done."], ending)
        assert info["reward"] == 0.0 and info["reward_basis"] is None
        assert info["info"]["note"].startswith("Simulation terminated prematurely")


def test_an_extra_write_fails_the_database_check(tasks):
    task = next(t for t in tasks["tau2-airline"] if t.id == "48")
    assert task.expected_changes == []  # a task whose right answer changes nothing
    calls = [*_gold(task), Call("send_certificate", {"user_id": "mia_li_3668", "amount": 0})]
    info = evaluate(task, calls, ["Done."], "user_stop")
    assert info["reward"] == 0.0 and info["db_check"] == {"db_match": False, "db_reward": 0.0}


def test_action_matching_is_tau2s_rule():
    action = ExpectedAction(name="get_user_details", arguments={"user_id": "a"})
    assert action_matches(action, Call("get_user_details", {"user_id": "a"}))
    assert not action_matches(action, Call("get_user_details", {"user_id": "b"}))
    assert not action_matches(action, Call("get_user_details", {"user_id": "a", "extra": 1}))
    assert action_matches(action, Call("get_user_details", {}))  # no argument given: nothing to compare
    assert not action_matches(action, Call("get_order_details", {"user_id": "a"}))
    only = ExpectedAction(name="f", arguments={"a": 1, "b": 2}, compare_args=["a"])
    assert action_matches(only, Call("f", {"a": 1.0, "b": 3}))
    assert action_matches(ExpectedAction(name="f", arguments={"a": 1}, compare_args=[]), Call("f", {"a": 9}))


def test_tasks_without_criteria_keep_their_fingerprints():
    for task in demo_tasks():
        body = task.model_dump(mode="json", exclude={"history", "version", "split", "generated_values",
                                                      "turns", "judge", "criteria"})  # fmt: skip
        old = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
        if not task.generated_values and not task.turns and task.judge is None:
            assert task.fingerprint() == old
