"""Task quality on real builds: policy-following identifiers, natural references, no duplicate Δgold,
and reordered independent creates judged a success (D70, D71, D72)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolshift.bench.audit import TaskReader, duplicate_groups, reordered_creates, replay_order, same_delta
from toolshift.bench.build import build_domain, build_world, load_tasks, write_manifest
from toolshift.bench.instructions import action_clause, identified_phrase, role_words, row_value_text
from toolshift.bench.naturalness import rule_score
from toolshift.models import GoldCall, Task, UserInstruction
from toolshift.world.state.registry import load_domain
from toolshift.world.state.world import World

POLICY_DOMAINS = ["payroll", "learning_development", "sales_pipeline", "accounts_payable"]
REORDER_DOMAINS = ["incident_management", "lab_samples", "procurement"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("quality")
    names = POLICY_DOMAINS + REORDER_DOMAINS
    for name in names:
        build_domain(out, name, seed=0, per_domain=40)
    write_manifest(out, names, 0, 40)
    return out


def test_every_task_names_rows_by_the_identifiers_its_policy_accepts(built: Path):
    """Before: 15 of payroll's 40 tasks named the employee only by full name (the policy says work email or
    employee number), 26 had some row named or taken outside the accepted identifiers."""
    for name in POLICY_DOMAINS:
        world = build_world(built, name)
        reader = TaskReader(world)
        for task in load_tasks(built, domain=name):
            assert reader.policy_conflicts(task) == [], (task.id, task.instruction.intent)
            assert reader.routed_despite_identifier(task) == [], (task.id, task.instruction.intent)
        world.close()
    employees = [t for t in load_tasks(built, domain="payroll") if "employee" in t.instruction.intent]
    assert employees and not any("employee full name" in t.instruction.facts for t in employees)


def test_the_policy_check_finds_a_full_name_identification():
    world = World(load_domain("payroll"))
    reader = TaskReader(world)
    row = world.runtime.get("employee", "EMP-00001")
    assert row is not None
    found = world.call("pay_search_employees", {"full_name": row["full_name"]})
    assert found.ok and len(found.result["items"]) == 1
    calls = [
        GoldCall(tool="pay_search_employees", arguments={"full_name": row["full_name"]}, result=found.result),
        GoldCall(tool="pay_update_employee", arguments={"employee_id": "EMP-00001", "tax_code": "BR"}),
    ]
    task = Task(
        id="payroll-x", domain="payroll", public_request="Hi.",
        instruction=UserInstruction(intent="...", facts={"employee full name": row["full_name"]}),
        gold_path=calls, base_functions=[c.tool for c in calls], expected_changes=[],
    )  # fmt: skip
    conflicts = reader.policy_conflicts(task)
    assert conflicts and "full_name" in conflicts[0] and "work_email or employee_id" in conflicts[0]
    by_email = task.model_copy(
        update={
            "instruction": UserInstruction(intent="...", facts={"employee work email": row["work_email"]})
        }
    )
    by_email.gold_path[0] = GoldCall(
        tool="pay_search_employees",
        arguments={"work_email": row["work_email"]},
        result=world.call("pay_search_employees", {"work_email": row["work_email"]}).result,
    )
    assert reader.policy_conflicts(by_email) == []
    world.close()


def test_no_duplicate_delta_in_a_build(built: Path):
    """Before: 34 groups of tasks shared a Δgold in the 42-domain build (3 in accounts_payable), 18 across the split."""
    assert duplicate_groups(load_tasks(built)) == []


def test_duplicate_groups_see_through_renamed_keys(built: Path):
    task = next(t for t in load_tasks(built) if any(c.op == "insert" for c in t.expected_changes))
    created = {c.key for c in task.expected_changes if c.op == "insert"}
    twin_delta = [
        c.model_copy(update={"key": "RENAMED-1"} if c.key in created else {}) for c in task.expected_changes
    ]
    twin_delta = [
        c.model_copy(update={"after": "RENAMED-1"}) if c.after in created else c for c in twin_delta
    ]
    twin = task.model_copy(update={"id": task.id + "-twin", "expected_changes": twin_delta})
    assert same_delta(task, twin)
    assert [len(g) for g in duplicate_groups([task, twin])] == [2]


def test_reordered_independent_creates_succeed(built: Path):
    """Doing a task's independent creates in the other order gives the rows each other's keys: the old
    exact-identity judge failed every such task whose creates share a table; `covered_by` passes them."""
    same_table = exact_passes = passes = 0
    for name in REORDER_DOMAINS + POLICY_DOMAINS:
        world = build_world(built, name)
        for task in load_tasks(built, domain=name):
            swap = reordered_creates(task, world)
            if swap is None:
                continue
            diff = replay_order(task, world, swap.order)
            assert task.covered_by(diff), task.id
            assert task.missing_from(diff) == []
            passes += 1
            if swap.same_table:
                same_table += 1
                made = {c.identity() for c in diff}
                exact_passes += all(c.identity() in made for c in task.expected_changes)
        world.close()
    assert same_table >= 3 and exact_passes == 0 and passes >= same_table


# --- phrasing ------------------------------------------------------------------------------------------


def test_rows_are_named_the_way_a_person_names_them():
    assert identified_phrase("opportunity", "opportunity number", "OPP-000033") == "opportunity OPP-000033"
    assert identified_phrase("payment batch", "batch number", "PAYRUN-7") == "payment batch PAYRUN-7"
    assert identified_phrase("room", "room code", "R052") == "room R052"
    assert (
        identified_phrase("design change", "eco number", "ECO-1") == "the design change with eco number ECO-1"
    )
    assert identified_phrase("employee", "work email", "a@b.org") == "the employee with work email a@b.org"
    assert role_words("approver_id") == "approver" and role_words("verified_by") == "verified by"
    assert action_clause("reissue payslip", "payslip", "payslip PSL-1") == "reissue payslip PSL-1"
    assert action_clause("mark finding remediated", "finding", "finding F-1") == "mark finding F-1 remediated"
    assert action_clause("close won", "opportunity", "opportunity O-1") == "close won for opportunity O-1"
    assert row_value_text("employee_only") == "employee only" and row_value_text("a@b_c.org") == "a@b_c.org"


def test_the_issues_routed_sentence_fails_the_rubric_and_synthesised_ones_pass(built: Path):
    old = Task(
        id="x", domain="sales_pipeline", public_request="Hi.",
        instruction=UserInstruction(
            intent="You want to close won for the opportunity of the client account on the opportunity with "
            "opportunity number OPP-000024 whose opportunity number is OPP-000033."
        ),
        gold_path=[], base_functions=[], expected_changes=[],
    )  # fmt: skip
    nouns = ["opportunity", "client account", "sales quote", "sales rep", "sales activity"]
    s = rule_score(old, nouns, routed_despite_identifier=True)
    assert not s.passed["no_echo"] and not s.passed["names_by_identifier"] and s.score < 4
    scores = [rule_score(t, nouns, False).score for t in load_tasks(built, domain="sales_pipeline")]
    assert min(scores) >= 4 and sum(scores) / len(scores) > 4.5


@pytest.mark.slow
def test_a_judge_model_scores_naturalness_and_its_scores_are_cached(tmp_path: Path):
    """`bench stats --judge embedded`: the real SmolLM2 scores each intent 1–5 (or leaves it unscored);
    a second run reads the cache and never calls the model."""
    from toolshift.bench.naturalness import model_judge
    from toolshift.bench.stats import quality_stats

    build_domain(tmp_path, "payroll", seed=0, per_domain=3)
    write_manifest(tmp_path, ["payroll"], 0, 3)
    first = quality_stats(tmp_path, ("embedded", model_judge("embedded")))
    assert len(first.judge_scores) + first.judge_unscored == 3
    assert all(1 <= s <= 5 for s in first.judge_scores)
    assert (tmp_path / "naturalness.json").is_file()

    def never(text: str) -> int:
        raise AssertionError("the cache should have answered")

    again = quality_stats(tmp_path, ("embedded", never))
    assert again.judge_scores == first.judge_scores and again.rule_scores == first.rule_scores
