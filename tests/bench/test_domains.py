"""The benchmark catalog: 42 domain specs of the required shape, and tool names unique catalog-wide."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.bench.domains import bench_domain_names, catalog_collisions, domain_info
from toolshift.cli import app
from toolshift.world.state.registry import load_domain

NAMES = bench_domain_names()


def test_at_least_42_domains():
    assert len(NAMES) >= 42, f"{len(NAMES)} bench domains"


@pytest.mark.parametrize("name", NAMES)
def test_domain_shape(name: str):
    d = load_domain(name)
    s = d.spec
    assert s.name == name
    assert s.tool_prefix and s.tool_prefix.endswith("_")
    assert len(s.entities) >= 4 and s.relations and s.policy.strip()
    assert len(d.tools) >= 15
    guarded = [a for a in s.actions if a.preconditions]
    assert len(guarded) >= 3
    assert all(t.name.startswith(s.tool_prefix) for t in d.tools)
    assert any(e.lookup for e in s.entities)
    rows = sum(d.row_counts().values())
    assert 100 <= rows <= 2000


def test_tool_names_and_prefixes_unique_across_the_catalog():
    infos = [domain_info(n) for n in NAMES]
    assert catalog_collisions(infos) == {}
    prefixes = [i.prefix for i in infos]
    assert len(set(prefixes)) == len(prefixes)
    total = sum(i.tools for i in infos)
    if len(NAMES) >= 42:
        assert 800 <= total <= 900, total


def test_table_names_unique_across_the_catalog():
    """The standard setting serves every domain as one world: a table name may belong to one domain only
    (otherwise two departments' row changes could not be told apart)."""
    owners: dict[str, list[str]] = {}
    for n in NAMES:
        for table in load_domain(n).tables:
            owners.setdefault(table, []).append(n)
    assert {t: ds for t, ds in owners.items() if len(ds) > 1} == {}


def test_cli_domains_table(tmp_path: Path):
    res = CliRunner().invoke(app, ["bench", "domains"])
    assert res.exit_code == 0, res.output
    assert "customer_support" in res.output and "total" in res.output
