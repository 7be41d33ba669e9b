"""The 19 department domain specs of batch B: shape, coherent seed data, and every custom action both
succeeds and refuses on seeded rows (its policy is real, and some seeded record satisfies it)."""

from __future__ import annotations

import functools
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.bench.domains import BENCH_DOMAINS_DIR
from toolshift.world.language.spec import ActionSpec, DomainSpec, ParamSpec, load_spec
from toolshift.world.state.compiler import CompiledDomain, compile_domain
from toolshift.world.state.runtime import Runtime
from toolshift.world.state.world import World, compose_changes

DOMAINS_B = [
    "returns_rma",
    "field_service",
    "network_operations",
    "incident_management",
    "change_management",
    "software_licensing",
    "cloud_accounts",
    "security_access",
    "marketing_campaigns",
    "event_management",
    "sales_pipeline",
    "partner_programs",
    "learning_development",
    "benefits_enrollment",
    "time_attendance",
    "real_estate_leases",
    "energy_utilities",
    "lab_samples",
    "pharmacy_inventory",
]

TRIALS = 1500
"""Argument combinations tried per action before giving up on seeing both a success and a refusal."""


def _spec(name: str) -> DomainSpec:
    return load_spec(BENCH_DOMAINS_DIR / f"{name}.yaml")


@pytest.mark.parametrize("name", DOMAINS_B)
def test_domain_shape(name: str) -> None:
    spec = _spec(name)
    assert spec.name == name
    assert len(spec.entities) >= 4
    assert len(spec.relations) >= 3
    assert spec.tool_prefix.endswith("_") and 2 <= len(spec.tool_prefix) - 1 <= 5
    assert len(spec.actions) >= 3 and all(a.preconditions for a in spec.actions)
    assert sum(1 for e in spec.entities if e.lookup) >= 3, "tasks need query-type starting points"
    domain = compile_domain(spec, name)
    assert 20 <= len(domain.tools) <= 22
    assert all(t.name.startswith(spec.tool_prefix) for t in domain.tools)
    assert 800 <= sum(domain.row_counts().values()) <= 1600


def test_batch_prefixes_and_tool_names_are_unique() -> None:
    specs = [_spec(n) for n in DOMAINS_B]
    assert len({s.tool_prefix for s in specs}) == len(specs)
    names = [t.name for s in specs for t in compile_domain(s, s.name).tools]
    assert len(set(names)) == len(names)


def _value(p: ParamSpec, keys: dict[str, list[str]], today: str, rng: random.Random) -> Any:
    """An argument of the parameter's type, spread wide enough to land on both sides of a policy."""
    if p.type == "ref":
        return rng.choice(keys[p.ref or ""])
    if p.type == "enum":
        return rng.choice(p.values or [""])
    if p.type in ("date", "datetime"):
        day = Runtime.add_days(today, rng.choice([-5, 0, 4, 12, 30, 75]))
        return day if p.type == "date" else f"{day}T10:00"
    choices: dict[str, list[Any]] = {
        "int": [0, 1, 2, 75, 101],
        "float": [0.5, 3.0, 12.0, 45000.0],
        "money": [25.0, 400.0, 90000.0],
        "bool": [True, False],
        "email": ["approver@corp.example.com"],
    }
    return rng.choice(choices.get(p.type, ["Checked with the requester.", "Customer asked for it."]))


def _exercise(world: World, spec: DomainSpec, act: ActionSpec) -> tuple[int, set[str]]:
    keys = {e.name: [r[e.key] for r in world.runtime.find(e.name)] for e in spec.entities}
    rng = random.Random(f"{spec.name}:{act.name}")
    start = world.snapshot()
    successes, refusals = 0, set()
    for _ in range(TRIALS):
        args = {
            p.name: _value(p, keys, spec.today, rng) for p in act.params if p.required or rng.random() < 0.5
        }
        result = world.call(spec.tool_prefix + act.name, args)
        if result.ok:
            assert result.changes, f"{act.name} succeeded without changing the world: {args}"
            assert world.changes_since(start), "reported changes are real changes"
            successes += 1
            world.restore(start)
        else:
            assert result.error is not None and not result.changes, "a refused call leaves nothing behind"
            refusals.add(result.error["code"])
        if successes and refusals:
            break
    return successes, refusals


