"""Random calls to every tool of each built-in world: no handler crashes, and reported changes are exact."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.world import CompiledDomain, World, compose_changes, load_domain

DOMAINS = ["clinic", "library", "freight_depot"]


def key_owners(domain: CompiledDomain) -> dict[str, str]:
    """Parameter name → the entity whose keys it holds (keys, ref fields and ref action params)."""
    owners: dict[str, str] = {}
    for e in domain.spec.entities:
        owners.setdefault(e.key, e.name)
        for f in e.fields:
            if f.type == "ref" and f.ref:
                owners.setdefault(f.name, f.ref)
    for a in domain.spec.actions:
        for p in a.params:
            if p.type == "ref" and p.ref:
                owners.setdefault(p.name, p.ref)
    return owners


def value_strategy(name: str, schema: dict[str, Any], keys: dict[str, list[str]], owners: dict[str, str]):
    if name in owners and schema.get("type") == "string":
        pool = [*keys[owners[name]][:25], "NOPE-0"]
        return st.sampled_from(pool)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "integer":
        return st.integers(schema.get("minimum", -2), min(schema.get("maximum", 50), 50))
    if kind == "number":
        return st.sampled_from([-1.0, 0.0, 12.5, 99.99])
    if kind == "boolean":
        return st.booleans()
    if schema.get("format") == "date":
        return st.sampled_from(["2026-05-20", "2026-06-01", "2026-06-15"])
    if "pattern" in schema:
        return st.sampled_from(["2026-05-20T09:00", "2026-06-03T10:30", "2026-06-10T09:00"])
    if schema.get("format") == "email":
        return st.sampled_from(["a@x.example", "b@y.example"])
    return st.sampled_from(["a", "Ada", "passed", "twice daily", ""])


@pytest.mark.slow
@pytest.mark.parametrize("name", DOMAINS)
def test_random_calls_never_crash_and_report_exact_changes(name):
    domain = load_domain(name)
    owners = key_owners(domain)
    base = World(domain)
    keys = {
        t: [r[0] for r in base.conn.execute(f'SELECT "{domain.tables[t].key}" FROM "{t}"')]
        for t in domain.tables
    }

    def call_strategy(tool):
        props = tool.input_schema.get("properties", {})
        required = tool.required
        fixed = {p: value_strategy(p, props[p], keys, owners) for p in required}
        optional = {p: value_strategy(p, s, keys, owners) for p, s in props.items() if p not in required}
        return st.fixed_dictionaries(fixed, optional=optional).map(lambda args: (tool.name, args))

    calls = st.one_of([call_strategy(t) for t in base.tools])

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(calls, min_size=5, max_size=30))
    def run(sequence):
        world = World(domain)
        start = world.snapshot()
        reported = []
        for tool, args in sequence:
            before = world.snapshot()
            result = world.call(tool, args)
            assert result.error is None or result.error["code"] != "internal_error", (
                tool,
                args,
                result.error,
            )
            assert result.changes == world.changes_since(before)
            reported += result.changes
        assert compose_changes(reported) == world.changes_since(start)
        world.close()

    run()
