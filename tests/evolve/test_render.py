"""Evolved tasks read as people write: the writer fixes the issue's examples, the rubric scores seed and
child alike, and a child whose text still fails is rejected at stage `rubric` with the failed rules kept."""

from __future__ import annotations

import random

import pytest

from toolshift.agents.tasks import task_from_path
from toolshift.evolve.archive import Mutation
from toolshift.evolve.engine import Engine
from toolshift.evolve.program import render_program
from toolshift.evolve.render import (
    RULES,
    arithmetic_facts,
    bare_errands,
    revise,
    score_task,
    with_articles,
    without_asides,
)
from toolshift.evolve.solver import SolverConfig
from toolshift.evolve.store import EvolveConfig, RunStore
from toolshift.evolve.structural import StructuralProposer
from toolshift.evolve.verify import verify
from toolshift.models import UserInstruction

from .builders import spec_of


def test_the_writer_gives_errands_their_articles_and_leaves_named_records_alone():
    assert (
        with_articles("Hi, I need to change salary — can you help?")
        == "Hi, I need to change a salary — can you help?"
    )
    assert with_articles("Hi, I need to approve price change — can you help?") == (
        "Hi, I need to approve a price change — can you help?"
    )
    assert (
        with_articles("Can you help me release order hold, please?")
        == "Can you help me release an order hold, please?"
    )
    for fine in ("Hello, I'd like help to cancel a transfer.", "I'd like to pay my library fines.",
                 "You want to cancel reservation EHGLP3.", "Please delete an employee for me.",
                 "Could you please check it for me?", "Hi, I need to mark no show — can you help?"):  # fmt: skip
        assert bare_errands(fine) == [] and with_articles(fine) == fine


def test_asides_become_sentences_and_arithmetic_is_not_a_fact():
    assert without_asides(
        "Can you help me, please? (I also asked about order 10000072 last week, but that one is fine.)"
    ) == ("Can you help me, please? I also asked about order 10000072 last week, but that one is fine.")
    assert without_asides("the lamp to a less bright one (prefer AC adapter). If asked") == (
        "the lamp to a less bright one. Prefer AC adapter. If asked"
    )
    facts = {"new annual salary": "92728.35 minus 5.00", "due": "3 days after 2026-01-01", "half": "half of 10.00",
             "salary": "92723.35", "date": "2026-06-03", "lot": "LOT-0006", "flight": "HAT002/2024-05-19"}  # fmt: skip
    assert arithmetic_facts(facts) == ["new annual salary", "due", "half"]


def _salary_task(request: str, salary: str):
    return task_from_path(
        "clinic", "t-email", request,
        UserInstruction(intent="You want to have patient PAT-00001 changed: its email set to ana@new.example.",
                        facts={"patient number": "PAT-00001", "new email": "ana@new.example", "new annual salary": salary}),
        [("update_patient", {"patient_id": "PAT-00001", "email": "ana@new.example"})],
    )  # fmt: skip


def test_the_rubric_names_each_failed_rule_and_passes_a_task_written_as_people_write():
    good = score_task(_salary_task("Hello, can you update a patient for me?", "92723.35"))
    assert good.ok and set(good.passed) == set(RULES)
    bad = score_task(
        _salary_task("Hi, I need to change salary — can you help? (Just one.)", "92728.35 minus 5.00")
    )
    assert set(bad.failed) == {"request_articles", "no_aside", "facts_are_values"}
    assert "'change salary'" in bad.reason() and "92728.35 minus 5.00" in bad.reason()


def test_revise_fixes_what_the_writer_can_and_says_what_it_did():
    task = _salary_task("Hi, I need to change salary — can you help? (Just one.)", "92723.35")
    spec, notes = revise(spec_of(task))
    assert spec.public_request == "Hi, I need to change a salary — can you help? Just one."
    assert len(notes) == 2
    assert revise(spec)[1] == []  # nothing left to revise