@pytest.mark.slow
@pytest.mark.parametrize("name", DOMAINS_B)
def test_every_action_succeeds_and_refuses_on_seed_data(name: str) -> None:
    spec = _spec(name)
    world = World(compile_domain(spec, name))
    for act in spec.actions:
        successes, refusals = _exercise(world, spec, act)
        codes = {pre.code for pre in act.preconditions}
        assert successes, f"{act.name}: no seeded record satisfies its preconditions"
        assert refusals & codes, f"{act.name}: no seeded record violates a precondition ({refusals})"
        assert "internal_error" not in refusals, f"{act.name} raised inside its code"


@pytest.mark.parametrize("name", DOMAINS_B)
def test_seed_rows_respect_row_dependent_rules(name: str) -> None:
    """Fields generated only for some statuses are NULL elsewhere (e.g. no technician on an open work order)."""
    spec = _spec(name)
    world = World(compile_domain(spec, name))
    checked = 0
    for e in spec.entities:
        rows = world.runtime.find(e.name)
        for f in e.fields:
            when = (f.gen.model_extra or {}).get("when") if f.gen is not None else None
            if not when:
                continue
            other = (f.gen.model_extra or {}).get("else")
            for row in rows:
                match = all(row[k] in (v if isinstance(v, list) else [v]) for k, v in when.items())
                if not match:
                    assert row[f.name] == other, f"{e.name}.{f.name} set outside {when}"
                    checked += 1
    if any(
        f.gen is not None and "when" in (f.gen.model_extra or {}) for e in spec.entities for f in e.fields
    ):
        assert checked > 0


@functools.cache
def _compiled(name: str) -> CompiledDomain:
    return compile_domain(_spec(name), name)


def _numeric_minimums(world: World, spec: DomainSpec) -> dict[tuple[str, str], float]:
    out = {}
    for e in spec.entities:
        for f in e.fields:
            if f.type in ("int", "float", "money"):
                (low,) = world.conn.execute(f'SELECT MIN("{f.name}") FROM "{e.name}"').fetchone()
                if low is not None:
                    out[(e.name, f.name)] = low
    return out


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(DOMAINS_B),
    calls=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2**20)), min_size=1, max_size=15),
)
def test_random_action_sequences_report_exact_changes_and_keep_balances(
    name: str, calls: list[tuple[int, int]]
) -> None:
    """Whatever the agent tries: actions never crash, report exactly what they changed, and the
    preconditions keep every quantity, balance and budget that starts non-negative from going negative."""
    spec = _spec(name)
    world = World(_compiled(name))
    keys = {e.name: [r[e.key] for r in world.runtime.find(e.name)] for e in spec.entities}
    floors = {k: v for k, v in _numeric_minimums(world, spec).items() if v >= 0}
    start = world.snapshot()
    reported = []
    for index, seed in calls:
        act = spec.actions[index % len(spec.actions)]
        rng = random.Random(seed)
        args = {p.name: _value(p, keys, spec.today, rng) for p in act.params if p.required}
        before = world.snapshot()
        result = world.call(spec.tool_prefix + act.name, args)
        assert result.ok or (result.error or {}).get("code") != "internal_error", result.error
        assert compose_changes(result.changes) == world.changes_since(before)
        reported += result.changes
    assert compose_changes(reported) == world.changes_since(start)
    for (entity, field), _ in floors.items():
        (low,) = world.conn.execute(f'SELECT MIN("{field}") FROM "{entity}"').fetchone()
        assert low is None or low >= 0, f"{entity}.{field} went negative"
