"""Custom-action calls per second (interpreted preconditions and code) over real gold paths, against a baseline tree.

Builds a small benchmark (every bench domain, a few tasks each), then replays every task's gold
path from the seeded state (one world per domain, restored) and times each call: custom actions (the safe interpreter's work) and
generated tools apart, plus the clinic's get_patient reads and pay_invoice actions. With
`--baseline REV` the same measurement runs alternately in child processes on this tree and on
`git archive REV` (e.g. the commit before the interpreter, where actions ran by exec), and the
figures are recorded with their ratios: same machine, same load, same tasks.

    python bench/bench_world_actions.py [--baseline REV] [--rounds 7] [--per-domain 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECONDS = 2.0


def measure(build: Path) -> dict[str, float]:
    """Run in a child: calls per second on the toolshift importable here (this tree or the baseline)."""
    from toolshift.world import World, load_domain

    tasks = []
    for path in sorted(build.glob("domains/*/tasks.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            task = json.loads(line)
            tasks.append((path.parent.name, [(s["tool"], s["arguments"]) for s in task["gold_path"]]))
    worlds = {name: World(load_domain(name)) for name, _ in tasks}
    starts = {name: w.snapshot() for name, w in worlds.items()}
    kinds = {name: {t.name: t.meta.get("kind") for t in w.tools} for name, w in worlds.items()}
    spent = {"action": 0.0, "generated": 0.0}
    calls = {"action": 0, "generated": 0}
    t_end, warm = time.process_time() + SECONDS, True
    while warm or time.process_time() < t_end:
        if warm:  # one untimed pass first: every tool's schema validator is built on its first call
            for name, path in tasks:
                worlds[name].restore(starts[name])
                for tool, args in path:
                    worlds[name].call(tool, args)
            warm, t_end = False, time.process_time() + SECONDS
        for name, path in tasks:
            world = worlds[name]
            world.restore(starts[name])
            for tool, args in path:
                kind = "action" if kinds[name].get(tool) == "action" else "generated"
                t0 = time.process_time()
                result = world.call(tool, args)
                spent[kind] += time.process_time() - t0
                calls[kind] += 1
                assert result.ok, (name, tool, result.error)
    clinic = World(load_domain("clinic"))
    patients = [f"PAT-{i:05d}" for i in range(1, 301)]
    n, t0 = 0, time.process_time()
    while time.process_time() - t0 < SECONDS:
        for p in patients:
            clinic.call("get_patient", {"patient_id": p})
        n += len(patients)
    reads = n / (time.process_time() - t0)
    snap = clinic.snapshot()
    n, paid, t0 = 0, 0.0, time.process_time()
    while time.process_time() - t0 < SECONDS:
        clinic.restore(snap)
        for inv in clinic.runtime.find("invoice", status="open"):
            t1 = time.process_time()
            assert clinic.call("pay_invoice", {"invoice_id": inv["invoice_id"]}).ok
            paid += time.process_time() - t1
            n += 1
    return {
        "action calls/s (gold paths, 42 domains)": calls["action"] / spent["action"],
        "generated-tool calls/s (same paths)": calls["generated"] / spent["generated"],
        "clinic get_patient reads/s": reads,
        "clinic pay_invoice actions/s": n / paid,
        "action calls timed": calls["action"],
    }


def child(tree: Path | None, build: Path) -> dict[str, float]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "src")
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(build)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--baseline", help="a git revision to compare with (its tree is extracted with git archive)"
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--per-domain", type=int, default=8)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(measure(opts.child)))
        return
    from toolshift.report.benchlog import record

    with tempfile.TemporaryDirectory(prefix="bench-actions-") as tmp:
        build = Path(tmp) / "build"
        subprocess.run(
            [sys.executable, "-m", "toolshift", "bench", "build", "--out", str(build), "--per-domain",
             str(opts.per_domain)],
            check=True, capture_output=True,
        )  # fmt: skip
        base: Path | None = None
        if opts.baseline:
            base = Path(tmp) / "baseline"
            archive = subprocess.run(
                ["git", "archive", opts.baseline], cwd=ROOT, capture_output=True, check=True
            )
            base.mkdir()
            archive_path = Path(tmp) / "baseline.tar"
            archive_path.write_bytes(archive.stdout)
            with tarfile.open(archive_path) as tar:
                tar.extractall(base, filter="data")
        now_runs, base_runs = [], []
        for _ in range(opts.rounds):
            if base is not None:
                base_runs.append(child(base, build))
            now_runs.append(child(None, build))
    keys = [k for k in now_runs[0] if k != "action calls timed"]
    rows = []
    for k in keys:
        now = statistics.median(r[k] for r in now_runs)
        if base_runs:
            was = statistics.median(r[k] for r in base_runs)
            ratios = sorted(n[k] / b[k] for n, b in zip(now_runs, base_runs, strict=True))
            spread = f"rounds {ratios[0]:.2f}–{ratios[-1]:.2f}"
            rows.append((k, f"{was:,.0f} → {now:,.0f} (× {statistics.median(ratios):.2f}; {spread})", ""))
        else:
            rows.append((k, f"{now:,.0f}", ""))
    against = (
        f" against {opts.baseline} (before → now: medians of {opts.rounds} alternating rounds; × is the median of the rounds' ratios)"
        if base
        else ""
    )
    record(
        "world custom actions: safe interpreter" + (" vs exec" if base else ""),
        rows,
        note=f"Every bench domain, {opts.per_domain} tasks each ({now_runs[0]['action calls timed']:,} action "
        f"calls per round), gold paths replayed from each domain's seeded state for {SECONDS:.0f} s; one thread, argument "
        f"validation on; per-call times are the process's CPU time (time.process_time), so other load on "
        f"the machine shifts them less{against}.",
    )


if __name__ == "__main__":
    main()
