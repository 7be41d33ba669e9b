"""The structural proposer: each operator writes new ground-truth calls that verify on the world, and its
inverse takes exactly that change back."""

from __future__ import annotations

import random

import pytest

from toolshift.evolve.edits import apply_edit
from toolshift.evolve.render import arithmetic_facts
from toolshift.evolve.structural import EASIER, HARDER, INVERSE_OF, Lineage, StructuralProposer
from toolshift.evolve.verify import verify

from .builders import spec_of

PROPOSER = StructuralProposer()


def _apply(op, task, spec, lineage=None, seed=0):
    made = getattr(PROPOSER, op)(
        PROPOSER.scene(task.domain), task, spec, lineage or Lineage(), random.Random(seed)
    )
    if made is None:
        return None
    edit, description = made
    return apply_edit(spec, edit), edit, description


def _first(op, tasks, seeds=range(4)):
    for task in tasks:
        spec = spec_of(task)
        parent = verify(task.id, task.domain, spec).task
        for seed in seeds:
            got = _apply(op, parent, spec, seed=seed)
            if got is not None:
                return parent, spec, *got
    pytest.fail(f"{op} applied to none of the tasks")


@pytest.fixture(scope="module")
def tasks(bench_clinic):
    from toolshift.evolve.seeds import builtin_world_tasks

    return [
        *builtin_world_tasks(),
        *bench_clinic,
    ]  # clinic, library, freight_depot: each operator applies somewhere


def test_hide_identifier_puts_a_lookup_before_the_value(demo):
    parent, _spec, child, edit, _ = _first("hide_identifier", demo)
    v = verify("child", parent.domain, child)
    assert len(v.task.gold_path) > len(parent.gold_path)
    hidden = next(iter(edit.facts_removed.values()))
    assert hidden not in child.instruction.facts.values()
    assert hidden not in child.public_request + child.instruction.intent
    # the value the write needs is now found in a lookup's result, not said by the user
    assert [c.model_dump() for c in v.task.expected_changes] == [
        c.model_dump() for c in parent.expected_changes
    ]


def test_add_follow_on_adds_a_second_change(tasks):
    parent, _, child, _, _ = _first("add_follow_on", tasks)
    v = verify("child", parent.domain, child)
    assert len(v.task.expected_changes) > len(parent.expected_changes)
    assert "Then you also want to" in child.instruction.intent


def test_add_filter_applies_the_change_to_matching_siblings(tasks):
    parent, _, child, _, _description = _first("add_filter", tasks, seeds=range(12))
    v = verify("child", parent.domain, child)
    rows = {(c.table, c.key) for c in v.task.expected_changes}
    assert len(rows) > len({(c.table, c.key) for c in parent.expected_changes})
    assert "every other" in child.instruction.intent and "all of them" in child.instruction.intent


def test_add_distractor_names_another_record_in_the_opening(demo):
    parent, spec, child, edit, _ = _first("add_distractor", demo)
    other = next(iter(edit.facts_added.values()))
    assert other in child.public_request and other not in spec.public_request
    assert verify("child", parent.domain, child).task.expected_changes == parent.expected_changes


@pytest.fixture(scope="module")
def sales(tmp_path_factory):
    """Benchmark-synthesised sales-pipeline tasks: updates of numbers a record already holds."""
    from toolshift.bench.build import build_domain, read_tasks

    out = tmp_path_factory.mktemp("sales")
    build_domain(out, "sales_pipeline", seed=0, per_domain=16)
    return read_tasks(out / "domains" / "sales_pipeline" / "tasks.jsonl")


def test_add_derived_value_gives_the_value_against_the_records_own_and_the_user_states_a_value(sales):
    parent, _spec, child, edit, _ = _first("add_derived_value", sales)
    (name, was), (new_name, now) = (
        next(iter(edit.facts_removed.items())),
        next(iter(edit.facts_added.items())),
    )
    assert name not in child.instruction.facts and child.instruction.facts[new_name] == now
    assert was not in child.instruction.intent and "than it is now" in child.instruction.intent
    assert arithmetic_facts(child.instruction.facts) == []  # a change is stated as a value, never as a sum
    assert now in child.instruction.intent
    v = verify("child", parent.domain, child)
    assert v.task.expected_changes == parent.expected_changes


