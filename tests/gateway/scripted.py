"""Scripted gateway sessions for the tests and results: measuring instruments, not models."""

from __future__ import annotations

from typing import Any

from toolshift.gateway.server import GatewayServer, in_memory_client
from toolshift.world import World

APPOINTMENTS = [f"APT-{i:05d}" for i in range(1, 13)]


def script(appointment: str, world: World) -> list[tuple[str, dict[str, Any]]]:
    """A scripted session (a measuring instrument, not a model): look an appointment up, read its patient
    and doctor, then note a follow-up on it."""
    row = world.call("get_appointment", {"appointment_id": appointment}).result
    return [
        ("get_appointment", {"appointment_id": appointment}),
        ("get_patient", {"patient_id": row["patient_id"]}),
        ("get_doctor", {"doctor_id": row["doctor_id"]}),
        ("update_appointment", {"appointment_id": appointment, "reason": f"follow-up for {appointment}"}),
    ]


async def run_sessions(
    server: GatewayServer, sessions: list[list[tuple[str, dict[str, Any]]]]
) -> list[list[Any]]:
    results = []
    for calls in sessions:
        async with in_memory_client(server) as client:
            results.append([await client.call_tool(name, args) for name, args in calls])
    return results
