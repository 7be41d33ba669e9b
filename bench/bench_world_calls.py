"""In-process world calls per second: reads (get, search) and writes (update, custom action), clinic domain."""

from __future__ import annotations

import random
import time

from toolshift.report.benchlog import record
from toolshift.world import World, load_domain

SECONDS = 2.0


def rate(world: World, make_call, seconds: float = SECONDS) -> tuple[float, int]:
    n, t0 = 0, time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(200):
            name, args = make_call()
            result = world.call(name, args)
            assert result.ok, result.error
        n += 200
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - t0), n


def main() -> None:
    world = World(load_domain("clinic"))
    rng = random.Random(0)
    patients = [f"PAT-{i:05d}" for i in range(1, 301)]
    reads, _ = rate(world, lambda: ("get_patient", {"patient_id": rng.choice(patients)}))
    searches, _ = rate(
        world, lambda: ("search_patients", {"full_name": rng.choice("abcdefghij"), "limit": 5})
    )
    writes, _ = rate(
        world, lambda: ("update_patient", {"patient_id": rng.choice(patients), "phone": str(rng.random())})
    )
    open_invoices = [i["invoice_id"] for i in world.runtime.find("invoice", status="open")]
    snap = world.snapshot()

    def pay():
        if not open_invoices:
            world.restore(snap)
            open_invoices.extend(i["invoice_id"] for i in world.runtime.find("invoice", status="open"))
        return "pay_invoice", {"invoice_id": open_invoices.pop()}

    actions, _ = rate(world, pay)
    record(
        "world in-process calls (clinic, 1,435 rows)",
        [
            ("get_patient reads/s", f"{reads:,.0f}", ">= 10,000"),
            ("search_patients reads/s", f"{searches:,.0f}", ""),
            ("update_patient writes/s (savepoint + change capture)", f"{writes:,.0f}", ""),
            ("pay_invoice custom action writes/s (preconditions + code)", f"{actions:,.0f}", ""),
        ],
        note=f"Each figure: as many calls as fit in {SECONDS:.0f} s, one thread, argument validation on.",
    )


if __name__ == "__main__":
    main()