def test_reveal_identifier_states_a_looked_up_value_and_drops_lookups(bench_clinic):
    parent, _, child, edit, _ = _first("reveal_identifier", bench_clinic)
    v = verify("child", parent.domain, child)
    assert edit.calls_removed and len(v.task.gold_path) < len(parent.gold_path)
    assert v.task.expected_changes == parent.expected_changes


@pytest.mark.parametrize("forward", sorted(set(HARDER) - {"withhold_from_request"}))
def test_each_inverse_takes_back_exactly_its_operators_change(tasks, forward, request):
    pool = request.getfixturevalue("sales") if forward == "add_derived_value" else tasks
    parent, spec, child, edit, _ = _first(forward, pool, seeds=range(12))
    inverse = next(op for op in EASIER if INVERSE_OF[op] == forward)
    child_task = verify("child", parent.domain, child).task
    back = _apply(inverse, child_task, child, Lineage([(forward, edit)]))
    assert back is not None
    assert back[0] == spec


def test_state_in_request_and_withhold_are_inverses(demo):
    parent, spec, child, edit, _ = _first("state_in_request", demo)
    assert len(child.public_request) > len(spec.public_request)
    back = _apply(
        "withhold_from_request",
        verify("c", parent.domain, child).task,
        child,
        Lineage([("state_in_request", edit)]),
    )
    assert back is not None and back[0] == spec


def test_direction_follows_the_parents_completion_rate(demo):
    task = demo[0]
    spec = spec_of(task)
    verified = verify(task.id, task.domain, spec).task
    for seed in range(6):
        easy = PROPOSER.propose(verified, spec, 1.0, Lineage(), random.Random(seed))
        assert easy.operator in HARDER
        hard = (
            PROPOSER.propose(verified, spec, 0.0, Lineage(), random.Random(seed))
            if _easier_applies(verified, spec)
            else None
        )
        assert hard is None or hard.operator in EASIER


def _easier_applies(task, spec) -> bool:
    return any(_apply(op, task, spec) is not None for op in EASIER)


def test_a_child_the_archive_holds_is_passed_over_for_the_next_operator(demo):
    from toolshift.evolve.edits import EditError
    from toolshift.evolve.program import render_program

    task = demo[0]
    spec = spec_of(task)
    parent = verify(task.id, task.domain, spec).task
    first = PROPOSER.propose(parent, spec, 1.0, Lineage(), random.Random(5))
    held = {render_program(task.domain, first.spec)}
    again = PROPOSER.propose(
        parent, spec, 1.0, Lineage(), random.Random(5),
        known=lambda child: render_program(task.domain, child) in held,
    )  # fmt: skip
    assert render_program(task.domain, again.spec) not in held
    assert again.operator in HARDER
    with pytest.raises(EditError, match="makes a program the archive holds"):
        PROPOSER.propose(parent, spec, 1.0, Lineage(), random.Random(5), known=lambda child: True)


def test_a_follow_on_may_refer_to_the_new_record_through_any_of_its_keys():
    """A new payment batch has no write keyed first by it; scheduling an invoice into it names it second."""
    from toolshift.agents.tasks import task_from_path
    from toolshift.models import UserInstruction

    args = {"batch_number": "PAYRUN-0858", "method": "check", "scheduled_date": "2026-06-03"}
    task = task_from_path(
        "accounts_payable", "new-batch", "Could you add a new payment batch for me?",
        UserInstruction(intent="Record payment batch PAYRUN-0858 (check, 2026-06-03).", facts=dict(args)),
        [("ap_create_payment_batch", args)],
    )  # fmt: skip
    parent, _spec, child, _, _ = _first("add_follow_on", [task])
    v = verify("child", parent.domain, child)
    created = parent.gold_path[0].result["batch_id"]
    follow = v.task.gold_path[-1]
    assert follow.tool != "ap_create_payment_batch" and created in follow.arguments.values()
    assert len(v.task.expected_changes) > len(parent.expected_changes)
