"""Calling tools: validation, transactions and rollback, structured errors, catalog changes."""

from __future__ import annotations

import json

from toolshift.world import Tool, ToolError, World


def test_get_list_search(clinic):
    r = clinic.call("get_patient", {"patient_id": "PAT-00001"})
    assert r.ok and r.result["patient_id"] == "PAT-00001" and r.changes == []
    page = clinic.call("list_appointments", {"doctor_id": "DOC-001", "limit": 3, "offset": 0}).result
    assert len(page["items"]) <= 3 and all(a["doctor_id"] == "DOC-001" for a in page["items"])
    assert page["total"] == clinic.runtime.count("appointment", doctor_id="DOC-001")
    name = r.result["full_name"].split()[1].upper()
    found = clinic.call("search_patients", {"full_name": name, "limit": 100}).result
    assert "PAT-00001" in {p["patient_id"] for p in found["items"]}
    json.dumps(found)


def test_search_needs_a_filter(clinic):
    r = clinic.call("search_patients", {})
    assert not r.ok and r.error["code"] == "invalid_arguments" and "full_name" in r.error["message"]


def test_search_escapes_like_wildcards(clinic):
    assert clinic.call("search_patients", {"full_name": "%"}).result["total"] == 0


def test_schema_errors_name_the_field(clinic):
    r = clinic.call("get_patient", {"patient_id": 7})
    assert r.error["code"] == "invalid_arguments" and "'patient_id'" in r.error["message"]
    r = clinic.call("create_patient", {"full_name": "A B"})
    assert "required" in r.error["message"]
    r = clinic.call(
        "book_appointment", {"patient_id": "PAT-00001", "doctor_id": "DOC-001", "starts_at": "tomorrow"}
    )
    assert "'starts_at'" in r.error["message"]
    r = clinic.call("update_patient", {"patient_id": "PAT-00001", "date_of_birth": "1999-13-45"})
    assert r.error["code"] == "invalid_arguments"
    r = clinic.call("get_patient", {"patient_id": "PAT-00001", "extra": 1})
    assert "extra" in r.error["message"]


def test_unknown_tool_suggests_close_names(clinic):
    r = clinic.call("get_pateint", {"patient_id": "PAT-00001"})
    assert r.error["code"] == "unknown_tool" and "get_patient" in r.error["message"]


def test_create_update_delete_report_changes(clinic):
    r = clinic.call(
        "create_patient",
        {
            "full_name": "Kim Lee",
            "email": "kim@x.example",
            "phone": "1",
            "date_of_birth": "1990-01-01",
            "doctor_id": "DOC-002",
        },
    )
    assert r.ok and r.result["patient_id"] == "PAT-00301" and r.result["status"] == "active"
    assert {c.op for c in r.changes} == {"insert"} and len(r.changes) == 8
    u = clinic.call("update_patient", {"patient_id": "PAT-00301", "phone": "2"})
    assert [(c.field, c.before, c.after) for c in u.changes] == [("phone", "1", "2")]
    d = clinic.call("delete_patient", {"patient_id": "PAT-00301"})
    assert d.ok and {c.op for c in d.changes} == {"delete"} and all(c.after is None for c in d.changes)
    again = clinic.call("get_patient", {"patient_id": "PAT-00301"})
    assert again.error["code"] == "not_found"


def test_update_needs_a_field_and_refs_must_exist(clinic):
    assert clinic.call("update_patient", {"patient_id": "PAT-00001"}).error["code"] == "invalid_arguments"
    r = clinic.call("update_patient", {"patient_id": "PAT-00001", "doctor_id": "DOC-999"})
    assert r.error["code"] == "not_found" and "DOC-999" in r.error["message"]


def test_delete_refused_while_referenced(clinic):
    before = clinic.snapshot()
    r = clinic.call("delete_doctor", {"doctor_id": "DOC-001"})
    assert r.error["code"] == "conflict" and clinic.changes_since(before) == []


def test_failed_precondition_leaves_nothing(clinic):
    before = clinic.snapshot()
    r = clinic.call(
        "book_appointment",
        {"patient_id": "PAT-00001", "doctor_id": "DOC-001", "starts_at": "2026-01-01T09:00"},
    )
    assert r.error == {
        "code": "slot_in_past",
        "message": "appointments must be booked for a future date (today is 2026-06-01)",
    }
    assert r.changes == [] and clinic.changes_since(before) == []


def test_precondition_policy_double_booking(clinic):
    args = {"patient_id": "PAT-00001", "doctor_id": "DOC-001", "starts_at": "2026-07-01T09:00"}
    if not clinic.runtime.get("doctor", "DOC-001")["accepting"]:
        clinic.call("update_doctor", {"doctor_id": "DOC-001", "accepting": True})
    assert clinic.call("book_appointment", args).ok
    other = next(
        p["patient_id"]
        for p in clinic.runtime.find("patient", status="active")
        if p["patient_id"] != "PAT-00001"
    )
    second = clinic.call("book_appointment", {**args, "patient_id": other})
    assert second.error == {
        "code": "slot_taken",
        "message": "doctor DOC-001 already has an appointment at 2026-07-01T09:00",
    }


