"""A merged tool's object arguments (`step1`, `step2` of `…_then_…`) are bound field by field (D186): the
episode's values under them were stored as constants, so every later request searched the same record."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool, arg_roots
from toolshift.steward.compose import valid
from toolshift.steward.distill import Call, Trajectory, workflow
from toolshift.steward.instruments import bind_step
from toolshift.steward.library import Skill
from toolshift.steward.maintain import schema_conflicts

MERGED = "fleet_search_vehicles_then_search_drivers"
SCHEMA = {
    "type": "object",
    "properties": {
        "step1": {"type": "object", "properties": {"vin": {"type": "string"}, "limit": {"type": "integer"}}},
        "step2": {"type": "object", "properties": {"email_address": {"type": "string"}}},
    },
    "required": ["step1", "step2"],
}
RESULT = {"steps": [{"step": 1, "result": {"items": [{"vehicle_id": "VEH-9"}]}},
                    {"step": 2, "result": {"items": [{"driver_id": "DRV-7"}]}}]}  # fmt: skip


def test_an_object_arguments_fields_are_bound_to_the_users_facts_not_kept_as_constants():
    facts = {"vehicle vin": "VIN-9", "driver email": "f@x.example"}
    traj = Trajectory("e", "fleet", "assign a driver", facts, [
        Call(MERGED, {"step1": {"vin": "VIN-9", "limit": 5}, "step2": {"email_address": "f@x.example"}}, RESULT, True),
        Call("fleet_assign_driver", {"vehicle_id": "VEH-9", "driver_id": "DRV-7"}, {"ok": True}, True),
    ])  # fmt: skip
    wf = workflow(traj)
    args = wf.steps[0]["args"]
    assert args == {"step1.vin": {"fact": "vehicle vin"}, "step1.limit": {"value": 5},
                    "step2.email_address": {"fact": "driver email"}}  # fmt: skip
    assert set(wf.facts) == {"vehicle vin", "driver email"}
    assert wf.steps[1]["args"]["driver_id"]["step"] == 0  # the later write still reads the merged result
    # another user's facts fill the same object arguments
    other = {"vehicle vin": "VIN-1", "driver email": "s@x.example"}
    assert bind_step(wf.steps[0], other, [], SCHEMA) == [
        {"step1": {"vin": "VIN-1", "limit": 5}, "step2": {"email_address": "s@x.example"}}
    ]
    # the schema's required object arguments count as filled: the plan stays valid and conflict-free
    assert arg_roots(args) == {"step1", "step2"}
    cat = Catalog(1, {MERGED: CatalogTool(MERGED, "fleet", "search vehicles, then drivers", SCHEMA, "read")})
    plan = Skill("p", "planning", "fleet", "assign", {"steps": [wf.steps[0]]}, (MERGED,))
    assert valid(plan, cat) and schema_conflicts(plan, cat) == []


def test_an_object_argument_no_fact_or_result_explains_stays_one_constant():
    traj = Trajectory(
        "e", "fleet", "list", {}, [Call(MERGED, {"step1": {"limit": 5}, "step2": {}}, RESULT, True)]
    )
    assert workflow(traj).steps[0]["args"] == {"step1": {"value": {"limit": 5}}, "step2": {"value": {}}}
