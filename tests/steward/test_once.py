"""A stored plan that made a write on a second record of a list makes it once for a request naming one (D210)."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog
from toolshift.steward.library import Skill
from toolshift.steward.supply import Supply, once

from .catalogs import string_tool as _tool
from .conversation import converse

CATALOG = Catalog(1, {t.name: t for t in [
    _tool("rec_search_candidates", ["email"], "read", []),
    _tool("rec_list_candidate_applications", ["candidate_id"], "read", ["candidate_id"]),
    _tool("rec_list_job_opening_applications", ["opening_id"], "read", ["opening_id"]),
    _tool("rec_reject_application", ["application_id", "rejection_reason"], "write",
          ["application_id", "rejection_reason"]),
]})  # fmt: skip
PICK = {"path": ["items", "*", "application_id"], "where": {"applied_date": "application applied date"}}
# distilled from "reject the application … and every other application of the same job opening whose stage
# is applied": the second record's reject unrolled, from the opening's list
STEPS = [
    {"tool": "rec_search_candidates", "args": {"email": {"fact": "candidate email"}}},
    {"tool": "rec_list_candidate_applications",
     "args": {"candidate_id": {"step": 0, "path": ["items", "*", "candidate_id"], "where": {}}}},
    {"tool": "rec_reject_application",
     "args": {"application_id": {"step": 1, **PICK}, "rejection_reason": {"fact": "rejection reason"}}},
    {"tool": "rec_list_job_opening_applications",
     "args": {"opening_id": {"step": 1, "path": ["items", "*", "opening_id"], "where": PICK["where"]}}},
    {"tool": "rec_reject_application", "args": {
        "application_id": {"step": 3, "path": ["items", "*", "application_id"], "where": {"stage": "stage"}},
        "rejection_reason": {"fact": "rejection reason"}}},
]  # fmt: skip
PLAN = Skill("plan-reject-two", "planning", "rec", "reject applications", {
    "facts": ["application applied date", "candidate email", "rejection reason", "stage"],
    "requests": ["reject applications"], "steps": STEPS}, tuple(dict.fromkeys(st["tool"] for st in STEPS)))  # fmt: skip
ONE = "You want to reject the application whose applied date is 2026-04-22 of the candidate with email c@x."


def test_a_second_write_of_the_same_tool_goes_with_its_lookup_unless_two_clauses_name_it():
    supply = Supply([PLAN], CATALOG)
    got = once(PLAN, ONE, supply)
    assert [st["tool"] for st in got.body["steps"]] == [st["tool"] for st in STEPS[:3]]
    two = "reject the application of A; then reject the application of B"
    assert once(PLAN, two, supply) is PLAN


def test_the_follower_rejects_only_the_application_the_request_names():
    apps = [
        {"application_id": "APP-1", "opening_id": "JOB-1", "applied_date": "2026-04-22", "stage": "applied"}
    ]

    def answer(name: str, args: dict) -> dict:
        if name == "rec_search_candidates":
            return {"items": [{"candidate_id": "CAN-1", "email": "c@x"}]}
        if name == "rec_list_candidate_applications":
            return {"items": apps}
        if name == "rec_list_job_opening_applications":
            return {"items": [{"application_id": "APP-9", "stage": "applied"}, *apps]}
        return {"ok": True}

    calls = converse(Supply([PLAN], CATALOG), "Can you help me reject an application, please?", ONE + " (rejection "
                     "reason: Salary)", {"candidate email": "c@x", "application applied date": "2026-04-22",
                                         "rejection reason": "Salary"}, answer)  # fmt: skip
    rejects = [a for n, a in calls if n == "rec_reject_application"]
    assert rejects == [{"application_id": "APP-1", "rejection_reason": "Salary"}]
