"""The version middleware: one ecosystem version of a bench build served through the gateway, as `bench serve`
serves it, and recorded with the version bench's evaluation reads."""

from __future__ import annotations

import anyio
import pytest
from typer.testing import CliRunner

from toolshift.bench.build import build_domain, write_manifest
from toolshift.bench.ecosystem.store import load_ecosystem, version_world
from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.server import in_memory_client
from toolshift.traces.store import iter_episodes

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def evolved(tmp_path_factory):
    out = tmp_path_factory.mktemp("gateway-build")
    build_domain(out, "payroll", seed=0, per_domain=10)
    write_manifest(out, ["payroll"], 0, 10)
    result = CliRunner().invoke(app, ["bench", "evolve", str(out), "--versions", "3"])
    assert result.exit_code == 0, result.output
    return out


def test_serves_one_version_and_records_it(evolved, tmp_path):
    eco = load_ecosystem(evolved)
    v1 = {t.name for t in version_world(evolved, "payroll", 1)[0].tools}
    v3_world, _ = version_world(evolved, "payroll", 3)
    v3 = {t.name for t in v3_world.tools}
    assert v1 != v3  # the versions differ, so the listing says which one is served
    cfg = GatewayConfig(
        backends=[{"name": "payroll", "build": str(evolved), "domain": "payroll", "version": 3}],
        middleware=["record"],
        record={"out": str(tmp_path / "rec")},
    )
    gw = build_gateway(cfg)
    server = GatewayServer(gw)
    read = next(
        t
        for t in v3_world.tools
        if t.effect == "read" and not t.input_schema.get("required") and "_list_" in t.name
    )

    async def main() -> None:
        async with gw.running(), in_memory_client(server) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed == v3
            result = await client.call_tool(read.name, {})
            assert not result.is_error, result.content

    anyio.run(main)
    (episode,) = iter_episodes(tmp_path / "rec" / "payroll.episodes.jsonl")
    assert episode.ecosystem_version == f"{eco.id}/v3" and episode.domain == "payroll"


def test_a_version_the_build_lacks_is_refused(evolved):
    cfg = GatewayConfig(backends=[{"name": "p", "build": str(evolved), "domain": "payroll", "version": 9}])
    with pytest.raises(BadInputError, match=r"versions 1\.\.3, not 9"):
        build_gateway(cfg)
