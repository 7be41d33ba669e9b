"""Custom-action calls per second (interpreted preconditions and code) over real gold paths, against a baseline tree.

Builds a small benchmark (every bench domain, a few tasks each), then replays every task's gold
path from the seeded state (one world per domain, restored) and times each call: custom actions (the safe interpreter's work) and
generated tools apart, plus the clinic's get_patient reads and pay_invoice actions. With
`--baseline REV` the same measurement runs alternately in child processes on this tree and on
`git archive REV` (e.g. the commit before the interpreter, where actions ran by exec), interleaved
round by round (bench/paired.py), and the figures are recorded with their p50/p50 and p90/p90 ratios:
same machine, same load, same tasks.

    python bench/bench_world_actions.py [--baseline REV] [--rounds 7] [--per-domain 8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from paired import interleave, percentile  # noqa: E402  (bench/paired.py; also when run as a child)

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
        now_runs: list[dict[str, float]] = []
        base_runs: list[dict[str, float]] = []
        if base is not None:  # the two trees alternate, baseline first: A, B, A, B …
            pairs = interleave(lambda _: base_runs.append(child(base, build)), lambda _: now_runs.append(child(None, build)),
                               range(opts.rounds), names=(opts.baseline, "now"))  # fmt: skip
        else:
            pairs = None
            now_runs += [child(None, build) for _ in range(opts.rounds)]
    keys = [k for k in now_runs[0] if k != "action calls timed"]
    rows = []
    for k in keys:
        now = [r[k] for r in now_runs]
        if base_runs:
            was = [r[k] for r in base_runs]
            p50, p90 = (percentile(now, q) / percentile(was, q) for q in (0.5, 0.9))
            rows.append((k, f"{percentile(was, 0.5):,.0f} → {percentile(now, 0.5):,.0f} (now / before p50/p50 × {p50:.2f} · p90/p90 × {p90:.2f})", ""))  # fmt: skip
        else:
            rows.append((k, f"{percentile(now, 0.5):,.0f}", ""))
    against = (
        f" against {opts.baseline} (before → now: p50 of {opts.rounds} interleaved rounds, the baseline's child "
        f"first in each; load average (1 min) {pairs.load_start:.2f} at start, {pairs.load_end:.2f} at end)"
        if pairs is not None
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