def test_exception_in_action_rolls_back_and_world_keeps_serving(tiny):
    before = tiny.snapshot()
    r = tiny.call("explode", {"customer_id": "C001"})
    assert not r.ok and r.error["code"] == "internal_error" and "ZeroDivisionError" in r.error["message"]
    assert tiny.changes_since(before) == []
    open_order = tiny.runtime.find("order", status="open")[0]["order_id"]
    assert tiny.call("ship_order", {"order_id": open_order}).ok
    assert tiny.call("get_customer", {"customer_id": "C001"}).result["name"] != "changed"


def test_read_labelled_tool_cannot_write(tiny):
    before = tiny.snapshot()
    r = tiny.call("sneaky_read", {"customer_id": "C001"})
    assert r.error["code"] == "internal_error" and "labelled read" in r.error["message"]
    assert tiny.changes_since(before) == []
    assert tiny.call("update_customer", {"customer_id": "C001", "vip": True}).ok


def test_bools_and_money_round_trip(tiny):
    r = tiny.call("update_customer", {"customer_id": "C002", "vip": True, "credit": 12.5})
    assert r.result["vip"] is True and r.result["credit"] == 12.5
    changed = {c.field: c.after for c in r.changes}
    assert changed["vip"] is True


def test_catalog_rename_wrap_remove_and_compose(tiny):
    tiny.rename_tool("get_customer", "fetch_customer", "Fetch a customer.")
    assert tiny.call("fetch_customer", {"customer_id": "C001"}).ok
    assert tiny.call("get_customer", {"customer_id": "C001"}).error["code"] == "unknown_tool"

    ship = tiny.tool("ship_order")
    loud = ship.wrapped(lambda inner, rt, args: {"shipped": inner(rt, args)["order_id"]}, name="ship_loudly")
    tiny.add_tool(loud)
    open_order = tiny.runtime.find("order", status="open")[0]["order_id"]
    r = tiny.call("ship_loudly", {"order_id": open_order})
    assert r.result == {"shipped": open_order} and r.changes[0].after == "shipped"

    def rename_then_fail(rt, args):
        rt.call("update_customer", {"customer_id": args["customer_id"], "name": "Renamed"})
        raise ToolError("nope", "second step failed")

    tiny.add_tool(
        Tool(
            name="rename_then_fail",
            description="Composite that fails after a nested write.",
            input_schema={
                "type": "object",
                "properties": {"customer_id": {"type": "string"}},
                "required": ["customer_id"],
            },
            effect="write",
            handler=rename_then_fail,
        )
    )
    before = tiny.snapshot()
    r = tiny.call("rename_then_fail", {"customer_id": "C003"})
    assert r.error == {"code": "nope", "message": "second step failed"} and tiny.changes_since(before) == []
    tiny.remove_tool("rename_then_fail")
    assert "rename_then_fail" not in {t.name for t in tiny.tools}


def test_worlds_from_one_domain_are_independent(tiny_domain):
    a, b = World(tiny_domain), World(tiny_domain)
    a.call("update_customer", {"customer_id": "C001", "name": "Only in A"})
    assert b.call("get_customer", {"customer_id": "C001"}).result["name"] != "Only in A"
    a.rename_tool("get_customer", "fetch_customer")
    assert "get_customer" in {t.name for t in b.tools}


def test_non_object_arguments(clinic):
    assert clinic.call("get_patient", ["PAT-00001"]).error["code"] == "invalid_arguments"  # type: ignore[arg-type]


def test_unique_field_clash_is_a_conflict(clinic):
    taken = clinic.runtime.get("patient", "PAT-00002")["email"]
    before = clinic.snapshot()
    r = clinic.call("update_patient", {"patient_id": "PAT-00001", "email": taken})
    assert r.error == {"code": "conflict", "message": "another patient already has this email"}
    assert clinic.changes_since(before) == []


def test_tool_with_an_invalid_schema_is_an_error_not_a_crash(tiny):
    tiny.add_tool(
        Tool(
            name="broken",
            description="",
            input_schema={"type": "objekt"},
            effect="read",
            handler=lambda rt, a: 1,
        )
    )
    r = tiny.call("broken", {})
    assert r.error["code"] == "internal_error" and "invalid input schema" in r.error["message"]


def test_action_results_are_made_json_values(tiny_data):
    from toolshift.world import compile_domain
    from toolshift.world.language.spec import parse_spec

    tiny_data["actions"].append(
        {
            "name": "odd_result",
            "description": "Returns Python values.",
            "effect": "read",
            "code": "return {'ids': ('a', 'b'), 'tags': {'y', 'x'}, (1, 2): [today]}",
        }
    )
    world = World(compile_domain(parse_spec(tiny_data, "tiny.yaml"), "tiny.yaml"))
    r = world.call("odd_result", {})
    assert r.result == {"ids": ["a", "b"], "tags": ["x", "y"], "(1, 2)": ["2026-06-01"]}
    json.dumps(r.result)
