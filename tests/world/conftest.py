"""Fixtures for world tests: the compiled clinic, and a tiny spec written inline (with one registered action)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from toolshift.world import CompiledDomain, World, compile_domain, load_domain
from toolshift.world.language.actions import register_action
from toolshift.world.language.spec import parse_spec


@register_action("tests.sneaky_read")
def _sneaky_read(rt: Any, args: dict[str, Any]) -> str:
    """A registered implementation labelled read that writes anyway: the world must stop it."""
    rt.update("customer", args["customer_id"], vip=True)
    return "done"


TINY: dict[str, Any] = {
    "format": "toolshift.domain/1",
    "name": "tiny",
    "title": "Tiny shop",
    "policy": "Be nice.",
    "seed": 1,
    "entities": [
        {
            "name": "customer",
            "key": "customer_id",
            "id_format": "C{:03d}",
            "rows": 5,
            "lookup": ["name"],
            "fields": [
                {"name": "customer_id", "type": "string"},
                {"name": "name", "type": "string", "gen": {"kind": "person_name"}},
                {"name": "vip", "type": "bool", "required": False, "default": False},
                {"name": "credit", "type": "money", "gen": {"kind": "money", "min": 0, "max": 100}},
            ],
        },
        {
            "name": "order",
            "key": "order_id",
            "id_format": "O{:04d}",
            "rows": 12,
            "fields": [
                {"name": "order_id", "type": "string"},
                {"name": "customer_id", "type": "ref", "ref": "customer"},
                {"name": "total", "type": "money"},
                {
                    "name": "status",
                    "type": "enum",
                    "values": ["open", "shipped"],
                    "required": False,
                    "default": "open",
                },
                {"name": "placed_on", "type": "date"},
            ],
        },
    ],
    "relations": [{"name": "orders", "from": "customer", "to": "order", "via": "customer_id"}],
    "actions": [
        {
            "name": "ship_order",
            "description": "Ship an open order.",
            "effect": "write",
            "params": [{"name": "order_id", "type": "ref", "ref": "order"}],
            "preconditions": [
                {
                    "check": "get('order', order_id)['status'] == 'open'",
                    "code": "not_open",
                    "message": "{order_id} is not open",
                }
            ],
            "code": "update('order', order_id, status='shipped')\nreturn get('order', order_id)",
        },
        {
            "name": "explode",
            "description": "Writes, then fails with a Python exception.",
            "effect": "write",
            "params": [{"name": "customer_id", "type": "ref", "ref": "customer"}],
            "code": "update('customer', customer_id, name='changed')\ninsert('order', customer_id=customer_id, total=1.0, placed_on=today)\nreturn 1 / 0",
        },
        {
            "name": "sneaky_read",
            "description": "Labelled read, but its Python implementation writes.",
            "effect": "read",
            "params": [{"name": "customer_id", "type": "ref", "ref": "customer"}],
            "impl": "tests.sneaky_read",
        },
    ],
}


@pytest.fixture
def tiny_data() -> dict[str, Any]:
    """A fresh copy of the tiny spec document, to mutate."""
    return copy.deepcopy(TINY)


@pytest.fixture(scope="session")
def tiny_domain() -> CompiledDomain:
    return compile_domain(parse_spec(TINY, "tiny.yaml"), "tiny.yaml")


@pytest.fixture
def tiny(tiny_domain: CompiledDomain) -> World:
    return World(tiny_domain)


@pytest.fixture(scope="session")
def clinic_domain() -> CompiledDomain:
    return load_domain("clinic")


@pytest.fixture
def clinic(clinic_domain: CompiledDomain) -> World:
    return World(clinic_domain)
