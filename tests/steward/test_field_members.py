"""A free-text write argument takes the member the domain's other tools give a field of that name (D198)."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool, field_enums
from toolshift.steward.instruments import bind_step, coerce
from toolshift.steward.library import Skill
from toolshift.steward.supply import Supply

from .conversation import converse

REASONS = ["wrong_size", "not_as_described", "damaged_in_transit"]


def _tool(name: str, props: dict, effect: str, required: list[str], domain: str = "rma") -> CatalogTool:
    return CatalogTool(name, domain, name.replace("_", " "),
                       {"type": "object", "properties": props, "required": required}, effect)  # fmt: skip


CATALOG = Catalog(1, {t.name: t for t in [
    _tool("rma_search_return_requests", {"rma_number": {"type": "string"},
                                         "reason": {"type": "string", "enum": REASONS}}, "read", []),
    _tool("rma_reject_return", {"return_id": {"type": "string"}, "reason": {"type": "string"}}, "write",
          ["return_id", "reason"]),
    # another domain's `reason` enum says nothing of this one's
    _tool("cs_refund_order", {"reason": {"type": "string", "enum": ["goodwill"]}}, "write", [], "cs"),
]})  # fmt: skip
REJECT = Skill("plan-reject", "planning", "rma", "reject a return", {
    "facts": ["reason", "return request rma number"], "requests": ["reject return R1"],
    "steps": [{"tool": "rma_search_return_requests", "args": {"rma_number": {"fact": "return request rma number"}}},
              {"tool": "rma_reject_return", "args": {
                  "return_id": {"step": 0, "path": ["items", "*", "return_id"], "where": {}},
                  "reason": {"fact": "reason"}}}],
}, ("rma_search_return_requests", "rma_reject_return"))  # fmt: skip


def test_the_domains_members_of_a_field_name_are_those_every_enum_of_it_gives():
    assert field_enums(CATALOG, "rma") == {"reason": REASONS}
    assert field_enums(CATALOG, "cs") == {"reason": ["goodwill"]}
    other = Catalog(
        1, {**CATALOG.tools, "rma_x": _tool("rma_x", {"reason": {"enum": ["other"]}}, "write", [])}
    )
    assert "reason" not in field_enums(other, "rma")  # two member lists: neither is the field's
    assert coerce("not as described", {"type": "string"}, REASONS) == "not_as_described"
    assert coerce("Salary expectations", {"type": "string"}, REASONS) == "Salary expectations"
    assert coerce("4", {"type": "integer"}, ["4x"]) == 4


def test_bind_step_and_the_follower_give_the_member_the_users_words_name():
    step = REJECT.body["steps"][1]
    schema = CATALOG.tools["rma_reject_return"].input_schema
    results = [{"items": [{"return_id": "RMA-1"}]}]
    facts = {"reason": "not as described"}
    assert bind_step(step, facts, results, schema)[0]["reason"] == "not as described"
    enums = field_enums(CATALOG, "rma")
    assert bind_step(step, facts, results, schema, enums=enums)[0]["reason"] == "not_as_described"

    def answer(name: str, args: dict) -> dict:
        return {"items": [{"return_id": "RMA-1", "rma_number": "R1"}]} if "search" in name else {"ok": True}

    calls = converse(Supply([REJECT], CATALOG), "Can you help me reject return, please?",
                     "You want to reject return for the return request with rma number R1 (reason: not as "
                     "described).", {"return request rma number": "R1", "reason": "not as described"}, answer)  # fmt: skip
    assert ("rma_reject_return", {"return_id": "RMA-1", "reason": "not_as_described"}) in calls
