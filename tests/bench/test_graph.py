"""Tool dependency graphs: edges typed by entity key, query starts, JSON round trip, PNG, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.bench.domains import bench_domain_names
from toolshift.bench.graph import DependencyGraph, build_graph, require_usable, signatures
from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.world.state.registry import load_domain


def graph_of(name: str) -> DependencyGraph:
    d = load_domain(name)
    return build_graph(d.spec, signatures(d.tools, d.spec))


def edge(g: DependencyGraph, a: str, b: str) -> set[str]:
    return {e.vtype for e in g.edges if e.source == a and e.target == b}


def test_edges_follow_entity_keys():
    g = graph_of("customer_support")
    assert edge(g, "cs_get_order", "cs_get_customer") == {"key:customer"}
    assert edge(g, "cs_search_customers", "cs_list_customer_orders") == {"key:customer"}
    assert "key:order" in edge(g, "cs_list_customer_orders", "cs_refund_order")
    # the refund action inserts a refund row: its result can feed the refund getter
    assert edge(g, "cs_refund_order", "cs_get_refund") == {"key:refund"}
    # nothing an agent list returns is an order key
    assert not edge(g, "cs_list_agents", "cs_refund_order")


def test_query_starts_take_what_a_user_knows():
    g = graph_of("customer_support")
    starts = set(g.query_starts())
    assert {"cs_search_customers", "cs_get_order", "cs_get_ticket"} <= starts
    assert "cs_get_customer" not in starts  # customer numbers are internal: not a lookup field
    assert set(require_usable(g)) == set(g.write_tools())


@pytest.mark.parametrize("name", bench_domain_names())
def test_every_bench_domain_graph_is_consistent_and_usable(name: str):
    g = graph_of(name)
    nodes = {n.tool: n for n in g.nodes}
    for e in g.edges:
        assert e.vtype in nodes[e.source].outputs
        assert nodes[e.target].params[e.param] == e.vtype
    assert require_usable(g)


def test_graph_json_round_trip_and_bad_format(tmp_path: Path):
    g = graph_of("payroll")
    path = tmp_path / "g.json"
    g.save(path)
    assert DependencyGraph.load(path) == g
    data = json.loads(path.read_text())
    data["format"] = "toolshift.bench-graph/9"
    path.write_text(json.dumps(data))
    with pytest.raises(BadInputError, match=r"g\.json.*format"):
        DependencyGraph.load(path)


def test_cli_graph_writes_png_and_json(tmp_path: Path):
    res = CliRunner().invoke(app, ["bench", "graph", "it_assets", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "it_assets.graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    loaded = DependencyGraph.load(tmp_path / "it_assets.graph.json")
    assert loaded.domain == "it_assets" and loaded.edges
