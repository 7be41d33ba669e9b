"""The skill-following causes fixed on training tasks (D182): unnamed writes trimmed, the user's own fact
names answering a plan's, plans limited to the tools offered, a later page looked at, keys bound from
results when a fact matches them only by letter case, and fields the user gave bound to a write."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.compose import drop_steps
from toolshift.steward.distill import Call, Trajectory, workflow
from toolshift.steward.instruments import SkillFollower, same_fact
from toolshift.steward.library import Skill
from toolshift.steward.supply import Supply, repeats, trim, unsaid

from .conversation import converse

SEARCH = {"barcode": {"type": "string"}, "offset": {"type": "integer"}}


def _catalog() -> Catalog:
    def tool(name: str, props: dict, effect: str, required: list[str]) -> CatalogTool:
        schema = {"type": "object", "properties": props, "required": required}
        return CatalogTool(name, "lims", name.replace("_", " "), schema, effect)

    return Catalog(1, {
        "lims_search_samples": tool("lims_search_samples", SEARCH, "read", []),
        "lims_quarantine_sample": tool("lims_quarantine_sample", {"sample_id": {}, "reason": {}}, "write",
                                       ["sample_id", "reason"]),
        "lims_dispose_sample": tool("lims_dispose_sample", {"sample_id": {}, "method": {"type": "string"}},
                                    "write", ["sample_id"]),
    })  # fmt: skip


CATALOG = _catalog()
LOOKUP = {"tool": "lims_search_samples", "args": {"barcode": {"fact": "sample barcode"}}}
PICK = {"step": 0, "path": ["items", "*", "sample_id"], "where": {"barcode": "sample barcode"}}
# a stored workflow of two parts: quarantine a sample, then dispose of the record quarantine returned
BOTH = Skill("plan-both", "planning", "lims", "quarantine then dispose a sample", {
    "facts": ["reason", "sample barcode"], "requests": ["quarantine a sample, then dispose of it"],
    "steps": [LOOKUP,
              {"tool": "lims_quarantine_sample", "args": {"sample_id": PICK, "reason": {"fact": "reason"}}},
              {"tool": "lims_dispose_sample", "args": {"sample_id": {"step": 1, "path": ["sample_id"]}}}],
}, ("lims_search_samples", "lims_quarantine_sample", "lims_dispose_sample"))  # fmt: skip


def test_a_write_the_request_does_not_name_is_dropped_and_its_record_taken_from_its_own_binding():
    said = {"dispose", "sample", "barcode"}
    assert unsaid("lims_quarantine_sample", said) == 0.5 and unsaid("lims_dispose_sample", said) == 0.0
    got = trim(BOTH, said, Supply([BOTH], CATALOG))
    assert [s["tool"] for s in got.body["steps"]] == ["lims_search_samples", "lims_dispose_sample"]
    assert got.body["steps"][1]["args"]["sample_id"] == PICK  # the lookup's pick, not quarantine's result
    assert got.body["facts"] == ["sample barcode"]  # the reason quarantine needed is no longer asked
    # a request naming both keeps both; "add a new …" names a create
    assert trim(BOTH, said | {"quarantine"}, Supply([BOTH], CATALOG)) is BOTH
    assert unsaid("lims_create_sample", {"new", "sample"}) == 0.0


def test_a_dropped_step_whose_result_feeds_a_kept_one_is_not_dropped():
    # the lookup feeds dispose and has no binding of its own for sample_id: dropping it would lose the key
    assert drop_steps(BOTH, {0}, CATALOG) is None


def test_the_users_own_name_for_a_fact_answers_the_plans_phrase_only_when_it_names_the_same_field():
    assert same_fact("supplier site supplier code", "supplier site code")
    assert same_fact("rejection reason", "reason")
    assert not same_fact("customer order email", "customer order number")


def _converse(supply: Supply, intent: str, facts: dict[str, str], pages: list[list[dict]], offered=None):
    """A sample's lookup pages through `pages` by offset; any other call marks the sample done."""

    def answer(name: str, args: dict) -> dict:
        if name == "lims_search_samples":
            at = args.get("offset", 0)
            return {"items": pages[at], "next_offset": at + 1 if at + 1 < len(pages) else None}
        return {"sample_id": args.get("sample_id"), "status": "done"}

    return converse(supply, "Hello, I'd like help with a sample.", intent, facts, answer, offered)


