"""Environment replay through the gateway beside the trace replay: the same episodes, lookups answered by a live
world; after a write that leaves a lookup's result unchanged only the environment can credit it."""

from __future__ import annotations

import anyio

from toolshift.flows.decide import Decider
from toolshift.flows.model import load_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import Catalog, timelines
from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.envreplay import replay_in_environment
from toolshift.traces.catalog import load_catalog
from toolshift.traces.store import iter_episodes
from toolshift.world import World, load_domain

from .scripted import APPOINTMENTS, run_sessions, script


def _recorded(tmp_path, sessions):
    gw = build_gateway(
        GatewayConfig(
            backends=[{"name": "clinic", "world": "clinic"}],
            middleware=["record"],
            record={"out": str(tmp_path)},
        )
    )

    async def main() -> None:
        async with gw.running():
            await run_sessions(GatewayServer(gw), sessions)

    anyio.run(main)
    return list(iter_episodes(tmp_path / "clinic.episodes.jsonl"))


def test_environment_and_trace_replay_agree_without_writes_between_and_differ_after_one(
    clinic_flow, tmp_path
):
    flow_path, catalog_path = clinic_flow
    catalog = Catalog.of(load_catalog(catalog_path))
    flow = load_flow(flow_path, catalog)
    world = World(load_domain("clinic"))
    plain = [script(a, world) for a in APPOINTMENTS[8:10]]
    written = []
    for a in APPOINTMENTS[10:12]:
        calls = script(a, world)
        # the write comes between the lookups and the agent's own reads, and leaves what they read unchanged
        written.append([calls[0], calls[3], calls[1], calls[2]])
    tl = timelines(_recorded(tmp_path / "rec", plain + written), catalog)
    trace = replay(tl, Decider(flow, "reach", 0.3, catalog))
    config = GatewayConfig(
        backends=[{"name": "clinic", "world": "clinic"}],
        middleware=["flows"],
        flows={"flow": str(flow_path), "catalog": str(catalog_path)},
    )
    env = anyio.run(replay_in_environment, tl, config)
    # the record cannot vouch for a lookup across the write: only the read after it (get_doctor, chained on
    # the agent's own get_patient) is saved there
    assert [len(e.saved_turns) for e in trace.episodes] == [2, 2, 1, 1]
    assert [e.saved_turns for e in env] == [2, 2, 2, 2]
    assert [e.detours for e in trace.episodes][2:] == [2, 2]
    assert [e.detours for e in env] == [0, 0, 0, 0]
    assert [e.lookups_made for e in env] == [2, 2, 3, 3]  # after the write, get_doctor is looked up afresh


def test_live_rows_count_turns_repeats_and_detours():
    from toolshift.gateway.liveflows import LiveEpisode, live_rows

    off = LiveEpisode("t1", False, 6, ["a", "b", "c"], [False, False, True], [[], [], []], 0, False)
    on = LiveEpisode("t1", True, 4, ["a", "b", "c"], [False, False, True], [["b", "x"], [], []], 1, True)
    row = live_rows("embedded", [(off, on)], "payroll")
    # 2 turns saved; 2 lookups, the agent made one of them again; "x" the agent never called with flows off
    assert row == ["embedded", "payroll", "1", "6", "4", "+2", "2", "1 of 2", "1", "1 of 1", "0 / 1"]


def test_gateway_report_refuses_a_domain_the_build_does_not_have(tmp_path):
    """`gateway report --domains` names bench domains; one that is not a domain, or not in the build given,
    is bad input (exit 2, one line naming the option or the build) before anything runs."""
    import json
    import subprocess
    import sys

    build = tmp_path / "build"
    (build / "domains" / "payroll").mkdir(parents=True)
    (build / "domains" / "payroll" / "tasks.jsonl").write_text("")
    (build / "manifest.json").write_text(json.dumps({"format": "x"}))
    out = tmp_path / "page.md"

    def run(domains: str) -> subprocess.CompletedProcess[str]:
        cmd = ["gateway", "report", "--out", str(out), "--build", str(build), "--domains", domains]
        return subprocess.run([sys.executable, "-m", "toolshift", *cmd], capture_output=True, text=True)

    r = run("payroll,nope")
    assert r.returncode == 2 and r.stderr.strip() == "error: --domains: unknown bench domain 'nope'"
    r = run("payroll,it_assets")
    assert r.returncode == 2 and f"{build}: the build has no tasks of domain 'it_assets'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not out.exists()
