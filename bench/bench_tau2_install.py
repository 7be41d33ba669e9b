"""Benchmark: installing τ²-bench into its own venv (what `make test` does once), and one τ²-bench check.

Builds a fresh environment with `tests/peers.py tau2` into a temporary folder (pip's cache as it is,
so a second run measures installing from cached wheels), then times one τ²-bench process loading and
scoring our export of the τ-bench airline run (most of it is importing τ²-bench and litellm).

Run: `.venv/bin/python bench/bench_tau2_install.py [SHARED]` (SHARED: the shared/ folder).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolshift.report.benchlog import record

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO.parent / "shared"


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SHARED
    env = {**os.environ, "TOOLSHIFT_SHARED": str(shared)}
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv-tau2"
        env["TOOLSHIFT_TAU2_VENV"] = str(venv)
        t0 = time.perf_counter()
        built = subprocess.run(
            [sys.executable, str(REPO / "tests" / "peers.py"), "tau2"], env=env, check=False
        )
        install_s = time.perf_counter() - t0
        if built.returncode != 0 or not (venv / ".installed").is_file():
            print("τ²-bench could not be installed here (see above); nothing recorded")
            return
        size = sum(p.stat().st_size for p in venv.rglob("*") if p.is_file() and not p.is_symlink())
        t0 = time.perf_counter()
        recheck = subprocess.run(
            [sys.executable, str(REPO / "tests" / "peers.py"), "tau2"], env=env, check=True
        )
        recheck_s = time.perf_counter() - t0
        assert recheck.returncode == 0
        conv, export = Path(tmp) / "conv", Path(tmp) / "airline.json"
        toolshift = [sys.executable, "-m", "toolshift", "traces"]
        source = shared / "data" / "tau-bench" / "gpt-4o-airline.trials-0-1.json"
        subprocess.run([*toolshift, "convert", "taubench-v1", str(source), "--out", str(conv)], check=True)
        episodes = conv / "taubench-v1-airline.episodes.jsonl"
        subprocess.run([*toolshift, "export-tau2", str(episodes), "--out", str(export)], check=True)
        sys.path.insert(0, str(REPO / "tests"))  # tests/peers.py: where τ²-bench's python is
        os.environ.update(env)
        peers = importlib.import_module("peers")
        t0 = time.perf_counter()
        done = peers.run_tau2(
            venv / "bin" / "python", REPO / "tests" / "traces" / "tau2_probe.py", "load", str(export)
        )
        check_s = time.perf_counter() - t0
        metrics = json.loads(done.stdout.strip().splitlines()[-1])[str(export)]["metrics"]
    record(
        "τ²-bench: install into its own venv, and one check in it",
        [
            (
                "install (python -m venv, pip upgrade, pip install snapshot)",
                f"{install_s:.0f} s",
                "well under 30 min",
            ),
            ("venv size", f"{size / 2**20:,.0f} MiB", ""),
            ("check of an up-to-date venv", f"{recheck_s:.1f} s", ""),
            (
                "one τ²-bench process: Results.load + compute_metrics, τ-bench airline export",
                f"{check_s:.1f} s",
                "",
            ),
            (
                "τ² avg_reward / pass^1 / pass^2 on that export",
                f"{metrics['avg_reward']:.2f} / {metrics['pass_hat_1']:.2f} / {metrics['pass_hat_2']:.2f}",
                "= toolshift's",
            ),
        ],
        note="Wall-clock, with pip's wheel cache as found (a first install on a new machine also downloads "
        "the wheels). tests/peers.py is what `make test` runs.",
    )


if __name__ == "__main__":
    main()
