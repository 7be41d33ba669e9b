"""Demo step: a small build evolved to three versions, reference paths, and the three baselines' table."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

DOMAINS = ("procurement", "it_assets", "customer_support")
PER_DOMAIN = 12
VERSIONS = 3
SHOWN = ("SR", "Strict-SR", "F1", "Step-SPE", "Cost-SPE", "Step-IDR", "Step-DAR", "Cost-IDR", "Cost-DAR")
"""The metrics the demo table shows (P and R are folded into F1 to fit a terminal)."""


def run(console: Console, keep: Path | None = None) -> None:
    """Build, evolve, score the baselines and print the tables; with `keep`, leave the build and runs there."""
    from toolshift.bench.build import build_domain, write_manifest
    from toolshift.bench.ecosystem.baselines import run_baseline
    from toolshift.bench.ecosystem.cli import drift_table, version_table
    from toolshift.bench.ecosystem.evaluate import evaluate
    from toolshift.bench.ecosystem.evolve import EvolveConfig
    from toolshift.bench.ecosystem.paths import compute_references, drift
    from toolshift.bench.ecosystem.pipeline import evolve_build

    with tempfile.TemporaryDirectory() as tmp:
        build = Path(tmp) / "build"
        for name in DOMAINS:
            build_domain(build, name, seed=0, per_domain=PER_DOMAIN)
        write_manifest(build, list(DOMAINS), 0, PER_DOMAIN)
        eco = evolve_build(build, EvolveConfig(versions=VERSIONS))
        console.print(version_table(eco.stats))
        header, records = compute_references(build)
        console.print(
            f"{header.instances} reference paths, {header.valid} replay to Δgold on their version "
            f"(DP {header.dp_seconds:.2f} s, replay {header.replay_seconds:.1f} s)"
        )
        console.print(drift_table(drift(records, VERSIONS)))
        runs = Path(tmp) / "runs"
        run_baseline(build, "oracle", runs, split=None)
        run_baseline(build, "frozen-v1", runs, split=None)
        console.print("[dim]embedded SmolLM2 on one task per version (6 turns at most)…[/]")
        run_baseline(build, "embedded", runs, split=None, sample=1, max_turns=6)
        _, evals = evaluate(build, [runs], resamples=200)
        if keep is not None:
            _keep(Path(tmp), keep, ("build", "runs"))
            console.print(f"build and baseline runs kept in {keep}")
    table = Table(title=f"Baselines on {eco.id} (% per version; IDR/DAR from v2)")
    for col in ("agent", "version", "n", *SHOWN):
        table.add_column(col, justify="left" if col == "agent" else "right")
    for ev in evals:
        assert ev.summary is not None
        for v in [*sorted(k for k in ev.summary.by_version if k), 0]:
            row = ev.summary.by_version[v]
            cells = ["–" if row[m].n == 0 else f"{100 * row[m].mean:.0f}" for m in SHOWN]
            table.add_row(ev.agent, "all" if v == 0 else f"v{v}", str(row["SR"].n), *cells)
    console.print(table)


def _keep(tmp: Path, keep: Path, names: tuple[str, ...]) -> None:
    """Copy the step's folders to `keep`, replacing what an earlier demo left there only once the copy is whole."""
    staging = keep.with_name(f".{keep.name}.new")
    shutil.rmtree(staging, ignore_errors=True)
    for name in names:
        shutil.copytree(tmp / name, staging / name)
    if keep.exists():
        shutil.rmtree(keep)
    staging.rename(keep)
