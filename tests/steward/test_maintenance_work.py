"""Less maintenance work for the same library (D183): renamed tools and arguments carried over mechanically,
an episode like one distilled in the same pass not distilled again, start → set → commit kept one skill."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import chunks, trajectory, workflow
from toolshift.steward.experiment import edit_kind
from toolshift.steward.library import Library
from toolshift.steward.maintain import Maintainer, renamed_tools
from toolshift.steward.supply import Supply, swap_writes

from .test_distill_supply import CALLS, FACTS, _catalog, _episode


def _renamed(version: int, old: str, new: str) -> Catalog:
    cat = _catalog(version)
    tools = {(new if n == old else n): t for n, t in cat.tools.items()}
    t = tools[new]
    tools[new] = CatalogTool(new, t.domain, t.description, t.input_schema, t.effect)
    return Catalog(version, tools)


def _calls_as(old: str, new: str) -> list[tuple[str, dict, object]]:
    return [((new if n == old else n), a, r) for n, a, r in CALLS]


def test_a_renamed_tool_is_carried_over_without_distilling_its_episodes(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    m = Maintainer(lib)
    m.initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    cat = _renamed(2, "sqm_reject_lot", "sqm_decline_lot")
    assert renamed_tools(lib, cat) == {"sqm_reject_lot": "sqm_decline_lot"}
    work = m.maintain(cat, [_episode("e2", FACTS, _calls_as("sqm_reject_lot", "sqm_decline_lot"))])
    assert work.distilled == 0  # the renamed plan already has the episode's calls: evidence
    plans = [s for s in lib.skills("planning") if s.active]
    assert plans and all("sqm_decline_lot" in s.tools for s in plans)
    kinds = [edit_kind(e) for e in lib.edits() if e.catalog_version == 2]
    assert "rename" in kinds and "add" not in kinds
    # the supply serves the renamed plan on the new catalog
    view = Supply(lib, cat).episode("reject lots").choose("reject the incoming lots of site SC-0058")
    assert view.plan is not None and "sqm_decline_lot" in view.plan.tools


def test_a_renamed_argument_is_carried_over_only_when_the_versions_calls_use_it(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    m = Maintainer(lib)
    m.initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    cat = _catalog(2)
    props = cat.tools["sqm_reject_lot"].input_schema["properties"]
    props["lot_ref"] = props.pop("lot_id")
    moved = [
        (n, ({"lot_ref": a["lot_id"], "issue": a["issue"]} if "lot_id" in a else a), r) for n, a, r in CALLS
    ]
    m.maintain(cat, [_episode("e2", FACTS, moved)])
    plan = next(s for s in lib.skills("planning") if s.active and "sqm_reject_lot" in s.tools)
    reject = next(st for st in plan.body["steps"] if st["tool"] == "sqm_reject_lot")
    assert "lot_ref" in reject["args"] and "lot_id" not in reject["args"]
    # without a call of this version using the new argument, nothing is guessed: deactivated
    other = Library.create(tmp_path / "other.sqlite")
    Maintainer(other).initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    Maintainer(other).maintain(cat, [])
    assert not any(s.active for s in other.skills() if s.level != "tool" and "sqm_reject_lot" in s.tools)


def test_an_episode_like_one_distilled_in_the_same_pass_is_not_distilled_again(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    m = Maintainer(lib)
    m.initialise(_catalog(1, drop=("sqm_reject_lot",)), [])
    work = m.maintain(_catalog(2), [_episode("e1", FACTS, CALLS), _episode("e2", FACTS, CALLS)])
    assert work.distilled == 1 and lib.skills("planning")


def test_a_start_set_commit_operation_stays_one_atomic_skill():
    steps = ["x_search_orders", "x_start_cancel_order", "x_set_cancel_order", "x_commit_cancel_order"]
    descs = {"x_set_cancel_order": "Step 2 of 3 (x_start_cancel_order first): set reason on the draft.",
             "x_commit_cancel_order": "Step 3 of 3: carry out the draft opened by x_start_cancel_order."}  # fmt: skip
    cat = Catalog(1, {n: CatalogTool(n, "x", descs.get(n, n), {"type": "object", "properties": {}},
                                     "read" if "search" in n else "write") for n in steps})  # fmt: skip
    wf = workflow(trajectory(_episode("e", {}, [(n, {}, {"ok": True}) for n in steps])))
    assert chunks(wf, cat) == [(0, 4)]
    cat.tools["x_set_cancel_order"] = CatalogTool("x_set_cancel_order", "x", "Set it.", {}, "write")
    cat.tools["x_commit_cancel_order"] = CatalogTool("x_commit_cancel_order", "x", "Do it.", {}, "write")
    assert chunks(wf, cat) == [(0, 2), (2, 3), (3, 4)]


def test_a_write_the_request_names_better_in_the_catalog_replaces_the_plans(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    Maintainer(lib).initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    cat = _catalog(1)
    schema = {**cat.tools["sqm_reject_lot"].input_schema, "required": ["lot_id"]}
    cat.tools["sqm_accept_lot"] = CatalogTool("sqm_accept_lot", "sqm", "accept lot.", schema, "write")
    plan = next(s for s in lib.skills("planning"))
    supply = Supply(lib, cat)
    swapped = swap_writes(plan, {"accept", "lot", "site"}, supply)
    assert "sqm_accept_lot" in swapped.tools and "sqm_reject_lot" not in swapped.tools
    assert swap_writes(plan, {"reject", "lot"}, supply) is plan
