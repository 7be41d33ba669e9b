"""Argument checks (D146): the compiled `jsonschema-rs` yes/no never accepts what jsonschema refuses, and a world's
verdict and message are exactly jsonschema's, on every built-in domain's tools."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.world.state.compiler import compile_domain
from toolshift.world.state.registry import builtin_domains, load_domain_spec
from toolshift.world.state.validation import FORMATS, ArgumentSchema, SchemaProblem

TRICKY = [
    "2024-01-01", "2024-02-30", "2024-1-01", "2024-01-01\n", "2024-01-01T10:00", "20240101", "0000-01-01",
    "a@b", "a@", "@", "not an email", "x@y.z", "", " ", "PAT-00001", "1e3", "true", "null", "١٢٣", "é",
]  # fmt: skip


@cache
def schemas() -> list[tuple[str, dict[str, Any]]]:
    """(domain/tool, input schema) of every tool every built-in domain compiles to."""
    out = []
    for name, path in sorted(builtin_domains().items()):
        domain = compile_domain(load_domain_spec(path), str(path), with_data=False)
        out += [(f"{name}/{t.name}", t.input_schema) for t in domain.tools]
    return out


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.sampled_from(TRICKY)
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)  # fmt: skip


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, Any]]:
    where, schema = draw(st.sampled_from(schemas()))
    props: dict[str, Any] = schema.get("properties", {})
    args: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(sorted(props)), unique=True)) if props else []:
        enum = [v for v in (props[name].get("enum") or [])]
        args[name] = draw(st.sampled_from(enum) | VALUES if enum else VALUES)
    if draw(st.integers(0, 9)) == 0:
        args["zz_not_a_parameter"] = draw(SCALARS)
    return where, schema, args


@settings(deadline=None, max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(call=calls())
def test_the_verdict_and_message_are_jsonschemas_and_the_fast_check_is_never_more_lenient(call):
    where, schema, args = call
    slow = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)
    want = jsonschema.exceptions.best_match(slow.iter_errors(args))
    if jsonschema_rs.validator_for(schema, validate_formats=True).is_valid(args):
        assert want is None, (where, args, want.message)
    got = ArgumentSchema(schema).problem(args)
    assert (got is None) == (want is None), (where, args)
    if want is not None:
        assert (got.message, list(got.absolute_path)) == (want.message, list(want.absolute_path))


def test_every_built_in_schema_compiles_in_the_fast_checker():
    for where, schema in schemas():
        assert ArgumentSchema(schema)._fast is not None, where


def test_formats_jsonschema_does_not_check_are_not_refused():
    schema = {"type": "object", "properties": {"u": {"type": "string", "format": "uri"}}}
    assert ArgumentSchema(schema).problem({"u": "not a uri"}) is None


def test_an_invalid_schema_is_a_schema_problem_naming_the_keyword():
    with pytest.raises(SchemaProblem, match=r"'strin'"):
        ArgumentSchema({"type": "object", "properties": {"x": {"type": "strin"}}})


def test_a_value_the_fast_checker_cannot_take_is_judged_by_jsonschema():
    schema = {"type": "object", "properties": {"x": {"type": "object"}}}
    assert ArgumentSchema(schema).problem({"x": {1: "int key"}}) is None  # jsonschema takes any mapping