def test_the_follower_disposes_only_and_binds_a_field_the_user_gave_under_their_own_name():
    calls = _converse(
        Supply([BOTH], CATALOG),
        "You want to dispose the sample with barcode B-7 (method: incineration).",
        {"sample barcode": "B-7", "method": "incineration"},
        [[{"sample_id": "S-7", "barcode": "B-7"}]],
    )
    assert ("lims_dispose_sample", {"sample_id": "S-7", "method": "incineration"}) in calls
    assert not any(name == "lims_quarantine_sample" for name, _ in calls)


def test_the_follower_looks_at_the_next_page_when_no_item_matches():
    pages = [[{"sample_id": "S-1", "barcode": "B-1"}], [{"sample_id": "S-7", "barcode": "B-7"}]]
    calls = _converse(Supply([BOTH], CATALOG), "You want to dispose the sample with barcode B-7.",
                      {"sample barcode": "B-7"}, pages)  # fmt: skip
    assert ("lims_search_samples", {"barcode": "B-7", "offset": 1}) in calls
    assert ("lims_dispose_sample", {"sample_id": "S-7"}) in calls


def test_a_plan_with_tools_the_agent_was_not_offered_is_not_chosen():
    other = Skill("plan-other", "planning", "cs", "dispose a sample", {**BOTH.body}, BOTH.tools[:2])
    supply = Supply([BOTH, other], CATALOG)
    view = supply.episode("dispose a sample").choose(
        "dispose a sample barcode", frozenset({"lims_search_samples", "lims_dispose_sample"})
    )
    assert view.plan is None  # neither plan's tools are all offered: none is supplied
    assert not repeats(BOTH)


def test_a_key_a_fact_matches_only_by_letter_case_is_bound_from_the_lookup_result():
    found = {"items": [{"resource_id": "RES-9", "resource_name": "res-9"}]}
    traj = Trajectory("e", "cld", "stop res-9", {"cloud resource name": "res-9"}, [
        Call("cld_search_cloud_resources", {"resource_name": "res-9"}, found, True),
        Call("cld_stop_cloud_resource", {"resource_id": "RES-9"}, {"status": "stopped"}, True),
    ])  # fmt: skip
    steps = workflow(traj).steps
    assert steps[0]["args"]["resource_name"] == {"fact": "cloud resource name"}
    assert steps[1]["args"]["resource_id"]["path"] == ["items", "*", "resource_id"]


def test_a_result_field_renamed_in_style_still_picks_and_the_best_matching_item_stands_in():
    from toolshift.steward.instruments import BindingError, _select

    facts = {"invoice number": "INV-2", "amount": "10"}
    items = {"items": [{"invoiceNumber": "INV-1", "id": "A"}, {"invoiceNumber": "INV-2", "id": "B"}]}
    where = {"invoice_number": "invoice number"}
    assert _select(items, ["items", "*", "id"], where, facts, False) == ["B"]
    # a second condition no item meets (a coincidence of training values): the one item meeting the most
    both = {**where, "late_fee": "amount"}
    assert _select(items, ["items", "*", "id"], both, facts, False) == ["B"]
    # …but never for a step over every matching item, nor when no condition is met at all
    try:
        _select(items, ["items", "*", "id"], both, facts, True)
        raise AssertionError("an each step took a partial match")
    except BindingError:
        pass
    try:
        _select(items, ["items", "*", "id"], {"invoice_number": "amount", "late_fee": "amount"}, facts, False)
        raise AssertionError("an item meeting no condition was taken")
    except BindingError:
        pass


