"""Evolving the full benchmark build to six ecosystem versions: wall time and per-version churn."""

from __future__ import annotations

import argparse
import copy
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from toolshift.bench.build import build_domain, load_manifest, write_manifest
from toolshift.bench.domains import bench_domain_names
from toolshift.bench.ecosystem.evolve import EvolveConfig
from toolshift.bench.ecosystem.pipeline import evolve_build
from toolshift.report.benchlog import record


def ensure_build(path: Path) -> Path:
    """The build at `path`, made (all bench domains, 40 tasks each) if it is not there yet."""
    if not (path / "manifest.json").is_file():
        names = bench_domain_names()
        for name in names:
            build_domain(path, name, seed=0, per_domain=40)
        write_manifest(path, names, 0, 40)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--build", type=Path, default=Path("runs/bench"), help="bench build (made if missing)"
    )
    parser.add_argument("--versions", type=int, default=6)
    args = parser.parse_args()
    build = ensure_build(args.build)
    with tempfile.TemporaryDirectory() as tmp:
        # evolve a copy so the timing never includes reading a half-written ecosystem of an earlier run
        work = Path(tmp) / "build"
        shutil.copytree(build, work, ignore=shutil.ignore_patterns("ecosystem"))
        manifest = load_manifest(work)
        start = time.perf_counter()
        eco = evolve_build(work, EvolveConfig(versions=args.versions))
        seconds = time.perf_counter() - start
    stats = copy.deepcopy(eco.stats)
    tools = [s.tools for s in stats]
    v2 = stats[1] if len(stats) > 1 else None
    rows = [
        ("domains / tasks", f"{len(eco.domains)} / {manifest.total_tasks}", "42 / >= 1,500"),
        (f"evolve to {args.versions} versions (s)", f"{seconds:.1f}", "< 600"),
        ("tools per version", " / ".join(str(t) for t in tools), "seed: 799–892"),
        (
            "v1→v2 added / retired / modified",
            f"{v2.added} / {v2.retired} / {v2.modified}" if v2 else "–",
            "seed: 110 / 161 / 176",
        ),
        (
            "accepted / rejected transformations",
            f"{sum(s.accepted for s in stats)} / {sum(s.rejected for s in stats)}",
            "–",
        ),
    ]
    record(
        "bench_ecosystem_evolve",
        rows,
        note="Single process; wall times are upper bounds on a loaded machine (see the load average).",
    )


if __name__ == "__main__":
    main()
