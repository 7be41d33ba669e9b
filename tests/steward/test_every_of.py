""" "Resolve every maintenance ticket of room R029 whose status is open (2 of them); then … a new maintenance
ticket": the plan resolves the first, the repetition the others but not the ticket the run created (D211),
and the next clause adds no part whose other writes it does not name (D212)."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog
from toolshift.steward.library import Skill
from toolshift.steward.repeat import Repeat, parse_repeat
from toolshift.steward.supply import Supply

from .catalogs import string_tool as _tool
from .conversation import converse

CATALOG = Catalog(1, {t.name: t for t in [
    _tool("fac_search_rooms", ["room_code"], "read", []),
    _tool("fac_list_room_maintenance_tickets", ["room_id"], "read", ["room_id"],
          "Tickets of a room. Lists the maintenance_tickets whose room_id is the given room_id."),
    _tool("fac_resolve_maintenance_ticket", ["ticket_id", "resolution"], "write", ["ticket_id", "resolution"]),
    _tool("fac_create_maintenance_ticket", ["room_id", "issue"], "write", ["room_id", "issue"]),
    _tool("fac_close_room_for_maintenance", ["room_id"], "write", ["room_id"]),
]})  # fmt: skip
ROOM = {"tool": "fac_search_rooms", "args": {"room_code": {"fact": "room code"}}}
ROOM_ID = {"step": 0, "path": ["items", "*", "room_id"], "where": {}}
CREATE = {"tool": "fac_create_maintenance_ticket", "args": {"room_id": ROOM_ID, "issue": {"fact": "issue"}}}
RESOLVE = Skill("plan-resolve", "planning", "fac", "resolve a maintenance ticket of a room, then a new one", {
    "facts": ["resolution", "room code", "status"], "requests": ["resolve the open maintenance ticket"],
    "steps": [ROOM, {"tool": "fac_list_room_maintenance_tickets", "args": {"room_id": ROOM_ID}},
              {"tool": "fac_resolve_maintenance_ticket", "args": {
                  "ticket_id": {"step": 1, "path": ["items", "*", "ticket_id"], "where": {"status": "status"}},
                  "resolution": {"fact": "resolution"}}}, CREATE],
}, ("fac_search_rooms", "fac_list_room_maintenance_tickets", "fac_resolve_maintenance_ticket",
    "fac_create_maintenance_ticket"))  # fmt: skip
# a stored workflow whose request recorded a new ticket and then closed the room
CREATE_CLOSE = Skill("plan-create-close", "planning", "fac", "new maintenance ticket recorded, room closed", {
    "facts": ["issue", "room code"], "requests": ["a new maintenance ticket recorded; close the room"],
    "steps": [ROOM, CREATE, {"tool": "fac_close_room_for_maintenance", "args": {"room_id": ROOM_ID}}],
}, ("fac_search_rooms", "fac_create_maintenance_ticket", "fac_close_room_for_maintenance"))  # fmt: skip
INTENT = ("You want to resolve every maintenance ticket of room R029 whose status is open (2 of them) "
          "(resolution: Fixed); then you also want to have a new maintenance ticket recorded for room R029 "
          "(issue: Leak).")  # fmt: skip


def _world():
    tickets = {"T1": "open", "T2": "resolved", "T3": "open"}

    def answer(name: str, args: dict) -> dict:
        if name == "fac_search_rooms":
            return {"items": [{"room_id": "RM-29", "room_code": "R029"}]}
        if name == "fac_list_room_maintenance_tickets":
            return {"items": [{"ticket_id": k, "room_id": "RM-29", "status": v} for k, v in tickets.items()]}
        if name == "fac_resolve_maintenance_ticket":
            tickets[args["ticket_id"]] = "resolved"
            return {"ticket_id": args["ticket_id"], "room_id": "RM-29"}
        if name == "fac_create_maintenance_ticket":
            tickets["T9"] = "open"
            return {"ticket_id": "T9", "room_id": "RM-29", "status": "open"}
        return {"room_id": "RM-29", "status": "maintenance"}

    return answer


def test_every_record_of_a_named_parent_is_parsed():
    assert parse_repeat(INTENT) == Repeat("maintenance ticket", "room", "status", "open")
    assert parse_repeat("resolve the maintenance ticket of room R029 whose status is open") is None


def test_the_others_are_resolved_once_and_no_unnamed_write_is_composed():
    calls = converse(Supply([RESOLVE, CREATE_CLOSE], CATALOG), "Hi, I have several maintenance tickets.", INTENT,
                     {"room code": "R029", "resolution": "Fixed", "maintenance ticket status": "open",
                      "issue": "Leak"}, _world())  # fmt: skip
    resolved = [a["ticket_id"] for n, a in calls if n == "fac_resolve_maintenance_ticket"]
    assert sorted(resolved) == ["T1", "T3"]  # never T9, the ticket the run created
    assert [n for n, _ in calls].count("fac_create_maintenance_ticket") == 1
    assert not any(n == "fac_close_room_for_maintenance" for n, _ in calls)
