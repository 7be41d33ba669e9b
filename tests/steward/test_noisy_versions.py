"""What a later version's interface changes broke in skill-following, fixed on held-out training tasks (D236):
a staged write whose description the version's doc noise replaced, a result value wrapped in an object,
an argument renamed with a filler word, a part's ordinal fact in a one-part request, and a write renamed
to a verb the request does not say, known by the words its training requests used."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import continues
from toolshift.steward.instruments import _select
from toolshift.steward.library import Skill
from toolshift.steward.naming import merged, said_of, same_fact
from toolshift.steward.supply import Supply

from .conversation import converse

DRAFT = {"type": "string", "description": "The draft id start_* returned."}


def _tool(
    name: str, description: str, props: dict, required: list[str], effect: str = "write"
) -> CatalogTool:
    schema = {"type": "object", "properties": props, "required": required}
    return CatalogTool(name, "ar", description, schema, effect)


def test_a_staged_commit_whose_description_is_noise_still_continues_its_start():
    commit = _tool("ap_commit_release_payment_batch",
                   "Deprecated alias kept for compatibility; see the documentation of ap_release_payment_batch.",
                   {"draft_id": DRAFT}, ["draft_id"])  # fmt: skip
    assert continues(commit)
    assert continues(_tool("ap_set_x", "Step 2 of 3 (ap_start_x first): set dry_run.", {}, []))
    # a write that takes an ordinary key does not continue anything, whatever its description says
    plain = _tool("ap_void_batch", "Works with records.", {"batch_id": {"type": "string"}}, ["batch_id"])
    assert not continues(plain)


def test_a_where_clause_matches_a_value_the_version_wrapped_in_an_object():
    result = {"items": [
        {"offer_id": "OFF-1", "base_salary": {"amount": "90000.00", "currency": "USD"}},
        {"offer_id": "OFF-2", "base_salary": {"amount": "118000.00", "currency": "USD"}},
    ]}  # fmt: skip
    got = _select(result, ["items", "*", "offer_id"], {"base_salary": "offer base salary"},
                  {"offer base salary": "118000.00"}, False)  # fmt: skip
    assert got == ["OFF-2"]


def test_filler_words_and_a_parts_ordinal_do_not_hide_the_users_fact():
    assert same_fact("item value", "item")
    assert same_fact("campaign code (2)", "campaign code")
    assert same_fact("hire ref value", "hire")
    # the last word that says what the fact is still decides
    assert not same_fact("item value", "item count")
    assert not same_fact("campaign code (2)", "campaign title")


# a version renamed "approve" to "sign off" and replaced its description with noise; the stored plan was
# learned from a training episode whose user asked to "approve a credit memo"
CATALOG = Catalog(5, {
    "ar_find_invoices": _tool("ar_find_invoices", "Search invoices.", {"invoice_number": {"type": "string"}},
                              [], "read"),
    "ar_sign_off_credit_memo": _tool("ar_sign_off_credit_memo", "Works with records.",
                                     {"memo_id": {"type": "string"}}, ["memo_id"]),
    "ar_grant_credit_memo": _tool("ar_grant_credit_memo", "Draft a credit memo against an invoice.",
                                  {"invoice_id": {"type": "string"}, "reason": {"type": "string"}},
                                  ["invoice_id", "reason"]),
})  # fmt: skip
FIND = {"tool": "ar_find_invoices", "args": {"invoice_number": {"fact": "sales invoice number"}}}
SIGN_OFF = Skill("plan-sign-off", "planning", "ar", "sign off a credit memo", {
    "facts": ["sales invoice number"], "requests": ["Can you help me approve a credit memo, please?"],
    "steps": [FIND, {"tool": "ar_sign_off_credit_memo",
                     "args": {"memo_id": {"step": 0, "path": ["items", "*", "memo_id"], "where": {}}}}],
}, ("ar_find_invoices", "ar_sign_off_credit_memo"))  # fmt: skip
GRANT = Skill("plan-grant", "planning", "ar", "issue a credit memo", {
    "facts": ["reason", "sales invoice number"], "requests": ["I need to issue a credit memo."],
    "steps": [FIND, {"tool": "ar_grant_credit_memo",
                     "args": {"invoice_id": {"step": 0, "path": ["items", "*", "invoice_id"], "where": {}},
                              "reason": {"fact": "reason"}}}],
}, ("ar_find_invoices", "ar_grant_credit_memo"))  # fmt: skip


def test_a_renamed_write_is_said_by_the_words_its_training_requests_used():
    supply = Supply([SIGN_OFF, GRANT], CATALOG)
    said = said_of("Can you help me approve a credit memo? You want to approve the credit memo of SI-1.")
    assert supply.unsaid("ar_sign_off_credit_memo", said) == 0.0
    # another conversation's words do not borrow them: "issue" was never this tool's word
    assert supply.unsaid("ar_sign_off_credit_memo", said_of("I need to issue a credit memo.")) > 0
    calls = converse(
        supply, "Can you help me approve a credit memo, please?",
        "You want to approve the credit memo of sales invoice SI-1.", {"sales invoice number": "SI-1"},
        lambda name, args: {"items": [{"invoice_id": "INV-1", "memo_id": "CM-1"}]}
        if name == "ar_find_invoices" else {"status": "approved"},
    )  # fmt: skip
    assert ("ar_sign_off_credit_memo", {"memo_id": "CM-1"}) in calls
    assert not any(name == "ar_grant_credit_memo" for name, _ in calls)


def _merged_schema(second: str) -> dict:
    part = {"type": "object", "properties": {"window_id": {"type": "string"}}, "required": ["window_id"]}
    return {"type": "object", "properties": {"step1": part, second: part}, "required": ["step1", second]}


def test_a_merged_tools_renamed_part_keeps_the_path_under_it():
    from toolshift.steward.maintain import renamed_arguments

    name = "noc_get_window_then_approve_window"
    catalog = Catalog(4, {name: CatalogTool(name, "noc", "Does in one call: …", _merged_schema("step2_value"),
                                            "write")})  # fmt: skip
    fact = {"fact": "maintenance window number"}
    skill = Skill("atomic-approve", "atomic", "noc", "approve a window", {
        "facts": ["maintenance window number"], "calls": [
            {"tool": name, "args": {"step1.window_id": fact, "step2.window_id": fact}, "each": False}],
    }, (name,))  # fmt: skip
    got = renamed_arguments(skill, catalog, {name: {"step1", "step2_value"}})
    assert got is not None
    assert got[0].body["calls"][0]["args"] == {"step1.window_id": fact, "step2_value.window_id": fact}
    assert got[1] == {f"{name}.step2": "step2_value"}


def test_a_merged_write_is_never_credited_with_its_training_requests_opening():
    name = "ful_change_ship_method_then_cancel_order"
    tool = CatalogTool(name, "ful", "Does in one call: …", _merged_schema("step2"), "write")
    assert merged(tool) and not merged(CATALOG.tools["ar_sign_off_credit_memo"])
    plan = Skill("plan-merged", "planning", "ful", "change ship method", {
        "facts": [], "requests": ["Can you help me change ship method? There is one more thing after that."],
        "steps": [{"tool": name, "args": {}}],
    }, (name,))  # fmt: skip
    supply = Supply([plan], Catalog(4, {name: tool}))
    said = said_of(
        "Can you help me change ship method? There is one more thing after that: release the hold."
    )
    assert supply.unsaid(name, said) > 0  # "then cancel order" is not said, whatever the opening says


def test_a_call_the_loop_refuses_ends_the_run_as_a_failure():
    import asyncio

    from toolshift.steward.instruments import SkillFollower

    # the loop answers a call its schema check refuses with text, not a JSON error object
    follower = SkillFollower(Supply([SIGN_OFF], CATALOG))
    follower.phase, follower.plan_steps = "run", SIGN_OFF.body["steps"]
    refusal = (
        "error: invalid arguments for ar_sign_off_credit_memo at 'memo_id': 'CM-1' is not of type 'object'"
    )
    reply = asyncio.run(follower.complete([{"role": "user", "content": "hi"},
                                           {"role": "tool", "content": refusal}], []))  # fmt: skip
    assert follower.failure.startswith("call failed: invalid arguments") and not reply.calls


def test_of_several_records_the_one_the_user_named_is_taken_not_the_first():
    """A where-clause on a fact the user lacks (`mdf request status`) picks nothing; of the partner's four
    requests the step takes the one whose id the user gave, never the list's first (held-out training task
    partner_programs-0032:v3 paid MDF-0015 for MDF-0073)."""
    listing = {"items": [
        {"mdf_id": "MDF-0015", "status": "paid"}, {"mdf_id": "MDF-0073", "status": "claimed"},
        {"mdf_id": "MDF-0144", "status": "approved"}, {"mdf_id": "MDF-0149", "status": "claimed"},
    ]}  # fmt: skip
    facts = {"mdf request": "MDF-0073", "partner company name": "Delta Group"}
    path = ["items", "*", "mdf_id"]
    assert _select(listing, path, {"status": "mdf request status"}, facts, False) == ["MDF-0073"]
    # nothing named: the lookup's order stands, as before; an `each` step still takes every record
    assert _select(listing, path, {}, {"partner company name": "Delta Group"}, False) == ["MDF-0015"]
    assert len(_select(listing, path, {}, facts, True)) == 4


def test_a_lookup_fact_the_request_never_says_is_asked_with_the_field_it_does_name():
    """The stored plan finds the order by its number; this user names the order by the customer's email and
    has no number. Asked for the number alone, the user ends the talk (a question naming none of their
    facts); asked with "customer email" beside it, they give the email and the lookup is rebound to it
    (held-out training task order_fulfillment-0010, every version)."""
    search = {"order_number": {"type": "string"}, "customer_email": {"type": "string"}}
    catalog = Catalog(1, {
        "ful_search_customer_orders": CatalogTool("ful_search_customer_orders", "ful", "Search orders.",
                                                  {"type": "object", "properties": search}, "read"),
        "ful_allocate_order": CatalogTool("ful_allocate_order", "ful", "Allocate stock to an order.",
                                          {"type": "object", "properties": {"order_id": {"type": "string"}},
                                           "required": ["order_id"]}, "write"),
    })  # fmt: skip
    allocate = Skill("plan-allocate", "planning", "ful", "allocate order", {
        "facts": ["customer order number"], "requests": ["Can you help me allocate order, please?"],
        "steps": [{"tool": "ful_search_customer_orders", "args": {"order_number": {"fact": "customer order number"}}},
                  {"tool": "ful_allocate_order", "args": {"order_id": {
                      "step": 0, "path": ["items", "*", "order_id"],
                      "where": {"order_number": "customer order number"}}}}],
    }, ("ful_search_customer_orders", "ful_allocate_order"))  # fmt: skip
    email = "sami.garcia@shopper.example.com"
    calls = converse(
        Supply([allocate], catalog), "Hello, I'd like help to allocate order.",
        f"You want to allocate the customer order with customer email {email}.", {"customer order email": email},
        lambda name, args: {"items": [{"order_id": "SO-7", "customer_email": email}]}
        if name == "ful_search_customer_orders" else {"status": "allocated"},
    )  # fmt: skip
    assert ("ful_search_customer_orders", {"customer_email": email}) in calls
    assert ("ful_allocate_order", {"order_id": "SO-7"}) in calls
