"""Transformations on a real domain: each kind runs through the capability check, and accepted ones preserve Δ."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.bench.ecosystem.catalog import DomainCatalog, pending_drafts
from toolshift.bench.ecosystem.evolve import DomainEvolver, EvolveConfig, TransformRecord, apply_record
from toolshift.bench.ecosystem.verify import Verifier
from toolshift.bench.synthesis import Synthesizer
from toolshift.world.state.registry import load_domain
from toolshift.world.state.world import World

DOMAIN = "procurement"


@pytest.fixture(scope="module")
def setup():
    compiled = load_domain(DOMAIN)
    tasks, _ = Synthesizer(World(compiled), seed=0).synthesize(24)
    assert len(tasks) >= 10
    base = DomainCatalog.base(
        World(compiled), {c.tool: c.function or c.tool for t in tasks for c in t.gold_path}
    )
    verifier = Verifier(compiled, tasks, base.tools)
    return compiled, tasks, base, verifier


def _used_tool(verifier: Verifier, base: DomainCatalog, effect: str) -> str:
    used = sorted({c.tool for t in verifier.tasks for c in t.gold_path})
    return next(n for n in used if base.tools[n].effect == effect)


def _check(setup, rec: TransformRecord):
    _, _, base, verifier = setup
    after = base.clone()
    impl, _ = apply_record(after, rec)
    assert impl is not None
    srcs = [base.impls[s] for s in rec.sources]
    samples = verifier.samples(impl.covers, 4, random.Random(0))
    return after, impl, verifier.check(base.tools, srcs, after.tools, impl, samples)


@pytest.mark.parametrize("effect", ["read", "write"])
@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("rename_tool", {}),
        ("add_param", {}),
        ("format", {"codec": "nest"}),
        ("format", {"codec": "dates"}),
        ("split", {}),
    ],
)
def test_one_to_one_and_split_pass_the_check(setup, kind, options, effect):
    _, _, base, verifier = setup
    src = _used_tool(verifier, base, effect)
    new = [f"x_{src}"] if kind != "split" else [f"start_{src}", f"set_{src}", f"commit_{src}"]
    rec = TransformRecord(
        id="t1",
        domain=DOMAIN,
        version=2,
        kind=kind,
        sources=[src],
        new_tools=new,
        options=options,
        retire_source=True,
    )
    after, _impl, result = _check(setup, rec)
    assert result.ok, result.reason
    assert result.samples >= 1
    assert src not in after.tools and all(t in after.tools for t in new)
    assert not after.unreachable()


def test_rename_param_in_place_is_a_modified_interface(setup):
    _, _, base, verifier = setup
    src = _used_tool(verifier, base, "write")
    param = base.tools[src].required[0]
    rec = TransformRecord(
        id="t2",
        domain=DOMAIN,
        version=2,
        kind="rename_param",
        sources=[src],
        new_tools=[src],
        in_place=True,
        options={"old_param": param, "new_param": param + "_ref"},
    )
    after, _, result = _check(setup, rec)
    assert result.ok, result.reason
    assert param + "_ref" in after.tools[src].params and param not in after.tools[src].params


def test_merge_of_a_gold_block_passes_and_saves_steps(setup):
    _, _tasks, _base, verifier = setup
    task = next(t for t in verifier.tasks if len(t.base_functions) >= 2)
    block = task.base_functions[:2]
    rec = TransformRecord(
        id="t3", domain=DOMAIN, version=2, kind="merge", sources=list(block), new_tools=["merged_block"]
    )
    after, impl, result = _check(setup, rec)
    assert result.ok, result.reason
    assert impl.covers == tuple(block) and impl.tools == ("merged_block",)
    assert after.tools["merged_block"].input_schema["required"] == ["step1", "step2"]


def test_split_keeps_real_pending_state(setup):
    compiled, _, base, verifier = setup
    src = _used_tool(verifier, base, "write")
    cat = base.clone()
    rec = TransformRecord(
        id="t4",
        domain=DOMAIN,
        version=2,
        kind="split",
        sources=[src],
        new_tools=["s_start", "s_set", "s_commit"],
    )
    apply_record(cat, rec)
    world = cat.world(World(compiled))
    r = world.call("s_commit", {"draft_id": "DRAFT-NOPE"})
    assert not r.ok and r.error["code"] == "not_found"
    assert world.call("s_set", {"draft_id": "DRAFT-NOPE"}).error["code"] == "not_found"
    assert pending_drafts(world) == {}


def test_dry_run_previews_without_changing(setup):
    compiled, _, base, verifier = setup
    task = next(t for t in verifier.tasks if base.tools[t.gold_path[-1].tool].effect == "write")
    call = task.gold_path[-1]
    cat = base.clone()
    apply_record(
        cat,
        TransformRecord(
            id="t5", domain=DOMAIN, version=2, kind="add_param", sources=[call.tool], new_tools=["dry"]
        ),
    )
    world = cat.world(World(compiled))
    for c in task.gold_path[:-1]:
        assert world.call(c.tool, c.arguments).ok
    snap = world.snapshot()
    r = world.call("dry", {**call.arguments, "dry_run": True})
    assert r.ok and r.result["dry_run"] is True and r.changes == []
    assert world.changes_since(snap) == []
    assert world.call("dry", call.arguments).changes  # without dry_run it writes


def test_rejections_say_why(setup):
    _, _, base, verifier = setup
    src = _used_tool(verifier, base, "read")
    # renaming a parameter to one that exists is not applicable
    params = base.tools[src].params
    if len(params) >= 2:
        rec = TransformRecord(
            id="r1",
            domain=DOMAIN,
            version=2,
            kind="rename_param",
            sources=[src],
            new_tools=["y"],
            options={"old_param": params[0], "new_param": params[1]},
        )
        with pytest.raises(Exception, match=r"has no parameter"):
            apply_record(base.clone(), rec)
    # retiring the only implementation of a function leaves it unreachable
    evolver = DomainEvolver(setup[0], setup[1], EvolveConfig(versions=2))
    rec = TransformRecord(id="r2", domain=DOMAIN, version=2, kind="retire", sources=[src])
    _cat, reason = evolver._try(evolver.versions[0].catalog, rec)
    assert reason.startswith("would leave base functions unreachable")


@pytest.mark.slow
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=st.integers(0, 10_000))
def test_every_accepted_transformation_preserves_delta_on_gold_inputs(setup, seed):
    compiled, tasks, _, _ = setup
    evolver = DomainEvolver(compiled, tasks, EvolveConfig(versions=3, seed=seed, samples=2))
    states = evolver.run()
    assert any(s.records for s in states[1:])
    for prev, cur in itertools.pairwise(states):
        cat = prev.catalog.clone()
        for rec in cur.records:
            before = cat.clone()
            impl, _ = apply_record(cat, rec.model_copy(deep=True))
            if impl is None:
                continue
            srcs = [before.impls[s] for s in rec.sources]
            # re-check on every gold occurrence (up to 6), not only the samples it was accepted on
            samples = evolver.verifier.occurrences(impl.covers)[:6]
            for sample in samples:
                a = evolver.verifier.check(before.tools, srcs, cat.tools, impl, [sample])
                assert a.ok or not a.reason.startswith(("state change", "capability")), (rec, a.reason)
        assert not cat.unreachable()
