"""A stored plan's write replaced by the catalog's write the request names, its other required values
taken from the user's facts and its key from the step's key to the same record (D197)."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog
from toolshift.steward.library import Skill
from toolshift.steward.supply import Supply, swap_writes

from .catalogs import string_tool as _tool
from .conversation import converse

CATALOG = Catalog(2, {t.name: t for t in [
    _tool("cs_get_order", ["order_id"], "read", ["order_id"]),
    _tool("cs_cancel_order", ["order_ref"], "write", ["order_ref"]),  # its key renamed by the version
    _tool("cs_refund_order", ["order_id", "amount", "reason"], "write", ["order_id", "amount", "reason"]),
]})  # fmt: skip
# the library's only plan for orders cancels one (the training request asked to cancel)
CANCEL = Skill("plan-cancel", "planning", "cs", "cancel an order", {
    "facts": ["order number"], "requests": ["cancel order ORD-1"],
    "steps": [{"tool": "cs_get_order", "args": {"order_id": {"fact": "order number"}}},
              {"tool": "cs_cancel_order", "args": {"order_ref": {"step": 0, "path": ["order_id"]}}}],
}, ("cs_get_order", "cs_cancel_order"))  # fmt: skip


def test_a_write_needing_values_the_request_names_replaces_the_plans_with_the_steps_key():
    supply = Supply([CANCEL], CATALOG)
    swapped = swap_writes(CANCEL, {"refund", "order", "amount", "reason"}, supply)
    refund = swapped.body["steps"][1]
    assert refund["tool"] == "cs_refund_order"
    assert refund["args"] == {"order_id": {"step": 0, "path": ["order_id"]}, "amount": {"fact": "amount"},
                              "reason": {"fact": "reason"}}  # fmt: skip
    assert swapped.body["facts"] == ["amount", "order number", "reason"]
    # a required value the conversation never names: nothing to bind it from, the plan stays
    assert swap_writes(CANCEL, {"refund", "order", "amount"}, supply) is CANCEL


def test_the_follower_refunds_the_order_the_request_asks_to_refund():
    def answer(name: str, args: dict) -> dict:
        return {"order_id": "ORD-1", "status": "delivered"} if name == "cs_get_order" else {"ok": True}

    calls = converse(
        Supply([CANCEL], CATALOG),
        "Hi, I need to refund an order.",
        "You want to refund order ORD-1 (amount: 9.50; reason: goodwill).",
        {"order number": "ORD-1", "amount": "9.50", "reason": "goodwill"},
        answer,
    )
    assert ("cs_refund_order", {"order_id": "ORD-1", "amount": "9.50", "reason": "goodwill"}) in calls
    assert not any(name == "cs_cancel_order" for name, _ in calls)
