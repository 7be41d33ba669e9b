"""Fixtures for evolve tests: the agents demo's tasks."""

from __future__ import annotations

import pytest

from toolshift.agents.demo import demo_tasks
from toolshift.models import Task


@pytest.fixture(scope="session")
def demo() -> list[Task]:
    return demo_tasks()


@pytest.fixture(scope="session")
def cancel(demo: list[Task]) -> Task:
    return demo[0]


@pytest.fixture(scope="session")
def bench_clinic(tmp_path_factory) -> list[Task]:
    """Benchmark-synthesised clinic tasks (longer paths: lookups from a user-known value to a write)."""
    from toolshift.bench.build import build_domain, read_tasks

    out = tmp_path_factory.mktemp("build")
    build_domain(out, "clinic", seed=0, per_domain=8)
    return read_tasks(out / "domains" / "clinic" / "tasks.jsonl")
