"""Multi-record requests (D191): "… and every other <record> of the same <parent> whose <field> is <value>"
makes the plan's write again on the parent's other records, found by the catalog's lookup of them."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.library import Skill
from toolshift.steward.repeat import Repeat, key_argument, parse_repeat
from toolshift.steward.supply import Supply

from .conversation import converse


def _tool(name: str, props: dict, effect: str, required: list[str], description: str = "") -> CatalogTool:
    schema = {"type": "object", "properties": props, "required": required}
    return CatalogTool(name, "lims", description or name.replace("_", " "), schema, effect)


CATALOG = Catalog(1, {t.name: t for t in [
    _tool("lims_search_samples", {"barcode": {"type": "string"}}, "read", []),
    _tool("lims_quarantine_sample", {"sample_id": {}, "reason": {}}, "write", ["sample_id", "reason"]),
    _tool("lims_list_batch_samples", {"batch_id": {}, "offset": {"type": "integer"}}, "read", ["batch_id"],
          "Samples of a batch. Lists the samples whose batch_id is the given batch_id."),
    _tool("lims_list_batch_shipments", {"batch_id": {}}, "read", ["batch_id"]),
]})  # fmt: skip
PLAN = Skill("plan-quarantine", "planning", "lims", "quarantine a sample", {
    "facts": ["reason", "sample barcode"], "requests": ["quarantine a sample"],
    "steps": [{"tool": "lims_search_samples", "args": {"barcode": {"fact": "sample barcode"}}},
              {"tool": "lims_quarantine_sample", "args": {
                  "sample_id": {"step": 0, "path": ["items", "*", "sample_id"], "where": {"barcode": "sample barcode"}},
                  "reason": {"fact": "reason"}}}],
}, ("lims_search_samples", "lims_quarantine_sample"))  # fmt: skip
SAMPLES = {
    "SMP-1": {"batch_id": "B-7", "barcode": "BC-1", "status": "available"},
    "SMP-2": {"batch_id": "B-7", "barcode": "BC-2", "status": "available"},
    "SMP-3": {"batch_id": "B-7", "barcode": "BC-3", "status": "Available"},
    "SMP-4": {"batch_id": "B-7", "barcode": "BC-4", "status": "disposed"},
    "SMP-5": {"batch_id": "B-8", "barcode": "BC-5", "status": "available"},
}


def _world():
    samples = {k: dict(v) for k, v in SAMPLES.items()}

    def answer(name: str, args: dict) -> dict:
        if name == "lims_search_samples":
            return {
                "items": [
                    {"sample_id": k, **v} for k, v in samples.items() if v["barcode"] == args["barcode"]
                ]
            }
        if name == "lims_quarantine_sample":
            samples[args["sample_id"]]["status"] = "quarantined"
            return {"sample_id": args["sample_id"], "status": "quarantined"}
        if name == "lims_list_batch_samples":
            return {
                "data": {
                    "items": [
                        {"sample_id": k, **v} for k, v in samples.items() if v["batch_id"] == args["batch_id"]
                    ]
                }
            }
        return {"code": "not_found", "message": "no such tool"}

    return answer


def test_the_write_is_made_again_on_the_parents_other_records_whose_field_holds_the_value():
    intent = ("You want to quarantine sample BC-1 and every other sample of the same batch whose status is "
              "available (3 in all) (reason: contaminated).")  # fmt: skip
    facts = {"sample barcode": "BC-1", "reason": "contaminated", "sample status": "available"}
    calls = converse(Supply([PLAN], CATALOG), "I have several samples that need the same change.", intent,
                     facts, _world())  # fmt: skip
    assert calls == [
        ("lims_search_samples", {"barcode": "BC-1"}),
        ("lims_quarantine_sample", {"sample_id": "SMP-1", "reason": "contaminated"}),
        ("lims_list_batch_samples", {"batch_id": "B-7"}),  # the lookup that says it lists by batch_id
        ("lims_quarantine_sample", {"sample_id": "SMP-2", "reason": "contaminated"}),
        ("lims_quarantine_sample", {"sample_id": "SMP-3", "reason": "contaminated"}),
        ("end_conversation", {}),
    ]  # neither the disposed sample, nor one of another batch, nor the first one again


def test_a_single_record_request_lists_nothing():
    calls = converse(Supply([PLAN], CATALOG), "Quarantine a sample, please.",
                     "You want to quarantine sample BC-1 (reason: contaminated).",
                     {"sample barcode": "BC-1", "reason": "contaminated"}, _world())  # fmt: skip
    assert [n for n, _ in calls] == ["lims_search_samples", "lims_quarantine_sample", "end_conversation"]


def test_the_request_parsed_and_the_record_key_told_from_a_key_the_write_sets():
    rep = parse_repeat("reassign work shift SH-1 and every other work shift of the same worker whose status "
                       "is scheduled (3 in all) (worker: the worker with email a@b.c)")  # fmt: skip
    assert rep == Repeat("work shift", "worker", "status", "scheduled")
    assert parse_repeat("reassign work shift SH-1 (worker: the worker with email a@b.c)") is None
    step = {"tool": "tna_reassign_work_shift", "args": {
        "shift_id": {"fact": "work shift number"},
        "worker_id": {"step": 1, "path": ["items", "*", "worker_id"], "where": {"email": "worker email"}}}}  # fmt: skip
    made = {"shift_id": "SH-1", "worker_id": "WK-2"}
    assert key_argument(step, made, rep) == ("shift_id", "shift_id")  # never the worker it assigns
    renamed = {
        "tool": "evt_cancel_registration",
        "args": {"registration_ref": {"fact": "registration number"}},
    }
    assert key_argument(renamed, {"registration_ref": "R-1"}, Repeat("registration", "attendee", "status", "x")) == (
        "registration_ref", "registration_id")  # fmt: skip


def test_the_filter_the_request_picks_records_by_is_never_set_on_a_write():
    """The user's "sample status: available" picks the other samples; a write with a `status` field the plan
    binds to the user's "status" leaves it alone."""
    catalog = Catalog(1, {**CATALOG.tools, "lims_quarantine_sample": _tool(
        "lims_quarantine_sample", {"sample_id": {}, "reason": {}, "status": {"type": "string"}}, "write",
        ["sample_id", "reason"])})  # fmt: skip
    steps = [PLAN.body["steps"][0], {**PLAN.body["steps"][1], "args": {
        **PLAN.body["steps"][1]["args"], "status": {"fact": "status"}}}]  # fmt: skip
    plan = Skill("plan-q", "planning", "lims", "quarantine a sample",
                 {**PLAN.body, "steps": steps, "facts": [*PLAN.body["facts"], "status"]}, PLAN.tools)  # fmt: skip
    intent = ("You want to quarantine sample BC-1 and every other sample of the same batch whose status is "
              "available (3 in all) (reason: contaminated).")  # fmt: skip
    facts = {"sample barcode": "BC-1", "reason": "contaminated", "sample status": "available"}
    calls = converse(
        Supply([plan], catalog), "Several samples need the same change.", intent, facts, _world()
    )
    writes = [a for n, a in calls if n == "lims_quarantine_sample"]
    assert len(writes) == 3 and all("status" not in a for a in writes)
