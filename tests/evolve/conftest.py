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
