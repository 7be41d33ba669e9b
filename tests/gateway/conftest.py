"""Fixtures for the gateway tests: a flow learned from sessions recorded through the gateway itself."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.build import prepare
from toolshift.world import World, load_domain

from .scripted import APPOINTMENTS, run_sessions, script


@pytest.fixture(scope="session")
def clinic_flow(tmp_path_factory) -> tuple[Path, Path]:
    """(flow file, catalog file): learned by `flows learn` from eight scripted sessions the gateway recorded."""
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.model import save_flow
    from toolshift.flows.timeline import Catalog, timelines
    from toolshift.traces.catalog import load_catalog
    from toolshift.traces.store import iter_episodes

    out = tmp_path_factory.mktemp("clinic-flow")
    world = World(load_domain("clinic"))
    gw = build_gateway(
        GatewayConfig(
            backends=[{"name": "clinic", "world": "clinic"}],
            middleware=["record"],
            record={"out": str(out / "rec")},
        )
    )
    server = GatewayServer(gw)

    async def main() -> None:
        await prepare(gw)
        async with gw.running():
            await run_sessions(server, [script(a, world) for a in APPOINTMENTS[:8]])

    anyio.run(main)
    catalog_path = out / "rec" / "clinic.catalog.json"
    catalog = Catalog.of(load_catalog(catalog_path))
    episodes = list(iter_episodes(out / "rec" / "clinic.episodes.jsonl"))
    flow = learn_flow(timelines(episodes, catalog), catalog, learn_from_all=True)
    flow_path = save_flow(flow, out / "clinic.flow.json")
    return flow_path, catalog_path
