"""Tools an ecosystem version renamed, still recognised (D233): a write said as its description says it,
a version mark that is no word, a renamed lookup argument's siblings asked by the record's name, and a
write no stored skill makes planned from the catalog with its parent record's key fed by a stored lookup."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.library import Skill
from toolshift.steward.routes import lookup_alternatives
from toolshift.steward.supply import Supply, said_of, trim, unsaid

from .catalogs import string_tool
from .conversation import converse

BEN = Catalog(3, {t.name: t for t in [
    string_tool("ben_get_life_event", ["life_event_id"], "read", ["life_event_id"]),
    string_tool("ben_sign_off_life_event", ["life_event_id"], "write", ["life_event_id"],
                "Approve a reported life event from the last 60 days, opening a 30-day enrollment window."),
    string_tool("ben_create_life_event", ["member_id", "event_type"], "write", ["member_id", "event_type"],
                "Create a life_event; its life_event_id is assigned and the new row returned."),
    string_tool("ben_give_notice", ["life_event_id"], "write", ["life_event_id"],
                "Record the member's notice of a life event."),
]})  # fmt: skip


def test_a_renamed_write_is_said_as_its_description_says_it_and_a_version_mark_is_no_word():
    said = said_of("You want to approve life event LE-0146.")
    assert unsaid("ben_sign_off_life_event", said) == 0.5  # by its name alone: "sign off" unsaid
    assert unsaid("ben_sign_off_life_event", said, BEN) == 0.0  # "Approve a reported life event …"
    assert unsaid("ben_create_life_event", said, BEN) > 0
    assert unsaid("lims_dispose_sample_v2", said_of("dispose the sample")) == 0.0
    # the description's verb as written: "life event records" names records, not the verb "record"
    assert unsaid("ben_give_notice", said_of("the life event notice records"), BEN) == 0.5
    assert unsaid("ben_give_notice", said_of("record a notice for the life event"), BEN) == 0.0


def test_the_plan_for_a_renamed_write_is_chosen_over_another_write_of_the_same_record():
    get = {"tool": "ben_get_life_event", "args": {"life_event_id": {"fact": "life event number"}}}
    sign = Skill("plan-sign-off", "planning", "ben", "approve a life event", {
        "facts": ["life event number"], "requests": ["approve a life event"],
        "steps": [get, {"tool": "ben_sign_off_life_event", "args": {"life_event_id": {"fact": "life event number"}}}],
    }, ("ben_get_life_event", "ben_sign_off_life_event"))  # fmt: skip
    create = Skill("plan-create", "planning", "ben", "a life event", {
        "facts": ["member number", "event type"], "requests": ["a life event"],
        "steps": [{"tool": "ben_create_life_event", "args": {"member_id": {"fact": "member number"},
                                                             "event_type": {"fact": "event type"}}}],
    }, ("ben_create_life_event",))  # fmt: skip
    view = Supply([create, sign], BEN).episode("x").choose("Hi, I need to approve a life event LE-0146")
    assert view.plan is not None and view.plan.id.startswith("plan-sign-off")


def test_the_later_calls_of_a_start_set_commit_write_are_never_trimmed_alone():
    cat = Catalog(3, {t.name: t for t in [
        string_tool("ap_start_register_vendor_invoice", ["invoice_number"], "write", ["invoice_number"],
                    "Step 1 of 3 to create a vendor_invoice; opens a draft with: invoice_number."),
        string_tool("ap_set_register_vendor_invoice", ["draft_id", "po_number"], "write", ["draft_id"],
                    "Step 2 of 3 (ap_start_register_vendor_invoice first): set po_number on the draft."),
        string_tool("ap_commit_register_vendor_invoice", ["draft_id"], "write", ["draft_id"],
                    "Step 3 of 3: carry out the draft opened by ap_start_register_vendor_invoice."),
    ]})  # fmt: skip
    draft = {"step": 0, "path": ["draft_id"]}
    plan = Skill("plan-register", "planning", "ap", "register a vendor invoice", {
        "facts": ["invoice number"], "requests": ["register a vendor invoice"], "steps": [
            {"tool": "ap_start_register_vendor_invoice", "args": {"invoice_number": {"fact": "invoice number"}}},
            {"tool": "ap_set_register_vendor_invoice", "args": {"draft_id": draft}},
            {"tool": "ap_commit_register_vendor_invoice", "args": {"draft_id": draft}}],
    }, tuple(cat.tools))  # fmt: skip
    # the start is said better by its description ("… to create a vendor_invoice") than set and commit
    said = said_of("you also want to have a new vendor invoice recorded")
    start, then = (unsaid(f"ap_{op}_register_vendor_invoice", said, cat) for op in ("start", "set"))
    assert start < then
    assert trim(plan, said, Supply([plan], cat)) is plan


def test_a_renamed_lookup_argument_asks_its_siblings_by_the_records_name_in_merged_tools_too():
    fields = {"unit_no": {"type": "string"}, "vin": {"type": "string"}, "limit": {"type": "integer"}}
    search = CatalogTool("fleet_search_vehicles", "fleet", "search vehicles",
                         {"type": "object", "properties": fields}, "read")  # fmt: skip
    step = {"tool": search.name, "args": {"unit_no": {"fact": "vehicle unit number"}}}
    assert lookup_alternatives(step, "vehicle unit number", search) == [("vehicle vin", "vin")]
    merged = CatalogTool("fleet_search_vehicles_then_search_drivers_v4", "fleet", "Does in one call: …", {
        "type": "object", "properties": {"step1": {"type": "object", "properties": fields},
                                         "step2": {"type": "object", "properties": {"email": {"type": "string"}}}},
    }, "read")  # fmt: skip
    step = {"tool": merged.name, "args": {"step1.unit_no": {"fact": "vehicle unit number"},
                                          "step2.email": {"fact": "driver email"}}}  # fmt: skip
    assert lookup_alternatives(step, "vehicle unit number", merged) == [("vehicle vin", "step1.vin")]


def test_a_create_no_skill_makes_is_planned_from_the_catalog_its_parent_key_fed_by_a_stored_lookup():
    """The library only approves equipment requests; the request adds one, and the create tool's key
    was renamed (`hire_ref_value`) while the stored lookup feeds `hire_id`."""
    onb = Catalog(3, {t.name: t for t in [
        string_tool("onb_search_new_hires", ["name"], "read", []),
        string_tool("onb_enumerate_new_hire_equipment_requests", ["hire_ref"], "read", ["hire_ref"]),
        string_tool("onb_authorize_equipment_request", ["request_id", "approver"], "write",
                    ["request_id", "approver"], "Approve a hardware request for a new hire."),
        string_tool("onb_create_equipment_request", ["hire_ref_value", "item"], "write",
                    ["hire_ref_value", "item"], "Create a equipment_request; its request_id is assigned."),
    ]})  # fmt: skip
    onb.tools["onb_create_equipment_request"].input_schema["properties"]["hire_ref_value"]["description"] = (
        "(a new_hire key)"
    )
    hire = {"step": 0, "path": ["items", "*", "hire_id"], "where": {"name": "new hire name"}}
    approve = Skill("plan-approve", "planning", "onb", "approve an equipment request", {
        "facts": ["new hire name", "approver"], "requests": ["approve an equipment request"], "steps": [
            {"tool": "onb_search_new_hires", "args": {"name": {"fact": "new hire name"}}},
            {"tool": "onb_enumerate_new_hire_equipment_requests", "args": {"hire_ref": hire}},
            {"tool": "onb_authorize_equipment_request", "args": {
                "request_id": {"step": 1, "path": ["items", "*", "request_id"], "where": {}},
                "approver": {"fact": "approver"}}}],
    }, ("onb_search_new_hires", "onb_enumerate_new_hire_equipment_requests", "onb_authorize_equipment_request"))  # fmt: skip

    def answer(name: str, args: dict) -> dict:
        if name == "onb_search_new_hires":
            return {"items": [{"hire_id": "NH-0007", "name": "Rosa Bauer"}], "total": 1}
        return {"request_id": "EQ-0100", "hire_id": "NH-0007", "item": "headset"}

    calls = converse(
        Supply([approve], onb), "Could you add a new equipment request to the system for me?",
        "You want to have a new equipment request recorded for the new hire with name Rosa Bauer (item: headset).",
        {"new hire name": "Rosa Bauer", "item": "headset"}, answer,
    )  # fmt: skip
    assert calls == [
        ("onb_search_new_hires", {"name": "Rosa Bauer"}),
        ("onb_create_equipment_request", {"hire_ref_value": "NH-0007", "item": "headset"}),
        ("end_conversation", {}),
    ]
