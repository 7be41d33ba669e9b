"""Numbers a world cannot keep are refused at its boundary: an integral float past 64 bits as an integer argument
is invalid arguments (not an overflow inside SQLite), and action code that returns or stores NaN or infinity fails
the call (rolled back) instead of answering `NaN` or storing the text "Inf"."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

from toolshift.world import World, compile_domain
from toolshift.world.language.spec import parse_spec


def test_an_integral_float_past_64_bits_is_invalid_arguments(clinic):
    for value in (1e308, 9.3e18):
        result = clinic.call("list_patients", {"offset": value})
        assert not result.ok and result.error["code"] == "invalid_arguments", result.error
        assert "'offset'" in result.error["message"] and "64 bits" in result.error["message"]
    ok = clinic.call("list_patients", {"offset": 2.0, "limit": 3.0})
    assert ok.ok and len(ok.result["items"] if isinstance(ok.result, dict) else ok.result) <= 3


def test_the_cli_says_invalid_arguments_for_1e308():
    done = subprocess.run(
        [sys.executable, "-m", "toolshift", "world", "call", "clinic", "list_patients", "--args", '{"offset": 1e308}'],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "'offset'" in done.stderr and "internal_error" not in done.stderr, (
        done.stderr
    )


def _world(tiny_data, code: str, effect: str = "write") -> World:
    data = copy.deepcopy(tiny_data)
    data["actions"].append(
        {
            "name": "odd_number",
            "description": "Computes a number.",
            "effect": effect,
            "params": [{"name": "customer_id", "type": "ref", "ref": "customer"}],
            "code": code,
        }
    )
    return World(compile_domain(parse_spec(data, "tiny.yaml"), "tiny.yaml"))


def test_action_code_returning_nan_fails_the_call(tiny_data):
    world = _world(tiny_data, "return {'ratio': float('nan')}", effect="read")
    result = world.call("odd_number", {"customer_id": "C001"})
    assert not result.ok and result.error["code"] == "internal_error" and "'ratio'" in result.error["message"]


def test_action_code_storing_infinity_fails_and_rolls_back(tiny_data):
    world = _world(tiny_data, "update('customer', customer_id, credit=float('inf'))\nreturn 'ok'")
    before = world.call("get_customer", {"customer_id": "C001"}).result
    result = world.call("odd_number", {"customer_id": "C001"})
    assert not result.ok and result.error["code"] == "internal_error" and result.changes == []
    after = world.call("get_customer", {"customer_id": "C001"}).result
    assert after == before and json.dumps(after, allow_nan=False)
