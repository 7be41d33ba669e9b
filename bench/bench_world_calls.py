"""`World.call` against raw sqlite3 on the same table and connection (clinic), interleaved: a read.

Row 1 of issue 23: a `get_patient` read through `World.call` (validation, read-only guarantee, handler,
result) against `conn.execute(SELECT … WHERE patient_id = ?).fetchone()` on the world's own connection, the
same patient each time. Each unit of
work is a batch of `BATCH` calls (a single call is shorter than the clock's noise under load).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from paired import Paired, interleave
from toolshift.report.benchlog import record
from toolshift.world import World, load_domain

BATCH = 20
ITEMS = 60
ROUNDS = 5
PATIENTS = [f"PAT-{i:05d}" for i in range(1, 301)]


def batches() -> list[list[str]]:
    return [[PATIENTS[(i * BATCH + k) % len(PATIENTS)] for k in range(BATCH)] for i in range(ITEMS)]


def read_sides(world: World) -> tuple[Callable[[list[str]], None], Callable[[list[str]], None]]:
    t = world.domain.tables["patient"]
    sql = f'{t.select} WHERE "patient_id" = ?'
    conn = world.conn

    def call(batch: list[str]) -> None:
        for pid in batch:
            assert world.call("get_patient", {"patient_id": pid}).ok

    def raw(batch: list[str]) -> None:
        for pid in batch:
            assert conn.execute(sql, (pid,)).fetchone() is not None

    return call, raw


def paired(sides: tuple[Callable[[list[str]], None], Callable[[list[str]], None]]) -> Paired:
    call, raw = sides
    for b in batches()[:5]:  # warm-up: validators compiled, statements cached
        call(b)
        raw(b)
    return interleave(call, raw, batches(), rounds=ROUNDS, names=("World.call", "raw sqlite3"))


def main() -> None:
    world = World(load_domain("clinic"))
    reads = paired(read_sides(world))
    rows = reads.rows("get_patient read", scale=1e6 / BATCH, unit="µs per call")
    rows.append(
        (
            "get_patient read: World.call's speed as a share of raw sqlite3's (raw / World.call, p50 · p90)",
            f"{100 * reads.ratio(0.5):.1f}% · {100 * reads.ratio(0.9):.1f}%",
            ">= 20%",
        )
    )
    record(
        "World.call vs raw sqlite3 on the same table and connection (clinic)",
        rows,
        note=(
            f"{reads.note()} Each unit of work: {BATCH} calls on {BATCH} patients; raw = "
            "`conn.execute(SELECT … WHERE patient_id = ?).fetchone()` on the world's own connection. "
            f"`{Path(sys.argv[0]).name}`."
        ),
    )


if __name__ == "__main__":
    main()
