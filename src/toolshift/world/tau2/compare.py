"""What our τ² worlds do with τ²-bench's tasks, written as τ²'s records, so τ²-bench itself can compare.

`replay_record(world_name)` replays every task's expected actions on a fresh world and returns the
initial database and, per task, each call's outcome and every τ² record the calls changed, in
τ²-bench's own shapes (`tests/world/tau2_replay_probe.py` reads it in τ²-bench's venv).
"""

from __future__ import annotations

from typing import Any

from toolshift.world.tau2.domains import tau2_world
from toolshift.world.tau2.tasks import agent_actions, read_tau2_tasks, replay_actions


def replay_record(world_name: str, *, ids: list[str] | None = None) -> dict[str, Any]:
    from toolshift.world import World, load_domain

    world = tau2_world(world_name)
    compiled = load_domain(world.name)
    fresh = World(compiled)
    initial = world.export(fresh.conn)
    fresh.close()
    tasks: dict[str, Any] = {}
    for t in read_tau2_tasks(world):
        if (ids is not None and t.id not in ids) or world.cannot_import(t) is not None:
            continue
        w = World(compiled)
        for call in world.initial_calls(t):
            w.call(*call)
        replay = replay_actions(w, [(a.name, a.arguments) for a in agent_actions(t)])
        calls = [
            {"name": n, "ok": True, "result": r}
            if ok
            else {"name": n, "ok": False, "error": r.get("message")}
            for n, _, ok, r in replay.calls
        ]
        records = world.export(w.conn, world.changed_records(replay.changes))
        tasks[t.id] = {"calls": calls, "records": records}
        w.close()
    return {"initial": initial, "tasks": tasks}
