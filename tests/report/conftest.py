"""Real runs for the report and viewer tests: an evolved build with baselines, τ-bench and WorkBench converted."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from toolshift.traces.demo import EXAMPLE_RUN
from toolshift.traces.store import write_episodes

from .episodes import make_episode

# The shared data, as tests/conftest.py finds it (a bare `from conftest import` resolves to whichever
# conftest module the run imported first, tests/world's in the whole suite).
SHARED_DATA = (
    Path(os.environ.get("TOOLSHIFT_SHARED", Path(__file__).resolve().parents[3] / "shared")) / "data"
)

TAU_FILE = "tau-bench/gpt-4o-airline.trials-0-1.json"
WORKBENCH_EMAIL = "workbench/results/email"


@pytest.fixture(autouse=True)
def _index_cache(tmp_path, monkeypatch):
    """Every test indexes into its own cache folder."""
    monkeypatch.setenv("TOOLSHIFT_VIEW_CACHE", str(tmp_path / "view-cache"))


@pytest.fixture(scope="session")
def eco_runs(tmp_path_factory) -> tuple[Path, Path]:
    """(build, runs): payroll, 10 tasks, evolved to 3 versions, references, oracle and frozen-v1 on every task."""
    from toolshift.bench.build import build_domain, write_manifest
    from toolshift.bench.ecosystem.baselines import run_baseline
    from toolshift.bench.ecosystem.evolve import EvolveConfig
    from toolshift.bench.ecosystem.paths import compute_references
    from toolshift.bench.ecosystem.pipeline import evolve_build

    root = tmp_path_factory.mktemp("eco")
    build = root / "build"
    build_domain(build, "payroll", seed=0, per_domain=10)
    write_manifest(build, ["payroll"], 0, 10)
    evolve_build(build, EvolveConfig(versions=3))
    compute_references(build)
    runs = root / "runs"
    run_baseline(build, "oracle", runs, split=None)
    run_baseline(build, "frozen-v1", runs, split=None)
    return build, runs


@pytest.fixture(scope="session")
def tau_runs(tmp_path_factory) -> Path:
    """τ-bench's published GPT-4o airline runs converted by `toolshift traces convert`, with a flow learned
    on the training tasks (`flow.json`)."""
    from toolshift.flows.inputs import load_inputs
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.model import save_flow
    from toolshift.traces.taubench import convert_taubench_v1

    source = SHARED_DATA / TAU_FILE
    if not source.is_file():
        pytest.skip(f"real data not found at {source}")
    out = tmp_path_factory.mktemp("tau")
    written = convert_taubench_v1(source).write(out)
    episodes = next(p for p in written if p.name.endswith(".episodes.jsonl"))
    catalog = next(p for p in written if p.name.endswith(".catalog.json"))
    inputs = load_inputs([episodes], catalog, "train")
    save_flow(learn_flow(inputs.timelines, inputs.catalog), out / "flow.json")
    return out


@pytest.fixture(scope="session")
def workbench_runs(tmp_path_factory) -> Path:
    """WorkBench's published email runs converted by `toolshift traces convert workbench`."""
    from toolshift.traces.workbench import convert_workbench

    source = SHARED_DATA / WORKBENCH_EMAIL
    if not source.is_dir():
        pytest.skip(f"real data not found at {source}")
    out = tmp_path_factory.mktemp("workbench")
    convert_workbench(source).write(out)
    return out


@pytest.fixture
def tau2_results(tmp_path) -> Path:
    """A τ²-bench results file in τ²'s own format (the package's example run)."""
    target = tmp_path / "tau2" / "airline_results.json"
    target.parent.mkdir()
    shutil.copyfile(EXAMPLE_RUN, target)
    return target


def add_corrupt_files(folder: Path) -> dict[str, Path]:
    """A folder of results gets three bad files: a store with no header, a catalog that is not JSON, and a
    store with one bad line among good ones."""
    folder.mkdir(parents=True, exist_ok=True)
    headless = folder / "headless.episodes.jsonl"
    headless.write_text('{"format": "toolshift.episode/1", "id": "x", "task_id": "1", "domain": "d"}\n')
    catalog = folder / "broken.catalog.json"
    catalog.write_text('{"format": "toolshift.catalog/1", "tools": [')
    one_bad = folder / "one-bad-line.episodes.jsonl"
    write_episodes(one_bad, [make_episode(k, agent="with-a-bad-line") for k in range(3)])
    lines = one_bad.read_text(encoding="utf-8").splitlines(keepends=True)
    one_bad.write_text("".join([*lines[:2], '{"id": "half", "task_id": \n', *lines[2:]]), encoding="utf-8")
    return {"headless": headless, "catalog": catalog, "one_bad": one_bad}


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium for a module's browser tests (contexts are made per use).

    Per module, not per session: Playwright's sync API keeps an event loop marked running in this thread
    while the browser is open, so any later test that calls `asyncio.run` (building runs, serving worlds)
    would be refused; a module's end closes it. Session fixtures (the runs) are made before it."""
    from .pages import launch_chromium

    p, browser = launch_chromium()
    yield browser
    browser.close()
    p.stop()


@pytest.fixture(scope="module")
def browser(chromium):
    """A context of the module's Chromium with the page's CSP bypassed (Playwright evaluates its waits)."""
    from .pages import TIMEOUT_MS, VIEWPORT

    context = chromium.new_context(viewport=VIEWPORT, bypass_csp=True)
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()
