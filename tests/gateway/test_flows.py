"""The flows middleware, live: lookups made after a call and delivered with it, and the rules of safe speculation
(read-only by catalog and annotation, keyed by state and catalog version, errors never served, list_changed drops,
the same final world state with flows on and off)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest

from toolshift.errors import BadInputError
from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.build import prepare
from toolshift.gateway.flows import LOOKUPS_HEADER, LOOKUPS_META_KEY
from toolshift.gateway.server import in_memory_client
from toolshift.world import World, load_domain

from .scripted import APPOINTMENTS, run_sessions, script


def _flows_gateway(clinic_flow, *, world: str = "clinic", record: Any = None,
                   rule: Any = None) -> tuple[Any, GatewayServer]:  # fmt: skip
    flow, catalog = clinic_flow
    fields: dict[str, Any] = {
        "backends": [{"name": "clinic", "world": world}],
        "middleware": ["flows"],
        "flows": {"flow": str(flow), "catalog": str(catalog)} | ({"rule": str(rule)} if rule else {}),
    }
    if record is not None:
        fields["middleware"] = ["record", "flows"]
        fields["record"] = {"out": str(record)}
    gw = build_gateway(GatewayConfig(**fields))
    return gw, GatewayServer(gw)


def test_lookups_come_with_the_response_and_answer_the_agents_repeat(clinic_flow):
    gw, server = _flows_gateway(clinic_flow)
    world = World(load_domain("clinic"))
    appointment = APPOINTMENTS[10]  # not one the flow was learned from
    row = world.call("get_appointment", {"appointment_id": appointment}).result
    flows = gw.middleware[0]

    async def main() -> None:
        await prepare(gw)
        async with gw.running(), in_memory_client(server) as client:
            first = await client.call_tool("get_appointment", {"appointment_id": appointment})
            lookups = first.meta[LOOKUPS_META_KEY]
            assert {(lk["tool"], json.dumps(lk["arguments"])) for lk in lookups} == {
                ("get_patient", json.dumps({"patient_id": row["patient_id"]})),
                ("get_doctor", json.dumps({"doctor_id": row["doctor_id"]})),
            }
            patient = world.call("get_patient", {"patient_id": row["patient_id"]}).result
            assert next(lk["result"] for lk in lookups if lk["tool"] == "get_patient") == patient
            assert first.structured_content == row  # the call's own result is untouched
            text = first.content[-1].text
            assert text.startswith(LOOKUPS_HEADER) and json.loads(text.split("\n", 1)[1]) == lookups
            # the agent repeats a read a lookup answered, with no write between: answered from the lookup
            repeat = await client.call_tool("get_patient", {"patient_id": row["patient_id"]})
            assert repeat.meta["toolshift/answered_by"] == "lookup" and repeat.structured_content == patient
            assert flows.counts["answered_from_lookup"] == 1
            # a write moves the state version: what was kept is dropped, the next read goes to the backend
            await client.call_tool("update_patient", {"patient_id": row["patient_id"], "phone": "555-0101"})
            after = await client.call_tool("get_patient", {"patient_id": row["patient_id"]})
            assert "toolshift/answered_by" not in (after.meta or {})
            assert after.structured_content["phone"] == "555-0101"
            assert flows.counts["kept_dropped_by_write"] >= 1
            # after the write the doctor is looked up afresh; never a write tool
            assert [lk["tool"] for lk in after.meta[LOOKUPS_META_KEY]] == ["get_doctor"]

    anyio.run(main)
    assert flows.counts["lookups_made"] == 3


def test_an_error_is_never_served_as_a_lookup(clinic_flow):
    gw, server = _flows_gateway(clinic_flow)
    flows = gw.middleware[0]
    appointment = APPOINTMENTS[9]

    async def main() -> None:
        async with gw.running(), in_memory_client(server) as client:
            await client.list_tools()
            world = gw.backends["clinic"].world_server.sessions[0]
            patient = world.call("get_appointment", {"appointment_id": appointment}).result["patient_id"]
            # another party removes the patient behind the gateway's back: the lookup of it fails
            world.conn.execute("PRAGMA foreign_keys = OFF")
            world.conn.execute("DELETE FROM patient WHERE patient_id = ?", (patient,))
            result = await client.call_tool("get_appointment", {"appointment_id": appointment})
            tools = [lk["tool"] for lk in result.meta[LOOKUPS_META_KEY]]
            assert tools == ["get_doctor"]
            assert flows.counts["lookups_errors_dropped"] == 1

    anyio.run(main)


def test_list_changed_drops_prefetched_and_only_annotated_reads_are_looked_up(clinic_flow):
    gw, server = _flows_gateway(clinic_flow)
    flows = gw.middleware[0]
    appointment, other = APPOINTMENTS[8], APPOINTMENTS[11]

    async def main() -> None:
        async with gw.running(), in_memory_client(server) as client:
            first = await client.call_tool("get_appointment", {"appointment_id": appointment})
            patient = next(lk for lk in first.meta[LOOKUPS_META_KEY] if lk["tool"] == "get_patient")
            session = next(iter(gw.sessions.values()))
            await session.backends["clinic"]._on_message(types.ToolListChangedNotification())
            assert flows.counts["kept_dropped_by_list_changed"] == 2
            again = await client.call_tool("get_patient", patient["arguments"])
            assert "toolshift/answered_by" not in (again.meta or {})  # asked of the backend again
            # the backend no longer marks get_doctor read-only: the catalog alone is not enough
            routes = await gw.routes(session)
            routes["get_doctor"].tool = routes["get_doctor"].tool.model_copy(update={"annotations": None})
            flows._state(session).read_only = None
            second = await client.call_tool("get_appointment", {"appointment_id": other})
            assert [lk["tool"] for lk in second.meta[LOOKUPS_META_KEY]] == ["get_patient"]
            assert flows.counts["lookups_not_read_only"] == 1

    anyio.run(main)


def test_flows_on_and_off_end_in_the_same_world_state(clinic_flow, tmp_path):
    reference = World(load_domain("clinic"))
    sessions = [script(a, reference) for a in APPOINTMENTS[8:12]]
    # an update between reads, so kept lookups are invalidated mid-session too
    sessions[1].insert(
        2, ("update_patient", {"patient_id": sessions[1][1][1]["patient_id"], "phone": "555-0199"})
    )
    states = {}
    for label in ("off", "on"):
        if label == "on":
            gw, server = _flows_gateway(clinic_flow, record=tmp_path / label)
        else:
            gw = build_gateway(GatewayConfig(backends=[{"name": "clinic", "world": "clinic"}], middleware=["record"],
                                             record={"out": str(tmp_path / label)}))  # fmt: skip
            server = GatewayServer(gw)
        diffs = []
        results: list[Any] = []

        async def main(gw=gw, server=server, diffs=diffs, results=results) -> None:
            ws = gw.backends["clinic"].world_server
            async with gw.running():
                for calls in sessions:
                    async with in_memory_client(server) as client:
                        results.append([(await client.call_tool(n, a)).structured_content for n, a in calls])
                        diffs.append(ws.sessions[-1].diff(ws.base))

        anyio.run(main)
        states[label] = (diffs, results)
        if label == "on":
            assert gw.middleware[1].counts["lookups_made"] > 0
    assert states["on"][0] == states["off"][0] and all(states["on"][0])
    assert states["on"][1] == states["off"][1]  # every call's own result the same too


def test_a_flow_for_another_catalog_or_backend_is_refused(clinic_flow, tmp_path):
    flow, catalog = clinic_flow
    other = tmp_path / "library.catalog.json"
    raw = json.loads(catalog.read_text())
    raw["domain"] = "library"
    other.write_text(json.dumps(raw))
    cfg = GatewayConfig(
        backends=[{"name": "clinic", "world": "clinic"}],
        middleware=["flows"],
        flows={"flow": str(flow), "catalog": str(other)},
    )
    with pytest.raises(BadInputError, match="flow learned for domain 'clinic', not 'library'"):
        build_gateway(cfg)
    raw["domain"] = "clinic"
    raw["tools"] = [t for t in raw["tools"] if t["name"] != "delete_patient"]
    other.write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="flow learned against catalog"):
        build_gateway(cfg)
    gw, _ = _flows_gateway(clinic_flow, world="library")
    with pytest.raises(BadInputError, match="the backend's tools are not the catalog's"):
        anyio.run(prepare, gw)


def test_many_sessions_each_get_their_own_lookups(clinic_flow):
    gw, server = _flows_gateway(clinic_flow)
    reference = World(load_domain("clinic"))

    async def main() -> list[list[Any]]:
        async with gw.running():
            return await run_sessions(server, [script(a, reference)[:1] for a in APPOINTMENTS[:4]])

    results = anyio.run(main)
    for appointment, (first,) in zip(APPOINTMENTS, results, strict=False):
        row = reference.call("get_appointment", {"appointment_id": appointment}).result
        got = {lk["tool"]: lk["arguments"] for lk in first.meta[LOOKUPS_META_KEY]}
        assert got == {
            "get_patient": {"patient_id": row["patient_id"]},
            "get_doctor": {"doctor_id": row["doctor_id"]},
        }


def test_a_decision_rule_is_applied_live_through_the_same_decider(clinic_flow, tmp_path):
    """A rule file (flows price --choose-rule) replaces the threshold: here a recalibration that scores every
    site 0 makes no lookup, one that keeps the scores makes the same lookups as θ; a rule for the other decider
    is refused."""
    from toolshift.flows.calibration import Isotonic, SiteCalibrator
    from toolshift.flows.rule import Rule, save_rule

    appointment = APPOINTMENTS[10]
    made: dict[str, int] = {}
    for name, ys in (("never", (0.0, 0.0)), ("identity", (0.0, 1.0))):
        path = save_rule(Rule("theta", 0.3, calibrator=SiteCalibrator(Isotonic((0.0, 1.0), ys), {}, 10)), "reach",
                         tmp_path / f"{name}.rule.json")  # fmt: skip
        gw, server = _flows_gateway(clinic_flow, rule=path)

        async def main(gw: Any = gw, server: Any = server) -> None:
            await prepare(gw)
            async with gw.running(), in_memory_client(server) as client:
                await client.call_tool("get_appointment", {"appointment_id": appointment})

        anyio.run(main)
        made[name] = gw.middleware[0].counts["lookups_made"]
    assert made == {"never": 0, "identity": 2}
    wrong = save_rule(Rule("theta", 0.3), "next-step", tmp_path / "wrong.rule.json")
    with pytest.raises(BadInputError, match="chosen for the next-step decider"):
        _flows_gateway(clinic_flow, rule=wrong)
