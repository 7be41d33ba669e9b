"""Actions implemented in Python: found only among implementations installed packages register (entry points)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from toolshift.errors import BadInputError
from toolshift.world import World, compile_domain
from toolshift.world.language.actions import ENTRY_POINT_GROUP, registered_actions, unregister_action
from toolshift.world.language.spec import parse_spec

PACKAGE = """
import datetime


def credit(rt, args):
    row = rt.require("customer", args["customer_id"])
    rt.update("customer", row["customer_id"], credit=round(row["credit"] + args["amount"], 2))
    return {"customer": rt.get("customer", row["customer_id"]), "on": datetime.date(2026, 1, 2)}
"""


@pytest.fixture
def installed_package(tmp_path, monkeypatch):
    """A real distribution on sys.path declaring one action implementation by entry point."""
    (tmp_path / "toolshift_probe_actions").mkdir()
    (tmp_path / "toolshift_probe_actions" / "__init__.py").write_text(PACKAGE, encoding="utf-8")
    dist = tmp_path / "toolshift_probe_actions-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toolshift-probe-actions\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nprobe.credit = toolshift_probe_actions:credit\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "probe.credit"
    unregister_action("probe.credit")
    sys.modules.pop("toolshift_probe_actions", None)


def _credit_action(impl: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "add_credit",
        "description": "Add credit to a customer.",
        "effect": "write",
        "params": [
            {"name": "customer_id", "type": "ref", "ref": "customer"},
            {"name": "amount", "type": "money"},
        ],
        "preconditions": [
            {"check": "amount > 0", "code": "bad_amount", "message": "{amount} is not positive"}
        ],
        "impl": impl,
        **extra,
    }


def test_an_entry_point_implementation_runs_after_the_preconditions(tiny_data, installed_package):
    tiny_data["actions"].append(_credit_action(installed_package))
    assert installed_package in registered_actions()
    world = World(compile_domain(parse_spec(tiny_data, "tiny.yaml"), "tiny.yaml"))
    before = world.call("get_customer", {"customer_id": "C001"}).result["credit"]
    r = world.call("add_credit", {"customer_id": "C001", "amount": 2.5})
    assert r.ok, r.error
    assert r.result == {
        "customer": {**r.result["customer"], "credit": round(before + 2.5, 2)},
        "on": "2026-01-02",
    }
    assert [(c.field, c.before, c.after) for c in r.changes] == [("credit", before, round(before + 2.5, 2))]
    refused = world.call("add_credit", {"customer_id": "C001", "amount": -1})
    assert refused.error == {"code": "bad_amount", "message": "-1 is not positive"} and not refused.changes


def test_a_saved_world_reopens_with_its_registered_implementation(tmp_path, tiny_data, installed_package):
    tiny_data["actions"].append(_credit_action(installed_package))
    world = World(compile_domain(parse_spec(tiny_data, "tiny.yaml"), "tiny.yaml"))
    reopened = World.open(world.save(tmp_path / "w.sqlite"))
    assert reopened.call("add_credit", {"customer_id": "C002", "amount": 1}).ok


@pytest.mark.parametrize(
    ("impl", "extra", "field", "why"),
    [
        ("probe.nowhere", {}, "impl", "no installed package registers the implementation 'probe.nowhere'"),
        ("os:system", {}, "impl", "'os:system' is not an implementation name"),
        ("builtins.exec", {}, "impl", "no installed package registers"),
        ("probe.credit", {"code": "return 1"}, "", "either `code` or `impl`, not both"),
    ],
)
def test_an_unregistered_or_malformed_implementation_is_refused_at_load(tiny_data, impl, extra, field, why):
    tiny_data["actions"].append(_credit_action(impl, **extra))
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "tiny.yaml")
    index = len(tiny_data["actions"]) - 1
    assert err.value.field == (f"actions[{index}].{field}" if field else f"actions[{index}]")
    assert why in str(err.value)


def test_an_action_needs_code_or_impl(tiny_data):
    action = _credit_action("probe.credit")
    del action["impl"]
    tiny_data["actions"].append(action)
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "tiny.yaml")
    assert "needs `code`" in str(err.value)
