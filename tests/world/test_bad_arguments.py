"""Arguments a world cannot store faithfully are bad arguments with the field named, never `internal_error`;
error messages stay short whatever they quote; and nothing a handler raises escapes a call."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.world import Tool
from toolshift.world.limits import INTEGER_BOUND, MAX_MESSAGE_CHARS, MAX_STRING_CHARS

PROPERTY = settings(
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _refused(result, field: str) -> str:
    assert not result.ok and result.error["code"] == "invalid_arguments", result.error
    assert f"'{field}'" in result.error["message"], result.error
    assert result.changes == []
    return result.error["message"]


@PROPERTY
@given(value=st.sampled_from([math.nan, math.inf, -math.inf, float("1e999")]))
def test_non_finite_numbers_are_refused_and_nothing_is_stored(clinic, value):
    before = clinic.snapshot()
    message = _refused(
        clinic.call("update_medication", {"medication_id": "MED-001", "unit_price": value}), "unit_price"
    )
    assert "finite" in message
    assert clinic.changes_since(before) == []


@PROPERTY
@given(value=st.integers(min_value=INTEGER_BOUND) | st.integers(max_value=-INTEGER_BOUND - 1))
def test_integers_beyond_64_bits_are_bad_arguments(clinic, value):
    _refused(clinic.call("list_appointments", {"offset": value}), "offset")


def test_integers_at_the_64_bit_edge_are_accepted(clinic):
    r = clinic.call("list_appointments", {"offset": INTEGER_BOUND - 1})
    assert r.ok and r.result["items"] == []


@PROPERTY
@given(
    before=st.text(max_size=5),
    surrogate=st.characters(categories=["Cs"]),
    after=st.text(max_size=5),
)
def test_lone_surrogates_are_bad_arguments(clinic, before, surrogate, after):
    message = _refused(clinic.call("search_patients", {"full_name": before + surrogate + after}), "full_name")
    assert "Unicode" in message


@pytest.mark.parametrize(
    "text", ["%" * MAX_STRING_CHARS, "\U0001f600" * MAX_STRING_CHARS, "\\_" * (MAX_STRING_CHARS // 2)]
)
def test_searches_up_to_the_string_limit_run(clinic, text):
    r = clinic.call("search_patients", {"full_name": text})
    assert r.ok and r.result["total"] == 0


@PROPERTY
@given(
    extra=st.integers(1, 100_000), tool=st.sampled_from(["search_patients", "get_patient", "create_patient"])
)
def test_over_long_strings_are_bad_arguments_with_a_short_message(clinic, extra, tool):
    field = {"search_patients": "full_name", "get_patient": "patient_id", "create_patient": "full_name"}[tool]
    message = _refused(clinic.call(tool, {field: "x" * (MAX_STRING_CHARS + extra)}), field)
    assert len(message) <= MAX_MESSAGE_CHARS


@PROPERTY
@given(size=st.integers(MAX_MESSAGE_CHARS, MAX_STRING_CHARS), kind=st.sampled_from(["int", "str"]))
def test_no_error_message_echoes_a_whole_argument(clinic, size, kind):
    value: object = "x" * size if kind == "str" else ["x"] * size
    for tool, args in [
        ("get_patient", {"patient_id": value}),  # not_found (str) or a type error quoting the list
        ("frobnicate_" + "y" * size, {}),  # unknown tool
        ("get_patient", {"patient_id": "PAT-00001", "y" * min(size, MAX_STRING_CHARS): 1}),
    ]:
        r = clinic.call(tool, args)
        assert not r.ok and len(r.error["message"]) <= MAX_MESSAGE_CHARS, (tool, len(r.error["message"]))


def test_a_ten_megabyte_argument_gives_a_short_message(clinic):
    r = clinic.call("update_patient", {"patient_id": "PAT-00001", "phone": 7, "x": "y" * 10_000_000})
    assert r.error["code"] == "invalid_arguments" and len(r.error["message"]) <= MAX_MESSAGE_CHARS


def test_arguments_nested_past_the_limit_are_refused_without_recursion(clinic):
    deep: object = "x"
    for _ in range(100_000):
        deep = [deep]
    _refused(clinic.call("get_patient", {"patient_id": deep}), "patient_id")


@pytest.mark.parametrize(
    "raised", [SystemExit(2), GeneratorExit(), type("Escape", (BaseException,), {})("out")]
)
def test_a_handler_raising_any_non_cancellation_base_exception_is_an_internal_error(clinic, raised):
    def handler(runtime, args):
        runtime.world.conn.execute("UPDATE patient SET phone = 'lost' WHERE patient_id = 'PAT-00001'")
        raise raised

    clinic.add_tool(Tool("escape", "Raises.", {"type": "object", "properties": {}}, "write", handler))
    before = clinic.snapshot()
    r = clinic.call("escape", {})
    assert not r.ok and r.error["code"] == "internal_error" and type(raised).__name__ in r.error["message"]
    assert clinic.changes_since(before) == []  # rolled back
    assert clinic.call("get_patient", {"patient_id": "PAT-00001"}).ok


def test_keyboard_interrupt_still_interrupts(clinic):
    def handler(runtime, args):
        raise KeyboardInterrupt

    clinic.add_tool(Tool("interrupt", "Raises.", {"type": "object", "properties": {}}, "read", handler))
    with pytest.raises(KeyboardInterrupt):
        clinic.call("interrupt", {})


def _call(tool: str, args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolshift", "world", "call", "clinic", tool, "--args", args],
        capture_output=True,
        text=True,
        timeout=900,
        env={
            "COLUMNS": "200",
            "PATH": "/usr/bin:/bin",
            **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
        },
    )


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("update_medication", '{"medication_id": "MED-001", "unit_price": NaN}', "unit_price"),
        ("update_medication", '{"medication_id": "MED-001", "unit_price": Infinity}', "unit_price"),
        ("update_medication", '{"medication_id": "MED-001", "unit_price": 1e999}', "unit_price"),
        ("list_appointments", '{"offset": 9223372036854775808}', "offset"),
        ("search_patients", '{"full_name": "\\ud800"}', "full_name"),
        ("search_patients", json.dumps({"full_name": "a" * 60_000}), "full_name"),
    ],
)
def test_world_call_exits_2_naming_the_field(tool, args, field):
    proc = _call(tool, args)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-500:])
    assert (
        f"'{field}'" in proc.stderr and "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    )


@pytest.mark.parametrize("args", ["[" * 50_000 + "]" * 50_000, '{"offset": ' + "9" * 5000 + "}"])
def test_world_call_arguments_json_too_deep_or_too_long_exits_2(args):
    proc = _call("list_appointments", args)
    assert proc.returncode == 2 and "--args" in proc.stderr and "Traceback" not in proc.stderr


def test_world_call_with_a_huge_argument_prints_a_short_line():
    proc = _call("get_patient", json.dumps({"patient_id": "x" * 100_000}))  # a command line holds 128 KiB
    assert proc.returncode == 2 and len(proc.stderr) < 2 * MAX_MESSAGE_CHARS
