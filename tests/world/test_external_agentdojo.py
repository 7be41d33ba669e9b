"""AgentDojo worlds against agentdojo itself: its suites' environments, tools, ground truths and utility checks."""

from __future__ import annotations

import pytest

pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")

from toolshift.errors import BadInputError
from toolshift.world.external import Transcript, agentdojo, export_tasks, judge_task
from toolshift.world.external.objects import ObjectWorld


def _gold(task, final=None):
    calls = [(g.tool, g.arguments) for g in task.gold_path]
    return Transcript(
        turns=[[[c] for c in calls]],
        calls=calls,
        final_text=task.turns[0].reply or "" if final is None else final,
    )


def test_every_benign_user_task_gets_full_utility_from_agentdojo():
    """All 97 user tasks of the four suites at v1.2.2: ground truth replayed on our world, AgentDojo's check."""
    report = export_tasks("agentdojo")
    assert report.failed == []
    assert len(report.tasks) == 97
    assert {t.domain for t in report.tasks} == {f"agentdojo-{s}" for s in agentdojo.SUITES}
    for task in report.tasks:
        world = ObjectWorld(agentdojo.load_domain(task.id))
        for g in task.gold_path:
            assert world.call(g.tool, g.arguments).ok
        verdict = judge_task(task, _gold(task), world)
        assert verdict["success"], task.id
        assert verdict["info"]["replayed"] is False


def test_a_wrong_answer_or_a_missing_call_fails_agentdojos_utility():
    tasks = {t.id: t for t in export_tasks("agentdojo", subsets=["banking"]).tasks}
    answer_task = tasks[
        "banking.user_task_1"
    ]  # "What's my total spending in March 2022?": judged on the answer
    assert judge_task(answer_task, _gold(answer_task, final="I do not know."))["success"] is False
    write_task = tasks["banking.user_task_0"]  # pay a bill: judged on the environment
    calls = [(g.tool, g.arguments) for g in write_task.gold_path][:-1]
    verdict = judge_task(write_task, Transcript(turns=[[calls]], calls=calls, final_text=""))
    assert verdict["success"] is False and verdict["info"]["replayed"] is True


def test_tools_schemas_results_and_changes():
    world = ObjectWorld(agentdojo.load_domain("banking.user_task_0"))
    tools = {t.name: t for t in world.tools}
    assert tools["get_balance"].effect == "read" and tools["send_money"].effect == "write"
    assert tools["send_money"].input_schema["required"] == ["recipient", "amount", "subject", "date"]
    before = world.snapshot()
    balance = world.call("get_balance", {})
    assert balance.ok and balance.changes == [] and float(balance.result) > 0
    sent = world.call(
        "send_money",
        {"recipient": "GB29NWBK60161331926819", "amount": 10.0, "subject": "x", "date": "2022-04-01"},
    )
    assert sent.ok and any(c.table == "bank_account" and c.key == "transactions" for c in sent.changes)
    assert world.changes_since(before) == sent.changes
    # Arguments are checked by AgentDojo's runtime with the function's pydantic model, which coerces as AgentDojo does.
    missing = world.call("send_money", {"recipient": "x"})
    assert not missing.ok and missing.error["message"].startswith("ValidationError") and missing.changes == []
    coerced = world.call(
        "send_money",
        {"recipient": "GB29NWBK60161331926819", "amount": "10", "subject": "x", "date": "2022-04-01"},
    )
    assert coerced.ok and {"op": "insert", "after": 10.0}.items() <= vars(coerced.changes[0]).items()
    assert world.call("send_money", {"recipient": "x" * 20_000}).error["code"] == "invalid_arguments"


def test_names_are_checked():
    for bad in ("banking", "banking.user_task_999", "casino.user_task_0", "banking.injection_task_0"):
        with pytest.raises(BadInputError):
            agentdojo.load_domain(bad)
