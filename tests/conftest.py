"""Test fixtures shared by every capability: where the real third-party data lives; no test is timed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No test may depend on wall-clock speed (the machine running the suite may be busy): hypothesis never
# times an example (no deadline) nor refuses slow data generation. Timings belong in bench/.
# A test's own `suppress_health_check` replaces the profile's list, so it must name too_slow again.
settings.register_profile("toolshift", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("toolshift")

# pytest-xdist's workers set COLUMNS=80, and every command's console takes its width from it when it is
# created (at import): the suite runs as a fresh clone's CI does, piped, at the default width (D145).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)

SHARED = Path(os.environ.get("TOOLSHIFT_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SHARED_DATA = SHARED / "data"


@pytest.fixture(autouse=True)
def _bench_log_to_tmp(tmp_path, monkeypatch):
    """Benchmarks called from tests never write into docs/benchmarks.md."""
    monkeypatch.setenv("TOOLSHIFT_BENCH_LOG", str(tmp_path / "benchmarks.md"))


@pytest.fixture
def shared_data() -> Path:
    """The real data in ../shared/data; tests using it are marked `shared` and skip where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA} (set TOOLSHIFT_SHARED to the shared/ folder)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def tau2_python() -> Path:
    """τ²-bench's own Python (its snapshot installed in `.venv-tau2/`, built once; see tests/peers.py)."""
    from peers import ensure_tau2_venv, tau2_unavailable

    reason = tau2_unavailable()
    if reason is not None:
        pytest.skip(reason)
    try:
        return ensure_tau2_venv(log=lambda line: None)
    except RuntimeError as exc:
        pytest.fail(f"cannot install τ²-bench: {exc}")


@pytest.fixture(scope="session")
def evolved_build():
    """Make a small real benchmark build: `make(out, domains, per_domain, versions)` writes each domain's
    tasks (seed 0), the manifest, the evolved versions (seed 1) and the reference paths into `out`."""
    from toolshift.bench.build import build_domain, write_manifest
    from toolshift.bench.ecosystem.evolve import EvolveConfig
    from toolshift.bench.ecosystem.paths import compute_references
    from toolshift.bench.ecosystem.pipeline import evolve_build

    def make(out: Path, domains: list[str], per_domain: int, versions: int) -> Path:
        for name in domains:
            build_domain(out, name, seed=0, per_domain=per_domain)
        write_manifest(out, domains, 0, per_domain)
        evolve_build(out, EvolveConfig(versions=versions, seed=1))
        compute_references(out)
        return out

    return make


@pytest.fixture(scope="session")
def small_evolved_build(tmp_path_factory, evolved_build) -> Path:
    """One small evolved build for the tests that only read one (accounts_payable, 12 tasks, versions 1–2):
    copy it before changing anything in it."""
    return evolved_build(tmp_path_factory.mktemp("small-build") / "b", ["accounts_payable"], 12, 2)
