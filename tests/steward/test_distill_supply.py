"""Distillation from episodes, the maintainer's narrow input, and supply never leaving the current catalog."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.steward import maintain as maintain_module
from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import parse_facts, trajectory, workflow
from toolshift.steward.experiment import edit_kind
from toolshift.steward.instruments import bind_step
from toolshift.steward.library import Library, Skill
from toolshift.steward.maintain import Maintainer
from toolshift.steward.supply import Supply
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall

from .conversation import converse

STEWARD = Path(maintain_module.__file__).parent


def _episode(
    eid: str, facts: dict[str, str], calls: list[tuple[str, dict, object]], ok: bool = True
) -> Episode:
    msgs = [Message(role="user", content="Hi, I need to reject some incoming lots.")]
    msgs.append(Message(role="assistant", content="Could you tell me your details?"))
    msgs.append(Message(role="user", content=" ".join(f"My {k} is {v}." for k, v in facts.items())))
    for k, (name, args, result) in enumerate(calls):
        msgs.append(Message(role="assistant", tool_calls=[ToolCall(id=f"c{k}", name=name, arguments=args)]))
        msgs.append(Message(role="tool", tool_call_id=f"c{k}", name=name, content=json.dumps(result)))
    return Episode(id=eid, task_id=eid, domain="sqm", messages=msgs, outcome=Outcome(success=ok))


LOTS = {"items": [
    {"lot_id": "RCV-1", "result": "pending"}, {"lot_id": "RCV-2", "result": "passed"},
    {"lot_id": "RCV-3", "result": "pending"},
]}  # fmt: skip
FACTS = {"supplier site code": "SC-0058", "issue": "Missing traceability", "incoming lot result": "pending"}
CALLS = [
    ("sqm_search_sites", {"supplier_code": "SC-0058"}, {"items": [{"site_id": "SUP-58", "code": "SC-0058"}]}),
    ("sqm_list_site_lots", {"site_id": "SUP-58"}, LOTS),
    ("sqm_reject_lot", {"lot_id": "RCV-1", "issue": "Missing traceability"}, {"lot_id": "RCV-1"}),
    ("sqm_reject_lot", {"lot_id": "RCV-3", "issue": "Missing traceability"}, {"lot_id": "RCV-3"}),
]


def _catalog(version: int = 1, drop: tuple[str, ...] = ()) -> Catalog:
    tools = {}
    for name, effect in (
        ("sqm_search_sites", "read"),
        ("sqm_list_site_lots", "read"),
        ("sqm_reject_lot", "write"),
    ):
        if name not in drop:
            args = {a for n, kw, _ in CALLS if n == name for a in kw}
            schema = {"type": "object", "properties": {a: {"type": "string"} for a in sorted(args)}}
            tools[name] = CatalogTool(name, "sqm", f"{name.replace('_', ' ')}.", schema, effect)
    return Catalog(version, tools)


def test_facts_are_read_as_the_user_states_them():
    assert parse_facts("My trip number is TRIP-1. My email is a.b@x.example.net.") == {
        "trip number": "TRIP-1",
        "email": "a.b@x.example.net",
    }


def test_argument_flow_facts_results_and_each():
    wf = workflow(trajectory(_episode("e1", FACTS, CALLS)))
    assert [s["tool"] for s in wf.steps] == ["sqm_search_sites", "sqm_list_site_lots", "sqm_reject_lot"]
    assert wf.steps[0]["args"] == {"supplier_code": {"fact": "supplier site code"}}
    assert wf.steps[1]["args"]["site_id"]["step"] == 0
    reject = wf.steps[2]
    assert reject["each"] is True
    assert reject["args"]["lot_id"] == {
        "step": 1,
        "path": ["items", "*", "lot_id"],
        "where": {"result": "incoming lot result"},
    }
    assert reject["args"]["issue"] == {"fact": "issue"}
    # executing the flow on another instance's results picks that instance's matching items
    other = {"items": [{"lot_id": "RCV-9", "result": "pending"}, {"lot_id": "RCV-8", "result": "failed"}]}
    calls = bind_step(reject, FACTS, [None, other], None)
    assert calls == [{"lot_id": "RCV-9", "issue": "Missing traceability"}]


def test_the_maintainer_takes_a_catalog_and_episodes_and_nothing_else():
    for method in (Maintainer.initialise, Maintainer.maintain):
        assert list(inspect.signature(method).parameters) == ["self", "catalog", "episodes"]
    for module in ("maintain", "distill", "library", "supply", "retrieval", "catalog"):
        tree = ast.parse((STEWARD / f"{module}.py").read_text(encoding="utf-8"))
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        if module != "catalog":  # catalog.version_catalog reads a build's catalog, and only that
            assert not [m for m in imported if m.startswith("toolshift.bench")], module


def test_incremental_maintenance_deactivates_reactivates_and_counts_work(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    m = Maintainer(lib)
    w1 = m.initialise(_catalog(1), [_episode("e1", FACTS, CALLS), _episode("bad", FACTS, CALLS, ok=False)])
    assert w1.episodes == 1 and w1.edits == len(lib.skills()) > 0
    levels = {s.level for s in lib.skills()}
    assert levels == {"planning", "atomic", "tool"}
    w2 = m.maintain(_catalog(2, drop=("sqm_reject_lot",)), [])
    assert w2.by_op.get("deactivate", 0) > 0 and w2.by_op.get("add", 0) == 0
    assert not any(s.active for s in lib.skills() if "sqm_reject_lot" in s.tools)
    w3 = m.maintain(_catalog(3), [_episode("e3", FACTS, CALLS)])
    assert w3.by_op.get("reactivate", 0) == w2.by_op["deactivate"]
    assert w3.distilled == 0  # the call sequence is known to an active skill: evidence, not work
    ops = [e.op for e in lib.edits()]
    assert ops.count("deactivate") == ops.count("reactivate")
    # an interface changed under its name: the skills calling it the old way are deactivated
    changed = _catalog(4)
    changed.tools["sqm_reject_lot"].input_schema["properties"] = {"lot": {"type": "string"}}
    w4 = m.maintain(changed, [])
    assert w4.by_op.get("deactivate", 0) >= 2  # the plan and the atomic skill that call sqm_reject_lot
    lib.close()
    Library.open(tmp_path / "lib.sqlite").close()


TOOLS = [f"t{k}" for k in range(12)]


@st.composite
def libraries(draw):
    skills = []
    for k in range(draw(st.integers(0, 12))):
        deps = tuple(draw(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=3, unique=True)))
        level = draw(st.sampled_from(["planning", "atomic", "tool"]))
        facts = draw(st.lists(st.sampled_from(["name", "code", "reason"]), max_size=2, unique=True))
        steps = [{"tool": t, "args": {}, "each": False} for t in deps]
        body = {
            "facts": facts,
            "steps": steps,
            "requests": [draw(st.sampled_from(["approve order", "hold x"]))],
        }
        skills.append(Skill(f"s{k}", level, "d", " ".join(deps), body, deps[:1] if level == "tool" else deps,
                            active=draw(st.booleans())))  # fmt: skip
    return skills


@settings(max_examples=150)
@given(
    libraries(),
    st.sets(st.sampled_from(TOOLS)),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz t0123456789", max_size=40),
    st.dictionaries(st.sampled_from(["name", "code", "reason"]), st.just("v")),
)
def test_supply_never_leaves_the_current_catalog(skills, present, request, facts):
    schema = {"type": "object", "properties": {}}
    catalog = Catalog(
        2, {t: CatalogTool(t, "d", f"tool {t} approve order hold", schema, "read") for t in present}
    )
    supply = Supply(skills, catalog)
    ep = supply.episode(request)
    view = ep.plan(facts)
    if view.plan is not None:
        assert set(view.plan.tools) <= present
    for tool in ep.retrieve_tools(request or "order"):
        assert tool["name"] in present
    report = ep.explore_capabilities(request or "order")
    assert {t["name"] for t in report["tools"]} <= present
    assert ep.exposed <= present
    assert all(set(s.tools) <= present for s in [*supply.plans, *supply.atomics])


def test_no_fitting_plan_falls_back_to_the_initial_supply(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    Maintainer(lib).initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    supply = Supply(lib, _catalog(1))
    ep = supply.episode("Hi, I need to reject some incoming lots.")
    assert ep.ask()  # the plan needs the user's facts
    view = ep.plan({})  # the user gave none of them: no plan fits
    assert view.plan is None
    assert view.exposed  # not an empty supply: the candidates' tools and the request's top tools
    assert {"sqm_search_sites", "sqm_list_site_lots", "sqm_reject_lot"} <= view.exposed
    assert view.exposed <= _catalog(1).names() and view.exposed <= ep.exposed
    lib.close()


def _plan(sid: str, request: str, facts: list[str], steps: list[dict]) -> Skill:
    tools = tuple(dict.fromkeys(s["tool"] for s in steps))
    body = {"facts": facts, "steps": steps, "requests": [request]}
    return Skill(sid, "planning", "sqm", request, body, tools)


def _converse(
    supply: Supply, request: str, facts: dict[str, str], intent: str = "do it"
) -> list[tuple[str, dict]]:
    """The skill-following instrument against the scripted user (who says `intent` when asked what they
    want); every call returns one site."""
    site = {"items": [{"site_id": "SUP-1", "code": "SC-1"}]}
    return converse(supply, request, intent, facts, lambda name, args: site, max_messages=30)


def test_a_step_asks_for_a_fact_when_it_needs_one():
    lookup = {"tool": "sqm_search_sites", "args": {"supplier_code": {"fact": "supplier site code"}}}
    hold = {"tool": "sqm_hold_site", "args": {
        "site_id": {"step": 0, "path": ["items", "*", "site_id"], "where": {}},
        "reason": {"fact": "hold reason"}}}  # fmt: skip
    # a plan whose fact list misses what its second step needs (an imported or hand-written skill)
    plan = _plan("hold", "put a supplier site on hold", ["supplier site code"], [lookup, hold])
    schema = {"type": "object", "properties": {}}
    catalog = Catalog(1, {t: CatalogTool(t, "sqm", t, schema, "write") for t in plan.tools})
    calls = _converse(Supply([plan], catalog), "Please hold a site.", {"supplier site code": "SC-1",
                                                                      "hold reason": "Audit"})  # fmt: skip
    assert ("sqm_hold_site", {"site_id": "SUP-1", "reason": "Audit"}) in calls


def _nested(calls: list[tuple[str, dict, object]]) -> list[tuple[str, dict, object]]:
    """The same calls where sqm_search_sites nests its results under `data` (an interface change)."""
    return [(n, a, {"data": r} if n == "sqm_search_sites" else r) for n, a, r in calls]


def test_a_binding_the_new_results_contradict_is_rebound_not_kept(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    m = Maintainer(lib)
    m.initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    (plan,) = lib.skills("planning")
    assert plan.body["steps"][1]["args"]["site_id"]["path"][0] == "items"
    # v2: same tools, same schemas; sqm_search_sites now answers {"data": {"items": [...]}}
    w2 = m.maintain(_catalog(2), [_episode("e2", FACTS, _nested(CALLS))])
    (plan,) = lib.skills("planning")
    assert plan.active and plan.catalog_version == 2
    assert plan.body["steps"][1]["args"]["site_id"]["path"][:2] == ["data", "items"]
    assert w2.by_op.get("revise", 0) >= 2  # the plan and the atomic skill that read the moved field
    rebound = [e for e in lib.edits() if e.catalog_version == 2 and "rebound" in e.evidence]
    assert any("items" in str(e.evidence) and "data.items" in str(e.evidence) for e in rebound)
    # the rebound plan runs on the new interface's results
    step = plan.body["steps"][1]
    assert bind_step(step, FACTS, [{"data": {"items": [{"site_id": "SUP-7", "code": "SC-0058"}]}}], None) == [
        {"site_id": "SUP-7"}
    ]
    supply = Supply(lib, _catalog(2))
    assert supply.episode("reject incoming lots").plan(FACTS).plan.id == plan.id
    # an atomic skill's input found by name under the new nesting too
    assert bind_step({"tool": "x", "args": {"site_id": {"input": "site_id"}}}, {},
                     [{"data": {"items": [{"site_id": "SUP-7"}]}}], None) == [{"site_id": "SUP-7"}]  # fmt: skip
    lib.close()


def test_a_binding_with_no_new_place_deactivates_until_results_hold_it_again(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    m = Maintainer(lib)
    m.initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    # v2: sqm_search_sites no longer returns site ids at all (seen in another episode's call)
    gone = [("sqm_search_sites", {"supplier_code": "SC-0058"}, {"items": [{"code": "SC-0058"}]})]
    m.maintain(_catalog(2), [_episode("e2", {"supplier site code": "SC-0058"}, gone)])
    stale = [s for s in lib.skills() if not s.active]
    assert stale and all("sqm_search_sites" in s.tools for s in stale)
    assert not any(
        s.active and "sqm_list_site_lots" in s.tools and s.level == "planning" for s in lib.skills()
    )
    m.maintain(_catalog(3), [])  # every tool is still there: presence alone does not bring it back
    assert all(not lib.get(s.id).active for s in stale)
    m.maintain(_catalog(4), [_episode("e4", FACTS, CALLS)])  # results hold the path again
    assert all(lib.get(s.id).active for s in stale)
    lib.close()


def _atomic(sid: str, facts: list[str], calls: list[dict]) -> Skill:
    tools = tuple(dict.fromkeys(c["tool"] for c in calls))
    return Skill(sid, "atomic", "sqm", " ".join(t.replace("_", " ") for t in tools),
                 {"facts": facts, "calls": calls, "requests": []}, tools)  # fmt: skip


SITE = {"step": 0, "path": ["items", "*", "site_id"], "where": {"code": "supplier site code"}}
LOOKUP = {"tool": "sqm_search_sites", "args": {"supplier_code": {"fact": "supplier site code"}}}


def _schema_catalog(writes: dict[str, dict]) -> Catalog:
    tools = {"sqm_search_sites": CatalogTool("sqm_search_sites", "sqm", "search supplier sites",
                                             {"type": "object", "properties": {"supplier_code": {}}}, "read")}  # fmt: skip
    for name, props in writes.items():
        schema = {"type": "object", "properties": props, "required": ["site_id"]}
        tools[name] = CatalogTool(name, "sqm", name.replace("_", " "), schema, "write")
    return Catalog(1, tools)


def test_an_unseen_workflow_is_composed_from_atomic_skills_fed_by_a_known_lookup():
    catalog = _schema_catalog({"sqm_put_on_hold": {"site_id": {}, "reason": {}},
                               "sqm_close_site": {"site_id": {}, "note": {}}})  # fmt: skip
    hold = [LOOKUP, {"tool": "sqm_put_on_hold", "args": {"site_id": SITE, "reason": {"fact": "hold reason"}}}]
    skills = [
        _plan("hold", "put a supplier site on hold", ["hold reason", "supplier site code"], hold),
        _atomic("hold-a", ["hold reason", "supplier site code"], hold),
        # closing was only ever seen after another lookup: its atomic skill takes the site from outside
        _atomic(
            "close-a",
            ["close note"],
            [
                {
                    "tool": "sqm_close_site",
                    "args": {"site_id": {"input": "site_id"}, "note": {"fact": "close note"}},
                }
            ],
        ),
    ]
    supply = Supply(skills, catalog)
    request = "Please close a supplier site."
    facts = {"supplier site code": "SC-1", "close note": "Moved away"}
    view = supply.episode(request).plan(facts)
    assert view.plan is not None and view.plan.body.get("composed")  # marked as composed
    assert view.plan.body["steps_tools"] == ["sqm_search_sites", "sqm_close_site"]
    calls = _converse(
        supply, request, facts, "You want to close supplier site SC-1 (close note: Moved away)."
    )
    assert calls == [("sqm_search_sites", {"supplier_code": "SC-1"}),
                     ("sqm_close_site", {"site_id": "SUP-1", "note": "Moved away"}),
                     ("end_conversation", {})]  # fmt: skip


def test_a_following_part_is_adapted_to_the_facts_by_its_tools_schema():
    catalog = _schema_catalog({"sqm_hold_site": {"site_id": {}, "reason": {}},
                               "sqm_update_site": {"site_id": {}, "contact_email": {}, "rating": {"type": "number"}}})  # fmt: skip
    hold = [LOOKUP, {"tool": "sqm_hold_site", "args": {"site_id": SITE, "reason": {"fact": "hold reason"}}}]
    update = {"tool": "sqm_update_site", "args": {"site_id": {"input": "site_id"},
                                                  "contact_email": {"fact": "contact email"}}}  # fmt: skip
    skills = [
        _plan("hold", "put a supplier site on hold", ["hold reason", "supplier site code"], hold),
        _atomic("update-a", ["contact email"], [update]),  # updates were only seen setting the email
    ]
    supply = Supply(skills, catalog)
    facts = {"supplier site code": "SC-1", "hold reason": "Audit", "rating": "4.5"}
    # the fact-fitting merge (`EpisodeSupply.plan`, for a caller holding the facts as a dict)
    view = supply.episode("Hold a site. There is one more thing after that, too.").plan(facts)
    assert view.plan is not None
    update_step = view.plan.body["steps"][-1]
    assert update_step["tool"] == "sqm_update_site" and update_step["args"]["rating"] == {"fact": "rating"}
    assert bind_step(
        update_step, facts, [{"items": [{"site_id": "SUP-1"}]}], catalog.tools["sqm_update_site"].input_schema
    ) == [{"site_id": "SUP-1", "rating": 4.5}]  # rating → rating, a number


def test_maintain_refuses_a_version_not_after_the_librarys_and_leaves_foreign_skills_alone(tmp_path):
    import pytest

    from toolshift.errors import BadInputError

    lib = Library.create(tmp_path / "lib.sqlite")
    m = Maintainer(lib)
    m.initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    foreign = Skill("pdf-processing", "foreign", "", "Extract text from PDFs.", {"markdown": "# PDF\n"}, ())
    with lib.transaction():
        lib.edit("add", foreign, 1, {"imported_from": "elsewhere"}, as_is=True)
    for v in (0, 1):
        with pytest.raises(BadInputError, match="already at version 1"):
            m.maintain(_catalog(v), [])
    m.maintain(_catalog(2, drop=("sqm_reject_lot",)), [])
    assert lib.get("pdf-processing") == foreign
    assert [e.op for e in lib.edits() if e.skill_id == "pdf-processing"] == ["add"]


def test_a_moved_result_path_is_mechanical_nothing_for_a_writer_to_write(tmp_path):
    written: list[str] = []

    def reviser(skill):
        written.append(skill.id)
        return skill, 7

    lib = Library.create(tmp_path / "lib.sqlite")
    m = Maintainer(lib, reviser=reviser)
    m.initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    before = len(written)
    assert before > 0  # the writer writes what is added
    w2 = m.maintain(_catalog(2), [_episode("e2", FACTS, _nested(CALLS))])
    rebound = [e for e in lib.edits() if e.catalog_version == 2 and "rebound" in e.evidence]
    assert rebound and all(edit_kind(e) == "rename" for e in rebound)
    assert not {e.skill_id for e in rebound} & set(written[before:])  # the writer never saw a moved path
    assert w2.tokens == 7 * (len(written) - before)
    lib.close()
