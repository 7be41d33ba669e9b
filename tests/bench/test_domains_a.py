"""The 19 department domain specs of batch A: shape, and every custom action both succeeds and refuses on seeded data."""

from __future__ import annotations

import random
from typing import Any

import pytest

from toolshift.bench.domains import BENCH_DOMAINS_DIR
from toolshift.world.language.spec import ActionSpec, DomainSpec, ParamSpec, load_spec
from toolshift.world.state.compiler import compile_domain
from toolshift.world.state.world import World

DOMAINS_A = [
    "medical_device_engineering",
    "clinical_trials",
    "fleet_maintenance",
    "warehouse_inventory",
    "hr_recruiting",
    "employee_onboarding",
    "facilities_booking",
    "travel_expenses",
    "accounts_payable",
    "accounts_receivable",
    "contract_management",
    "legal_matters",
    "compliance_audits",
    "quality_assurance",
    "manufacturing_orders",
    "supplier_quality",
    "product_catalog",
    "pricing_promotions",
    "order_fulfillment",
]

MAX_ATTEMPTS = 4000


def _spec(name: str) -> DomainSpec:
    return load_spec(BENCH_DOMAINS_DIR / f"{name}.yaml")


@pytest.mark.parametrize("name", DOMAINS_A)
def test_domain_shape(name: str) -> None:
    spec = _spec(name)
    assert spec.name == name
    assert len(spec.entities) >= 4
    assert len(spec.relations) >= 3
    assert 2 <= len(spec.tool_prefix) - 1 <= 5 and spec.tool_prefix.endswith("_")
    assert len(spec.actions) >= 3
    assert all(a.preconditions for a in spec.actions), "every custom action encodes a policy"
    assert any(e.lookup for e in spec.entities), "tasks need query-type starting points"
    assert all(pre.message for a in spec.actions for pre in a.preconditions)
    assert spec.policy.strip(), "the agent's system prompt states the rules"
    domain = compile_domain(spec, name)
    assert 15 <= len(domain.tools) <= 24
    assert all(t.name.startswith(spec.tool_prefix) for t in domain.tools)
    assert 300 <= sum(domain.row_counts().values()) <= 1600


def test_prefixes_and_tool_names_unique_across_batch() -> None:
    prefixes = [_spec(n).tool_prefix for n in DOMAINS_A]
    assert len(set(prefixes)) == len(prefixes)
    names: list[str] = []
    for n in DOMAINS_A:
        spec = _spec(n)
        names += [t.name for t in compile_domain(spec, n).tools]
    assert len(set(names)) == len(names)


def _fill(p: ParamSpec, keys: dict[str, list[str]], rng: random.Random) -> Any:
    if p.type == "ref":
        return rng.choice(keys[p.ref or ""])
    if p.type == "enum":
        return rng.choice(p.values or [""])
    return {"money": 100.0, "float": 1.0, "int": 1, "bool": True, "date": "2026-06-15"}.get(p.type, "Noted.")


def _exercise(world: World, spec: DomainSpec, act: ActionSpec) -> tuple[bool, set[str]]:
    """Try the action on seeded rows until it has both succeeded once and been refused once."""
    keys = {e.name: [r[e.key] for r in world.runtime.find(e.name)] for e in spec.entities}
    rng = random.Random(act.name)
    first = next(p for p in act.params if p.type == "ref")
    refusals: set[str] = set()
    succeeded = False
    for attempt in range(MAX_ATTEMPTS):
        candidates = keys[first.ref or ""]
        args = {first.name: candidates[attempt % len(candidates)]}
        for p in act.params:
            if p is not first and p.required:
                args[p.name] = _fill(p, keys, rng)
        before = world.snapshot()
        result = world.call(spec.tool_prefix + act.name, args)
        if result.ok:
            assert result.changes, f"{act.name} succeeded without changing the world"
            succeeded = True
            world.restore(before)
        else:
            assert not result.changes
            refusals.add(result.error["code"] if result.error else "")
        if succeeded and refusals:
            break
    return succeeded, refusals


@pytest.mark.parametrize("name", DOMAINS_A)
def test_every_action_succeeds_and_refuses_on_seed_data(name: str) -> None:
    spec = _spec(name)
    world = World(compile_domain(spec, name))
    for act in spec.actions:
        succeeded, refusals = _exercise(world, spec, act)
        codes = {pre.code for pre in act.preconditions}
        assert succeeded, f"{act.name}: no seeded record satisfies its preconditions"
        assert refusals & codes, f"{act.name}: no seeded record violates a precondition ({refusals})"
        assert refusals <= codes | {"not_found"}, f"{act.name}: unexpected errors {refusals - codes}"
