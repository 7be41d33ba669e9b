"""Tool catalogs: the verb rule, MCP annotations (from a real world's tools), files and bad input."""

from __future__ import annotations

import json

import mcp.types as mcp_types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolshift.errors import BadInputError
from toolshift.traces.catalog import (
    CatalogTool,
    ToolCatalog,
    catalog_by_verb,
    catalog_from_mcp_tools,
    catalog_path,
    label_by_verb,
    load_catalog,
    save_catalog,
)


@pytest.mark.parametrize(
    ("name", "effect"),
    [
        ("get_user_details", "read"),
        ("search_direct_flight", "read"),
        ("find_user_id_by_email", "read"),
        ("list_all_airports", "read"),
        ("book_reservation", "write"),
        ("cancel_pending_order", "write"),
        ("modify_user_address", "write"),
        ("exchange_delivered_order_items", "write"),
        ("return_delivered_order_items", "write"),
        ("send_certificate", "write"),
        ("email.reply_email", "write"),
        ("email.forward_email", "write"),
        ("calendar.create_event", "write"),
        ("project_management.delete_task", "write"),
        ("updateCustomerRecord", "write"),
        ("think", "neither"),
        ("calculate", "neither"),
        ("transfer_to_human_agents", "neither"),
    ],
)
def test_verb_rule(name, effect):
    label = label_by_verb(name)
    assert label is not None and label[0] == effect


def test_verb_rule_does_not_guess():
    assert label_by_verb("frobnicate_widget") is None
    catalog, unlabelled = catalog_by_verb("d", ["get_a", "frobnicate_widget", "get_a"])
    assert [t.name for t in catalog.tools] == ["get_a"] and unlabelled == ["frobnicate_widget"]
    assert catalog.tools[0].origin == "verb-rule"


def test_mcp_annotations_decide_before_the_verb_rule():
    tools = [
        mcp_types.Tool(
            name="get_thing",
            inputSchema={"type": "object"},
            annotations=mcp_types.ToolAnnotations(readOnlyHint=False),
        ),
        mcp_types.Tool(
            name="frob",
            inputSchema={"type": "object"},
            annotations=mcp_types.ToolAnnotations(readOnlyHint=True),
        ),
        {"name": "purge", "inputSchema": {}, "annotations": {"destructiveHint": True}},
        {"name": "cancel_order", "inputSchema": {}},
        {"name": "zap", "inputSchema": {}},
        {"name": "think", "inputSchema": {}, "annotations": {"readOnlyHint": True}},
    ]
    cat = catalog_from_mcp_tools("d", tools, neither=["think"])
    got = {t.name: (t.effect, t.origin) for t in cat.tools}
    assert got == {
        "get_thing": ("write", "mcp-annotation"),
        "frob": ("read", "mcp-annotation"),
        "purge": ("write", "mcp-annotation"),
        "cancel_order": ("write", "verb-rule"),
        "zap": ("write", "verb-rule"),
        "think": ("neither", "manual"),
    }


def test_catalog_from_a_real_worlds_tools():
    world_mod = pytest.importorskip("toolshift.world")
    world = world_mod.World.load("clinic")
    cat = catalog_from_mcp_tools("clinic", world.tools)
    assert {t.origin for t in cat.tools} == {"mcp-annotation"}
    assert cat.effects() == {t.name: t.effect for t in world.tools}


def test_file_round_trip_and_merge(tmp_path):
    cat = ToolCatalog(domain="d", tools=[CatalogTool(name="a", effect="read", origin="manual")])
    merged = cat.merged(
        [
            CatalogTool(name="a", effect="write", origin="verb-rule"),
            CatalogTool(name="b", effect="write", origin="verb-rule"),
        ]
    )
    assert merged.effects() == {"a": "read", "b": "write"}
    path = save_catalog(merged, catalog_path(tmp_path, "d"))
    assert path.name == "d.catalog.json" and load_catalog(path) == merged


def test_bad_catalog_files(tmp_path):
    path = tmp_path / "x.catalog.json"
    path.write_text(json.dumps({"format": "toolshift.catalog/7", "domain": "d"}))
    with pytest.raises(BadInputError, match="unknown catalog format"):
        load_catalog(path)
    path.write_text(json.dumps({"format": "toolshift.catalog/1", "domain": "d", "tools": [
        {"name": "a", "effect": "read", "origin": "manual"},
        {"name": "b", "effect": "maybe", "origin": "manual"},
    ]}))  # fmt: skip
    with pytest.raises(BadInputError) as err:
        load_catalog(path)
    assert (err.value.record, err.value.field) == (1, "effect")


def test_catalog_from_a_live_mcp_server_over_http(tmp_path):
    serve = pytest.importorskip("toolshift.world.mcp.serve")
    from typer.testing import CliRunner

    from toolshift.cli import app
    from toolshift.world import World, load_domain

    server = serve.WorldServer(load_domain("clinic"))
    with serve.http_server_thread(server) as url:
        result = CliRunner().invoke(
            app, ["traces", "catalog-mcp", url, "--domain", "clinic", "--out", str(tmp_path)]
        )
    assert result.exit_code == 0, result.output
    catalog = load_catalog(tmp_path / "clinic.catalog.json")
    assert catalog.effects() == {t.name: t.effect for t in World.load("clinic").tools}
    assert {t.origin for t in catalog.tools} == {"mcp-annotation"}


def test_an_unreachable_mcp_server_is_a_clear_error():
    import anyio

    from toolshift.errors import ToolshiftError
    from toolshift.traces.mcp_catalog import catalog_from_mcp_server

    with pytest.raises(ToolshiftError, match="cannot list tools"):
        anyio.run(lambda: catalog_from_mcp_server("http://127.0.0.1:9/mcp", "x"))


@given(st.text(max_size=40))
def test_verb_rule_labels_any_name_or_declines(name):
    label = label_by_verb(name)
    assert label is None or label[0] in ("read", "write", "neither")
