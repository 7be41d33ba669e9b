"""The steward middleware: Steward's supply mounted in the gateway in front of one version of a real build."""

from __future__ import annotations

import json

import anyio
import pytest
from typer.testing import CliRunner

from toolshift.bench.ecosystem.store import version_world
from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.server import in_memory_client
from toolshift.traces.store import iter_episodes

pytestmark = pytest.mark.slow

DOMAIN = "accounts_payable"
STEWARD_TOOLS = {"steward_plan", "retrieve_tools", "explore_capabilities"}


@pytest.fixture(scope="module")
def library(tmp_path_factory, evolved_build):
    out = evolved_build(tmp_path_factory.mktemp("steward-build"), [DOMAIN], 20, 2)
    lib = out / "lib-v2.sqlite"
    result = CliRunner().invoke(
        app,
        ["steward", "build", str(out), "--out", str(lib), "--version", "2", "--runs", str(out / "runs")],
    )
    assert result.exit_code == 0, result.output
    return out, lib


def _config(build, lib, tmp_path, middleware=("steward", "record")) -> GatewayConfig:
    return GatewayConfig(
        backends=[{"name": DOMAIN, "build": str(build), "domain": DOMAIN, "version": 2}],
        middleware=list(middleware),
        steward={"library": str(lib)},
        record={"out": str(tmp_path / "rec")},
    )


def test_supplies_tools_and_skills_and_refuses_the_rest(library, tmp_path):
    build, lib = library
    world, _ = version_world(build, DOMAIN, 2)
    v2 = {t.name for t in world.tools}
    gw = build_gateway(_config(build, lib, tmp_path))
    server = GatewayServer(gw)
    any_tool = sorted(v2)[0]

    async def main() -> list[str]:
        async with gw.running(), in_memory_client(server) as client:
            assert {t.name for t in (await client.list_tools()).tools} == STEWARD_TOOLS
            refused = await client.call_tool(any_tool, {})
            assert refused.is_error and "not been supplied" in refused.content[0].text
            found = await client.call_tool("retrieve_tools", {"query": "list the invoices of a vendor"})
            assert found.is_error  # steward_plan first: the conversation's request starts the supply
            await client.call_tool("steward_plan", {"request": "List the open invoices of a vendor."})
            found = json.loads(
                (await client.call_tool("retrieve_tools", {"query": "list invoices"})).content[0].text
            )
            names = [t["name"] for t in found["tools"]]
            assert 0 < len(names) <= 5 and set(names) <= v2  # only this version's catalog
            listed = {t.name for t in (await client.list_tools()).tools}
            assert set(names) <= listed  # what was supplied is now listed
            assert listed - STEWARD_TOOLS <= v2
            reached = await client.call_tool(names[0], {})
            assert "not been supplied" not in reached.content[0].text  # forwarded to the backend
            return names

    names = anyio.run(main)
    metrics = gw.metrics()
    assert metrics["steward_refused_unsupplied"] == 1 and metrics["steward_supplied_calls"] == 1
    (episode,) = iter_episodes(tmp_path / "rec" / f"{DOMAIN}.episodes.jsonl")
    called = [c.name for m in episode.messages for c in (m.tool_calls or [])]
    assert called == [names[0]]  # record sits inside steward: it sees world calls only


def test_steward_config_is_checked(library, tmp_path):
    build, lib = library
    with pytest.raises(ValueError, match="steward must come first"):
        _config(build, lib, tmp_path, middleware=("record", "steward"))
    with pytest.raises(ValueError, match="exactly one build backend"):
        GatewayConfig(
            backends=[{"name": "c", "world": "clinic"}], middleware=["steward"], steward={"library": str(lib)}
        )
    with pytest.raises(ValueError, match="needs a steward section"):
        GatewayConfig(
            backends=[{"name": DOMAIN, "build": str(build), "domain": DOMAIN, "version": 2}],
            middleware=["steward"],
        )
    lib.with_name("bad.sqlite").write_bytes(b"not a library")
    with pytest.raises(BadInputError):
        build_gateway(_config(build, lib.with_name("bad.sqlite"), tmp_path))
