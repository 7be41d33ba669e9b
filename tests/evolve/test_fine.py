"""The fine moves: each changes only what the user says, and when, so the child keeps its parent's ground
truth and still verifies on a fresh world; each is taken back exactly by its inverse through the lineage."""

from __future__ import annotations

import asyncio
import random

import pytest

from toolshift.agents.users import ScriptedUser
from toolshift.evolve.edits import EditError, apply_edit
from toolshift.evolve.fine import FINE_EASIER, FINE_HARDER, FINE_INVERSE_OF, targets
from toolshift.evolve.render import revise, score_task
from toolshift.evolve.seeds import builtin_world_tasks
from toolshift.evolve.store import EvolveConfig
from toolshift.evolve.structural import EASIER, HARDER, INVERSE_OF, Lineage, StructuralProposer
from toolshift.evolve.verify import verify

from .builders import spec_of

FINE = StructuralProposer("fine")
FORWARD = ("ask_for_target", "add_late_distractor", "add_related_fact", "state_intent", "state_lookup_value")


@pytest.fixture(scope="module")
def seeds():
    return {t.id: t for t in builtin_world_tasks()}


def _child(op, task, seed=0):
    spec = spec_of(task)
    parent = verify(task.id, task.domain, spec).task
    made = getattr(FINE, op)(FINE.scene(task.domain), parent, spec, Lineage(), random.Random(seed))
    assert made is not None, f"{op} does not apply to {task.id}"
    edit, _ = made
    return parent, spec, apply_edit(spec, edit), edit


def _says(user: ScriptedUser, agent_text: str) -> str:
    return asyncio.run(user.respond(agent_text)).text


@pytest.mark.parametrize("op", FORWARD)
def test_a_fine_move_keeps_the_ground_truth_and_verifies_and_reads_as_people_write(seeds, op):
    applied = 0
    for task in seeds.values():
        spec = spec_of(task)
        parent = verify(task.id, task.domain, spec).task
        made = getattr(FINE, op)(FINE.scene(task.domain), parent, spec, Lineage(), random.Random(0))
        if made is None:
            continue
        applied += 1
        child, _ = revise(apply_edit(spec, made[0]))
        assert child.ground_truth_calls == spec.ground_truth_calls
        v = verify("child", task.domain, child)  # executed on a fresh world
        assert v.task.expected_changes == parent.expected_changes
        assert child != spec
        assert score_task(v.task).ok, (task.id, score_task(v.task).reason())
    assert applied >= 1


def test_ask_for_target_gives_the_identifier_only_when_it_is_asked_for(seeds):
    _, spec, child, _ = _child("ask_for_target", seeds["demo-cancel"])
    assert "APT-00003" in spec.instruction.intent
    assert "APT-00003" not in child.instruction.intent + child.public_request
    assert child.instruction.intent == "Cancel my appointment."
    assert child.instruction.facts["appointment id"] == "APT-00003"
    asked = ScriptedUser(child.public_request, child.instruction)
    assert "APT-00003" in _says(asked, "What is your appointment id?")
    other = ScriptedUser(child.public_request, child.instruction)
    # the restated request no longer names it
    assert "APT-00003" not in _says(other, "What is your doctor id?")
    before = ScriptedUser(spec.public_request, spec.instruction)
    assert "APT-00003" in _says(before, "What is your doctor id?")


def test_a_late_distractor_comes_after_the_record_meant_and_never_in_the_opening_line(seeds):
    _, spec, child, edit = _child("add_late_distractor", seeds["demo-invoice"])
    other = next(iter(edit.facts_added.values()))
    intent = child.instruction.intent
    assert other != "INV-00004" and intent.index("INV-00004") < intent.index(other)
    assert other not in child.public_request and child.public_request == spec.public_request
    world = FINE.scene("clinic").world_after([])
    try:
        assert world.runtime.get("invoice", other) is not None  # a real record of the same kind
    finally:
        world.close()


