"""Costs from declared work (the rubric), the model scorer with its cache, and what an agent can know for a call."""

from __future__ import annotations

import pytest

from toolshift.bench.ecosystem.costs import (
    DRAFT_WORK,
    ModelScorer,
    Work,
    declared_work,
    merged_work,
    parse_score,
    rubric_score,
)
from toolshift.bench.ecosystem.knowledge import TaskKnowledge, known_from, unknown_arguments
from toolshift.bench.reference import Implementation, optimal_path
from toolshift.models import GoldCall, RowChange, Task, UserInstruction
from toolshift.world.state.registry import load_domain


@pytest.fixture(scope="module")
def payroll():
    return load_domain("payroll")


def _work(domain, name):
    return declared_work(next(t for t in domain.tools if t.name == name), domain)


def test_declared_work_follows_what_a_tool_does(payroll):
    get, search = _work(payroll, "pay_get_employee"), _work(payroll, "pay_search_employees")
    update = _work(payroll, "pay_update_employee")
    assert (get.pages, get.writes) == (0, 0) and search.pages == 1
    assert update.writes == 1 and update.write_steps == 1
    assert rubric_score(get) < rubric_score(search)
    scores = {t.name: rubric_score(declared_work(t, payroll)) for t in payroll.tools}
    assert all(1 <= s <= 10 for s in scores.values()) and len(set(scores.values())) >= 3
    assert rubric_score(DRAFT_WORK) == 1


def test_a_merge_of_several_writes_costs_more_than_its_parts_and_a_lookup_merge_less():
    read = Work(pages=1, tables=frozenset({"employee"}), fields=8)
    write = Work(tables=frozenset({"employee"}), writes=1, write_steps=1)
    other = Work(tables=frozenset({"pay_run"}), writes=1, write_steps=1)
    assert rubric_score(merged_work([read, write])) < rubric_score(read) + rubric_score(write)
    assert rubric_score(merged_work([write, other])) > rubric_score(write) + rubric_score(other)
    # so on a sequence of two writes the step criterion takes the merge and the cost criterion does not
    a = Implementation("a", ("w1",), ("a",), rubric_score(write))
    b = Implementation("b", ("w2",), ("b",), rubric_score(other))
    ab = Implementation("ab", ("w1", "w2"), ("ab",), rubric_score(merged_work([write, other])))
    step = optimal_path(["w1", "w2"], [a, b, ab], "step")
    cost = optimal_path(["w1", "w2"], [a, b, ab], "cost")
    assert step is not None and cost is not None
    assert step.implementation_ids == ("ab",) and cost.implementation_ids == ("a", "b")


def test_parse_score():
    assert parse_score("7") == 7 and parse_score("I'd say 10.") == 10
    assert parse_score("cost: 0") is None and parse_score(None) is None and parse_score("11") is None


@pytest.mark.slow
def test_the_embedded_model_scores_once_and_the_cache_answers_after(payroll, tmp_path):
    cache = tmp_path / "cost-scores.json"
    tools = [t for t in payroll.tools if t.name in ("pay_get_employee", "pay_change_salary")]
    scorer = ModelScorer("embedded", cache)
    first = [scorer.score(t, declared_work(t, payroll)) for t in tools]
    assert scorer.asked == 2 and all(1 <= s <= 10 for s in first)
    scorer.save()
    again = ModelScorer("embedded", cache)
    assert [again.score(t, declared_work(t, payroll)) for t in tools] == first
    assert again.asked == 0  # a score is a fixed property of the definition: never asked twice


def _task(facts, calls):
    return Task(
        id="t-1",
        domain="payroll",
        public_request="Please end Aisha Patel's employment.",
        instruction=UserInstruction(intent="end the employment", facts=facts),
        gold_path=[GoldCall(tool=n, arguments=a, result=r, function=n) for n, a, r in calls],
        base_functions=[n for n, _, _ in calls],
        expected_changes=[
            RowChange(table="employee", key="EMP-7", field="status", op="update", before="active", after="x")
        ],
    )


SEARCH = ("search", {"full_name": "Aisha Patel"}, {"items": [{"employee_id": "EMP-7", "salary": 91766.63}]})
END = ("terminate", {"employee_id": "EMP-7", "last_day": "2026-06-11", "notice_given": False}, {"ok": True})


def test_a_merge_is_usable_only_when_its_later_steps_need_nothing_its_earlier_steps_return():
    only_name = TaskKnowledge(
        _task({"full name": "Aisha Patel", "last day": "2026-06-11", "notice": "no"}, [SEARCH, END])
    )
    assert not only_name.block_usable(0, 2)  # terminate needs EMP-7, which only the search returns
    assert only_name.block_usable(0, 1) and only_name.block_usable(1, 2)
    knows_id = TaskKnowledge(
        _task(
            {"full name": "Aisha Patel", "employee number": "EMP-7", "last day": "2026-06-11"}, [SEARCH, END]
        )
    )
    assert knows_id.block_usable(0, 2)  # the user can say the id: one call can do both


def test_unknown_arguments_reads_values_as_they_are_meant():
    known = known_from(["11649.70", "no", {"due": "05/07/2026", "amount": {"amount": "12.50"}}])
    assert (
        unknown_arguments({"amount": 11649.7, "three_way": False, "due": "2026-07-05", "x": 12.5}, known)
        == []
    )
    assert unknown_arguments({"step2": {"employee_id": "EMP-7"}}, known) == ["step2.employee_id"]
    paging = {
        "type": "object",
        "properties": {"page_size": {"type": "integer", "description": "Rows per page (1-100)."}},
    }
    assert unknown_arguments({"page_size": 100}, known, paging) == []  # the agent's own page size
