"""`toolshift bench import`: a bench build whose tasks are another benchmark's, imported rather than synthesised.

τ²-bench's airline and retail tasks (`toolshift.world.tau2.tasks`) are written in the layout of
`toolshift bench build` (spec copy, tasks, report, manifest; docs/formats.md), so everything that
reads a build (`bench evolve`, `bench reference`, `bench baseline`, `toolshift run --tasks`) runs
over them as over any world. A task whose expected actions fail on the world is kept with its
failing steps in the report (τ²-bench's evaluator replays such steps too); a task the world cannot
hold is listed with the reason. There is no `graph.json`: the dependency graph describes synthesised
CRUD paths, and these tasks come with their own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from toolshift.bench.build import (
    DomainReport,
    Manifest,
    _atomic_write,
    assign_splits,
    spec_text_digest,
    write_manifest,
)
from toolshift.fileio import read_text
from toolshift.world.state.registry import resolve_spec_path

IMPORTED_MODEL = "imported"
"""`report.json`'s `model` for an imported domain: its tasks were not synthesised."""


def import_domain(out: Path, name: str, *, seed: int = 0) -> tuple[DomainReport, list[str]]:
    """Write one imported world's build folder; returns its report and one line per reported problem."""
    from toolshift.world.tau2.tasks import import_tasks

    path = resolve_spec_path(name)
    text = read_text(path, what="domain spec")
    report = import_tasks(name)
    tasks = report.tasks
    if any(t.split is None for t in tasks):
        assign_splits([t for t in tasks if t.split is None], seed)
    ddir = out / "domains" / name
    ddir.mkdir(parents=True, exist_ok=True)
    _atomic_write(ddir / "spec.yaml", text)
    tasks_text = "".join(t.model_dump_json() + "\n" for t in tasks)
    _atomic_write(ddir / "tasks.jsonl", tasks_text)
    problems = [f"task {f.task_id} step {f.step} {f.tool}: {f.reason}" for f in report.gold_errors]
    problems += [f"task {task_id} not imported: {why}" for task_id, why in report.skipped]
    from toolshift.world.state.registry import load_domain

    rep = DomainReport(
        domain=name,
        spec_digest=spec_text_digest(text),
        seed=seed,
        target=len(tasks) + len(report.skipped),
        made=len(tasks),
        attempts=len(tasks) + len(report.skipped),
        rejections={"not_importable": len(report.skipped)} if report.skipped else {},
        tools=len(load_domain(name).tools),
        title=load_domain(name).spec.title,
        status="ok" if tasks and not report.skipped else ("short" if tasks else "failed"),
        message="; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""),
        model=IMPORTED_MODEL,
        tasks_digest=spec_text_digest(tasks_text),
    )
    _atomic_write(ddir / "report.json", rep.model_dump_json(indent=1) + "\n")
    return rep, problems


def import_build(
    out: Path, names: list[str], *, seed: int = 0, progress: Callable[[str], None] | None = None
) -> tuple[Manifest, dict[str, list[str]]]:
    """Import every named world into the build at `out`; the manifest and each world's problems."""
    out.mkdir(parents=True, exist_ok=True)
    problems: dict[str, list[str]] = {}
    for name in names:
        if progress is not None:
            progress(name)
        _, problems[name] = import_domain(out, name, seed=seed)
    return write_manifest(out, names, seed, 0), problems
