"""The loop end to end with the noisy-oracle instrument: selection moves completion toward one half,
resume repeats exactly what a straight run does, and a run killed with SIGKILL loses no evaluated child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolshift.agents.tasks import task_from_path
from toolshift.evolve.engine import Engine
from toolshift.evolve.select import select
from toolshift.evolve.solver import SolverConfig
from toolshift.evolve.store import EvolveConfig, RunStore
from toolshift.models import UserInstruction
from toolshift.taskfile import write_tasks
from toolshift.traces.store import iter_episodes


def one_call_tasks():
    """Tasks of a single call, the record named: the instrument always completes them."""
    return [
        task_from_path("clinic", "one-cancel", "Please cancel appointment APT-00003.",
                       UserInstruction(intent="Cancel appointment APT-00003.", facts={"appointment id": "APT-00003"}),
                       [("cancel_appointment", {"appointment_id": "APT-00003"})]),
        task_from_path("clinic", "one-pay", "I'd like to pay invoice INV-00004.",
                       UserInstruction(intent="Pay invoice INV-00004.", facts={"invoice id": "INV-00004"}),
                       [("pay_invoice", {"invoice_id": "INV-00004"})]),
        task_from_path("clinic", "one-email", "Please change the email of patient PAT-00001.",
                       UserInstruction(intent="Change the email of patient PAT-00001 to ana@new.example.",
                                       facts={"patient id": "PAT-00001", "new email": "ana@new.example"}),
                       [("update_patient", {"patient_id": "PAT-00001", "email": "ana@new.example"})]),
    ]  # fmt: skip


def _config(generations: int, attempts: int = 8, q: float = 0.6) -> EvolveConfig:
    return EvolveConfig(
        seed=3, generations=generations, solver=SolverConfig(model=f"noisy-oracle:{q}", attempts=attempts)
    )


def _run(folder: Path, seeds, config: EvolveConfig, max_steps=None):
    store = RunStore(folder)
    if not store.exists():
        store.create(config, seeds)
    return Engine(store, store.config()).run(max_steps=max_steps)


def _spread(records) -> float:
    rates = [r.completion for r in records]
    return sum(abs(c - 0.5) for c in rates) / len(rates)


@pytest.mark.slow
def test_selection_moves_completion_rates_toward_one_half(tmp_path, bench_clinic):
    """A bimodal seed set for the instrument at q = 0.4 (one-call tasks always solved; the three longest
    benchmark tasks, 3 calls or more, at most 0.4² = 16% of the time)."""
    long = sorted(bench_clinic, key=lambda t: -len(t.gold_path))[:3]
    assert all(len(t.gold_path) >= 3 for t in long)
    seeds = one_call_tasks() + long
    records = _run(tmp_path / "run", seeds, _config(generations=3, q=0.4))
    before = [r for r in records if r.step is None]
    rates = {r.id: r.completion for r in before}
    assert all(rates[t.id] == 1.0 for t in one_call_tasks())
    assert all(rates[t.id] <= 0.4 for t in long)
    selection = select(RunStore(tmp_path / "run"), records)
    by_id = {r.id: r for r in records}
    final = [by_id[i] for root in selection.roots for i in root.kept]
    assert final and len({r.root for r in final}) >= 5
    assert _spread(final) < _spread(before) - 0.15
    in_band = sum(0.3 <= r.completion <= 0.7 for r in final) / len(final)
    assert in_band > sum(0.3 <= r.completion <= 0.7 for r in before) / len(before)
    # every program not kept has its reason
    for root in selection.roots:
        for d in root.decisions:
            assert d.reason


def test_a_resumed_run_makes_exactly_the_choices_of_a_straight_one(tmp_path, demo):
    straight = _run(tmp_path / "a", demo, _config(generations=2, attempts=4))
    _run(tmp_path / "b", demo, _config(generations=2, attempts=4), max_steps=2)
    resumed = _run(tmp_path / "b", demo, _config(generations=2, attempts=4))
    assert len(straight) == len(resumed) == 3 + 2 * 3

    def view(records):
        return [(r.id, r.parent, r.mutation.operator, r.status, r.completion, r.program) for r in records]

    assert view(straight) == view(resumed)


def test_a_run_killed_with_sigkill_resumes_losing_no_evaluated_child(tmp_path, demo):
    seeds = tmp_path / "seeds.jsonl"
    write_tasks(seeds, demo)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "toolshift", "evolve", "run", "--seeds", str(seeds), "--out", str(out),
           "--solver", "noisy-oracle:0.7", "--attempts", "10", "--generations", "3", "--seed", "5"]  # fmt: skip
    env = {**os.environ, "COLUMNS": "120"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    programs = out / "programs"
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if programs.is_dir() and len(list(programs.glob("*.s*.json"))) >= 2:
                break
            if proc.poll() is not None:
                pytest.fail("the run ended before it could be killed")
            time.sleep(0.05)
        else:
            pytest.fail("no child was evaluated in time")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    saved = {p.name: p.read_bytes() for p in programs.glob("*.json")}
    children_before = [n for n in saved if ".s" in n]
    assert len(children_before) >= 2
    resumed = subprocess.run(
        [sys.executable, "-m", "toolshift", "evolve", "resume", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = {p.name: p.read_bytes() for p in programs.glob("*.json")}
    for name, body in saved.items():
        assert after[name] == body, f"{name} was evaluated again"
    records = RunStore(out).records()
    assert sorted(r.step for r in records if r.step is not None) == list(range(9))
    for r in records:
        if r.evaluated:
            trials = [e.trial for e in iter_episodes(RunStore(out).episodes_path(r.id))]
            assert sorted(trials) == list(range(10)), r.id
    assert (out / "final" / "selection.json").is_file()