def test_a_rewriter_is_kept_only_when_it_keeps_every_fact():
    task = _salary_task("Hello, can you update a patient for me?", "92723.35")
    kept, notes = revise(
        spec_of(task),
        lambda text: "Patient PAT-00001's email should become ana@new.example.",
    )
    assert "should become" in kept.instruction.intent and notes == ["intent paraphrased by the rewriter"]
    lost, notes = revise(spec_of(task), lambda text: "Change the email of patient PAT-00001 to 92723.35.")
    assert lost.instruction.intent == task.instruction.intent and "paraphrase_lost_facts" in notes[0]
    invented, notes = revise(spec_of(task), lambda text: text + " Also PAT-00002.")
    assert invented.instruction.intent == task.instruction.intent and "paraphrase_added_values" in notes[0]


def test_structural_distractors_and_follow_ons_pass_the_rubric(bench_clinic):
    proposer = StructuralProposer()
    seen = 0
    for task in bench_clinic:
        spec = spec_of(task)
        parent = verify(task.id, task.domain, spec).task
        for op in ("add_distractor", "add_follow_on"):
            made = getattr(proposer, op)(proposer.scene(task.domain), parent, spec, None, random.Random(1))
            if made is None:
                continue
            from toolshift.evolve.edits import apply_edit

            child, _ = revise(apply_edit(spec, made[0]))
            result = score_task(verify("child", task.domain, child).task)
            assert "(" not in child.public_request and "last week" not in child.public_request
            assert result.passed["no_aside"] and result.passed["request_articles"], result.reason()
            seen += 1
    assert seen >= 4


@pytest.fixture
def engine(tmp_path):
    seed = _salary_task("Hi, I need to change salary — can you help?", "92723.35")
    store = RunStore(tmp_path / "run")
    store.create(
        EvolveConfig(seed=0, generations=1, solver=SolverConfig(model="noisy-oracle:1.0", attempts=2)), [seed]
    )
    e = Engine(store, store.config())
    e.roots = {seed.id: seed}
    return e, seed


def test_a_child_failing_the_rubric_is_rejected_with_its_reasons_and_a_seed_is_scored_as_it_is(engine):
    e, seed = engine
    record = e.seed_record(seed, {})
    assert record.evaluated and record.rubric_failed == ["request_articles"]
    spec = spec_of(seed)
    child = spec.model_copy(update={"instruction": spec.instruction.model_copy(
        update={"facts": {**spec.instruction.facts, "new annual salary": "92728.35 minus 5.00"}})})  # fmt: skip
    rejected = e.evaluate(
        f"{seed.id}.s0000", seed.id, seed.domain, render_program(seed.domain, child),
        Mutation(proposer="structural", kind="structural"), parent=seed.id, generation=1, step=0,
        proposer_cost=None, known={},
    )  # fmt: skip
    assert rejected.status == "rejected" and rejected.stage == "rubric"
    assert rejected.rubric_failed == ["request_articles", "facts_are_values"]
    assert "92728.35 minus 5.00" in rejected.reason and "'change salary'" in rejected.reason
    fixed, _ = revise(child.model_copy(update={"instruction": spec.instruction}))
    ok = e.evaluate(
        f"{seed.id}.s0001", seed.id, seed.domain, render_program(seed.domain, fixed),
        Mutation(proposer="structural", kind="structural"), parent=seed.id, generation=1, step=1,
        proposer_cost=None, known={},
    )  # fmt: skip
    assert ok.evaluated and ok.rubric_failed == [] and ok.completion == 1.0


def test_two_values_side_by_side_are_no_doubled_word_and_a_doubled_word_still_is():
    from toolshift.evolve.seeds import builtin_world_tasks

    inspection = next(t for t in builtin_world_tasks() if t.id == "demo-inspection")
    assert "PAL-000002 passed" in inspection.instruction.intent  # two facts in a row
    assert score_task(inspection).passed["plain_words"]
    doubled = inspection.model_copy(
        update={
            "instruction": inspection.instruction.model_copy(
                update={"intent": "Record that that pallet PAL-000002 passed."}
            )
        }
    )
    assert not score_task(doubled).passed["plain_words"]
