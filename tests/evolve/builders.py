"""Helpers for evolve tests: a task as its program and as the block's task."""

from __future__ import annotations

from toolshift.evolve.program import TaskSpec, render_program, spec_from_task
from toolshift.models import Task


def program_of(task: Task) -> str:
    return render_program(task.domain, spec_of(task))


def spec_of(task: Task) -> TaskSpec:
    return spec_from_task(task.public_request, task.instruction, task.gold_path)
