"""A paged lookup split into start → set → commit is a read for Steward (D184): the catalog marks its calls
writes, so a plan "search work centres, then take one down" was trimmed to the search for "take … down"."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool, paged_operations
from toolshift.steward.library import Skill
from toolshift.steward.supply import Supply, trim


def _tool(name: str, description: str, props: dict, effect: str = "write") -> CatalogTool:
    return CatalogTool(name, "mfg", description, {"type": "object", "properties": props}, effect)


def _tools() -> dict[str, CatalogTool]:
    return {t.name: t for t in [
        _tool("mfg_start_query_work_centers", "Step 1 of 3 to search work_centers by field values. "
              "Opens a draft with: nothing; returns its draft_id.", {}),
        _tool("mfg_set_query_work_centers", "Step 2 of 3 (mfg_start_query_work_centers first): set code, "
              "limit, offset on the draft.", {"draft_id": {}, "code": {}, "limit": {}, "offset": {}}),
        _tool("mfg_commit_query_work_centers", "Step 3 of 3: carry out the draft opened by "
              "mfg_start_query_work_centers.", {"draft_id": {}}),
        _tool("mfg_start_approve_order", "Step 1 of 3 to approve an order. Opens a draft with: order_id.",
              {"order_id": {}}),
        _tool("mfg_set_approve_order", "Step 2 of 3 (mfg_start_approve_order first): set note on the draft.",
              {"draft_id": {}, "note": {}}),
        _tool("mfg_commit_approve_order", "Step 3 of 3: carry out the draft opened by mfg_start_approve_order.",
              {"draft_id": {}}),
        _tool("mfg_take_work_center_down", "Take a work centre down for maintenance.", {"work_center_id": {}}),
    ]}  # fmt: skip


def test_only_an_operation_that_pages_through_a_list_becomes_a_read():
    got = paged_operations(_tools())
    assert {n for n, t in got.items() if t.effect == "read"} == {
        "mfg_start_query_work_centers",
        "mfg_set_query_work_centers",
        "mfg_commit_query_work_centers",
    }
    # the approval's draft changes a record; the plain write stays a write
    assert got["mfg_commit_approve_order"].effect == "write"
    assert got["mfg_take_work_center_down"].effect == "write"


def test_the_write_asked_for_is_no_longer_trimmed_behind_the_search_operation():
    search = ["mfg_start_query_work_centers", "mfg_set_query_work_centers", "mfg_commit_query_work_centers"]
    steps = [
        {"tool": search[0], "args": {}},
        {
            "tool": search[1],
            "args": {"draft_id": {"step": 0, "path": ["draft_id"]}, "code": {"fact": "code"}},
        },
        {"tool": search[2], "args": {"draft_id": {"step": 0, "path": ["draft_id"]}}},
        {
            "tool": "mfg_take_work_center_down",
            "args": {"work_center_id": {"step": 2, "path": ["items", "*", "id"]}},
        },
    ]
    plan = Skill("plan-down", "planning", "mfg", "take a work centre down", {"facts": ["code"], "steps": steps},
                 (*search, "mfg_take_work_center_down"))  # fmt: skip
    said = {"take", "work", "center", "down", "maintenance", "code"}
    # as the catalog marks them, the search's calls are writes the request names better than the one it asks
    # for ("query" unsaid, a third; "take work center down" said in full) — the asked write stays either way,
    # but only with the search a read do the plan's writes equal just the asked one
    raw = Supply([plan], Catalog(1, _tools()))
    fixed = Supply([plan], Catalog(1, paged_operations(_tools())))
    assert raw.writes(plan) > {"mfg_take_work_center_down"}
    assert fixed.writes(plan) == {"mfg_take_work_center_down"}
    assert [s["tool"] for s in trim(plan, said, fixed).body["steps"]] == [
        *search,
        "mfg_take_work_center_down",
    ]


def test_a_stored_lookup_alone_never_stands_in_for_the_write_asked_for():
    from .test_choice_binding import CATALOG as SITES
    from .test_choice_binding import HOLD, LOOKUP

    # only a plan that holds a site is stored, beside an atomic skill that is the site search alone
    search = Skill("atomic-search-sites", "atomic", "sqm", "search supplier sites to close a supplier site",
                   {"facts": ["supplier site code"], "calls": [LOOKUP], "requests": ["close a supplier site"]},
                   ("sqm_search_sites",))  # fmt: skip
    supply = Supply([HOLD, search], SITES)
    view = supply.episode("Close a site.").choose(
        "Close a site. You want to close site SC-1 (reason: Audit)."
    )
    assert view.plan is not None
    # the stored plan, its write swapped for the catalog's close; not the search, which writes nothing
    assert [st["tool"] for st in view.plan.body["steps"]] == ["sqm_search_sites", "sqm_close_site"]
