"""Issue 56's done-when: every file-reading command over planted schema objects, lone surrogates, non-UTF-8 bytes,
5,000-digit integers, FIFOs and repeated ids gives 0 tracebacks, 0 hangs and 0 silent acceptances — each is
refused in one line that names what was planted (bench/fuzz_inputs.py; docs/results/fuzz.md is the same matrix
as real processes)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import fuzz_inputs  # noqa: E402


def test_every_file_reading_command_refuses_every_hostile_input_it_can_be_given(
    tmp_path, small_evolved_build
):
    seen: list[str] = []
    outcomes = fuzz_inputs.run_all(
        small_evolved_build, tmp_path, mode="inprocess", timeout=120, progress=seen.append
    )
    assert len(outcomes) == sum(len(c.mutations) for c in fuzz_inputs.CASES) >= 70
    assert {o.mutation for o in outcomes} == set(fuzz_inputs.MUTATIONS)
    bad = [
        f"{o.case} / {o.mutation}: {o.verdict}: {o.detail[:300]}" for o in outcomes if o.verdict != "refused"
    ]
    assert bad == [], "\n".join(bad)