def test_a_related_fact_is_true_of_the_record_and_unused_by_the_path(seeds):
    task = seeds["demo-cancel"]
    _, spec, child, edit = _child("add_related_fact", task)
    ((name, value),) = edit.facts_added.items()
    assert name.endswith(" id") and child.instruction.intent == spec.instruction.intent
    assert all(value not in map(str, c.arguments.values()) for c in child.ground_truth_calls)
    row = task.gold_path[0].result  # get_appointment's row
    assert value in row.values()
    user = ScriptedUser(child.public_request, child.instruction)
    assert value in _says(user, f"What is your {name}?")


def test_state_intent_puts_the_change_in_the_opening_line(seeds):
    _, spec, child, _ = _child("state_intent", seeds["demo-cancel-shipment"])
    opening = child.public_request
    assert opening.startswith(spec.public_request)
    assert "I want to cancel shipment SHP-000001 and return its pallets to zone Z-002." in opening
    scene = FINE.scene("freight_depot")
    assert [t[2] for t in targets(scene, child)] == ["SHP-000001"]


def test_state_lookup_value_states_the_name_a_search_needs(seeds):
    _, spec, child, _ = _child("state_lookup_value", seeds["demo-email"])
    assert child.public_request == spec.public_request + " My full name is Ana Abbott."
    assert child.ground_truth_calls[0].arguments == {"full_name": "Ana Abbott"}


def test_a_move_that_does_not_fit_does_not_apply(seeds):
    task = seeds["demo-cancel"]
    spec = spec_of(task)
    parent = verify(task.id, task.domain, spec).task
    scene = FINE.scene(task.domain)
    # no value only a lookup needs; nothing in the lineage to take back
    assert FINE.state_lookup_value(scene, parent, spec, Lineage(), random.Random(0)) is None
    assert FINE.name_target(scene, parent, spec, Lineage(), random.Random(0)) is None


@pytest.mark.parametrize("forward", FORWARD)
def test_each_fine_inverse_takes_back_exactly_its_moves_change(seeds, forward):
    task = seeds["demo-email" if forward == "state_lookup_value" else "demo-cancel"]
    parent, spec, child, edit = _child(forward, task)
    inverse = FINE_INVERSE_OF[forward]
    assert INVERSE_OF[inverse] == forward and INVERSE_OF[forward] == inverse
    child_task = verify("child", parent.domain, child).task
    made = getattr(FINE, inverse)(
        FINE.scene(task.domain), child_task, child, Lineage([(forward, edit)]), random.Random(0)
    )
    assert made is not None
    assert apply_edit(child, made[0]) == spec


def test_fine_moves_are_tried_first_and_coarse_ones_stay_as_they_were(seeds):
    task = seeds["demo-cancel"]
    spec = spec_of(task)
    parent = verify(task.id, task.domain, spec).task
    coarse = StructuralProposer()
    for seed in range(6):
        assert FINE.propose(parent, spec, 1.0, Lineage(), random.Random(seed)).operator in FINE_HARDER
        assert FINE.propose(parent, spec, 0.0, Lineage(), random.Random(seed)).operator in FINE_EASIER
        assert coarse.propose(parent, spec, 1.0, Lineage(), random.Random(seed)).operator in HARDER
    # when no fine move fits, the coarse ones are tried after every fine one
    stated = apply_edit(spec, _child("state_intent", task)[3])
    child_task = verify("c", task.domain, stated).task
    with pytest.raises(EditError) as got:
        FINE.propose(child_task, stated, 0.0, Lineage(), random.Random(0))
    tried = [part.split(":")[0].strip() for part in str(got.value).split("(", 1)[1].split(";")]
    assert set(tried[: len(FINE_EASIER)]) == set(FINE_EASIER)
    assert set(tried[len(FINE_EASIER) :]) <= set(EASIER) and tried[len(FINE_EASIER) :]


def test_moves_are_part_of_a_runs_configuration_and_an_older_one_reads_as_coarse():
    assert EvolveConfig().moves == "coarse"
    assert EvolveConfig.model_validate({"seed": 1}).moves == "coarse"
    assert EvolveConfig(moves="fine") != EvolveConfig()
    with pytest.raises(ValueError):
        EvolveConfig(moves="medium")
    with pytest.raises(ValueError):
        StructuralProposer("medium")
