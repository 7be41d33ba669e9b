"""Snapshot + restore time (SQLite backup API) for a 10,000-row world, and the diff time over it."""

from __future__ import annotations

import statistics
import time

from toolshift.report.benchlog import record
from toolshift.world import World, compile_domain
from toolshift.world.state.registry import load_domain_spec

TARGET_ROWS = 10_000
REPEATS = 30


def ten_thousand_row_clinic() -> World:
    """The clinic spec with every entity's row count scaled so the world holds about 10,000 rows."""
    spec = load_domain_spec("clinic")
    total = sum(e.rows for e in spec.entities)
    scale = TARGET_ROWS / total
    entities = [e.model_copy(update={"rows": round(e.rows * scale)}) for e in spec.entities]
    t0 = time.perf_counter()
    domain = compile_domain(spec.model_copy(update={"entities": entities}))
    print(f"compiled {sum(domain.row_counts().values())} rows in {(time.perf_counter() - t0) * 1000:.0f} ms")
    return World(domain)


def main() -> None:
    world = ten_thousand_row_clinic()
    rows = sum(world.row_counts().values())
    snap_ms, restore_ms, both_ms, diff_ms = [], [], [], []
    for i in range(REPEATS):
        world.call("update_patient", {"patient_id": "PAT-00001", "phone": str(i)})
        t0 = time.perf_counter()
        snap = world.snapshot()
        t1 = time.perf_counter()
        world.call("cancel_appointment", {"appointment_id": "APT-00003"})
        world.call("update_patient", {"patient_id": "PAT-00002", "phone": str(i)})
        t2 = time.perf_counter()
        world.restore(snap)
        t3 = time.perf_counter()
        changes = world.changes_since(snap)
        t4 = time.perf_counter()
        assert changes == []
        snap.close()
        snap_ms.append((t1 - t0) * 1000)
        restore_ms.append((t3 - t2) * 1000)
        both_ms.append((t1 - t0 + t3 - t2) * 1000)
        diff_ms.append((t4 - t3) * 1000)
    med = statistics.median
    record(
        f"world snapshot + restore ({rows:,} rows)",
        [
            ("snapshot ms (median)", f"{med(snap_ms):.2f}", ""),
            ("restore ms (median)", f"{med(restore_ms):.2f}", ""),
            ("snapshot + restore ms (median)", f"{med(both_ms):.2f}", "<= 20"),
            ("snapshot + restore ms (max)", f"{max(both_ms):.2f}", ""),
            ("full diff ms (median, all tables)", f"{med(diff_ms):.2f}", ""),
        ],
        note=f"{REPEATS} repeats on the clinic spec scaled to ~{TARGET_ROWS:,} rows; in-memory SQLite, backup API.",
    )


if __name__ == "__main__":
    main()