def test_an_answer_to_a_field_the_write_sets_is_never_taken_as_a_lookups_key():
    tech = {"tool": "fs_search_technicians", "args": {"full_name": {"fact": "technician full name"}}}
    update = {
        "tool": "fs_update_technician",
        "args": {"tech_id": {"step": 0, "path": ["items", "*", "tech_id"]}},
    }
    plan = Skill("plan-tech", "planning", "fs", "update a technician",
                 {"facts": ["technician full name"], "steps": [tech, update], "requests": ["update a technician"]},
                 ("fs_search_technicians", "fs_update_technician"))  # fmt: skip
    search = {"full_name": {"type": "string"}, "email": {"type": "string"}}
    cat = Catalog(1, {
        "fs_search_technicians": CatalogTool("fs_search_technicians", "fs", "search technicians",
                                             {"type": "object", "properties": search}, "read"),
        "fs_update_technician": CatalogTool("fs_update_technician", "fs", "update technician",
                                            {"type": "object", "properties": {"tech_id": {}, "full_name": {}},
                                             "required": ["tech_id"]}, "write"),
    })  # fmt: skip
    follower = SkillFollower(Supply([plan], cat))
    follower.plan_steps = plan.body["steps"]
    follower.open_asked = {"full name"}
    follower.facts = {"full name": "Robin Okafor", "technician email": "e@x"}
    follower._alias()
    assert "technician full name" not in follower.facts  # the new name is not the record's key


def test_among_plans_writing_the_same_once_trimmed_the_one_whose_facts_are_said_is_chosen():
    def tool(name: str, props: dict, effect: str, required: list[str]) -> CatalogTool:
        return CatalogTool(name, "rec", name.replace("_", " "),
                           {"type": "object", "properties": props, "required": required}, effect)  # fmt: skip

    cat = Catalog(1, {
        "rec_search_openings": tool("rec_search_openings", {"req_number": {}}, "read", []),
        "rec_search_candidates": tool("rec_search_candidates", {"email": {}}, "read", []),
        "rec_record_feedback": tool("rec_record_feedback", {"candidate_id": {}, "note": {}}, "write", ["candidate_id"]),
        "rec_reject_application": tool("rec_reject_application", {"candidate_id": {}}, "write", ["candidate_id"]),
    })  # fmt: skip
    pick = {"step": 0, "path": ["items", "*", "candidate_id"], "where": {}}
    by_opening = Skill("plan-by-opening", "planning", "rec", "reject an application", {
        "facts": ["job opening req number"], "requests": ["reject an application"],
        "steps": [{"tool": "rec_search_openings", "args": {"req_number": {"fact": "job opening req number"}}},
                  {"tool": "rec_reject_application", "args": {"candidate_id": pick}}],
    }, ("rec_search_openings", "rec_reject_application"))  # fmt: skip
    by_candidate = Skill("plan-by-candidate", "planning", "rec", "record feedback, then reject an application", {
        "facts": ["candidate email", "note"], "requests": ["record feedback, then reject an application"],
        "steps": [{"tool": "rec_search_candidates", "args": {"email": {"fact": "candidate email"}}},
                  {"tool": "rec_record_feedback", "args": {"candidate_id": pick, "note": {"fact": "note"}}},
                  {"tool": "rec_reject_application", "args": {"candidate_id": pick}}],
    }, ("rec_search_candidates", "rec_record_feedback", "rec_reject_application"))  # fmt: skip
    supply = Supply([by_opening, by_candidate], cat)
    view = supply.episode("reject an application").choose(
        "Reject an application. You want to reject the application of the candidate with email a@x."
    )
    assert view.plan is not None
    assert [st["tool"] for st in view.plan.body["steps"]] == [
        "rec_search_candidates",
        "rec_reject_application",
    ]
