"""An optional record key a write takes from an earlier result is left out when the clause the write serves
never names that record (D199)."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog
from toolshift.steward.library import Skill
from toolshift.steward.ordinal import unnamed_keys
from toolshift.steward.supply import Supply

from .catalogs import string_tool as _tool
from .conversation import converse

CATALOG = Catalog(1, {t.name: t for t in [
    _tool("tex_search_trips", ["trip_number"], "read", []),
    _tool("tex_cancel_trip", ["trip_id"], "write", ["trip_id"]),
    _tool("tex_search_travelers", ["email"], "read", []),
    _tool("tex_create_expense_report", ["report_number", "traveler_id", "trip_id"], "write",
          ["report_number", "traveler_id"]),
]})  # fmt: skip
# distilled from a request whose report named the trip ("trip: trip TRIP-1"): trip_id taken from the cancel
STEPS = [
    {"tool": "tex_search_trips", "args": {"trip_number": {"fact": "trip number"}}},
    {"tool": "tex_cancel_trip", "args": {"trip_id": {"step": 0, "path": ["items", "*", "trip_id"], "where": {}}}},
    {"tool": "tex_search_travelers", "args": {"email": {"fact": "traveler email"}}},
    {"tool": "tex_create_expense_report", "args": {
        "report_number": {"fact": "report number"},
        "traveler_id": {"step": 2, "path": ["items", "*", "traveler_id"], "where": {}},
        "trip_id": {"step": 1, "path": ["trip_id"], "where": {}}}},
]  # fmt: skip
PLAN = Skill("plan-trip-report", "planning", "tex", "cancel a trip then a new expense report", {
    "facts": ["report number", "traveler email", "trip number"], "requests": ["cancel a trip"],
    "steps": STEPS}, tuple(st["tool"] for st in STEPS))  # fmt: skip
UNNAMED = [
    "cancel trip TRIP-1",
    "you also want a new expense report recorded for the traveler with email a@x",
]


def test_the_optional_key_is_dropped_only_where_its_clause_names_no_such_record():
    got = unnamed_keys(STEPS, UNNAMED, CATALOG)
    assert set(got[3]["args"]) == {"report_number", "traveler_id"}  # the required key stays
    assert got[1] == STEPS[1]  # the cancel's required key stays
    named = [UNNAMED[0], UNNAMED[1] + " (report number: R-1; trip: trip TRIP-1)"]
    assert unnamed_keys(STEPS, named, CATALOG)[3] == STEPS[3]
    # a plan handed over the wire (the loop's instrument) has no clauses: nothing is dropped, nothing raised
    assert unnamed_keys(STEPS, [], CATALOG) == STEPS


def test_the_follower_records_the_report_without_the_cancelled_trip():
    def answer(name: str, args: dict) -> dict:
        if name == "tex_search_trips":
            return {"items": [{"trip_id": "TRP-1", "trip_number": "TRIP-1"}]}
        if name == "tex_search_travelers":
            return {"items": [{"traveler_id": "EMP-9", "email": "a@x"}]}
        return {"trip_id": "TRP-1", "status": "cancelled"} if name == "tex_cancel_trip" else {"ok": True}

    calls = converse(Supply([PLAN], CATALOG), "Hello, I'd like help to cancel a trip.",
                     "You want to cancel trip TRIP-1; then you also want to have a new expense report recorded "
                     "for the traveler with email a@x (report number: R-1).",
                     {"trip number": "TRIP-1", "traveler email": "a@x", "report number": "R-1"}, answer)  # fmt: skip
    assert ("tex_cancel_trip", {"trip_id": "TRP-1"}) in calls
    assert ("tex_create_expense_report", {"report_number": "R-1", "traveler_id": "EMP-9"}) in calls
