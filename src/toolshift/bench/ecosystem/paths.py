"""`toolshift bench reference`: step- and cost-optimal reference paths for every task × version, replayed to Δgold.

Each path is found by the DP of `toolshift.bench.reference` over the version's implementations an
agent could use for that task (a merge only on blocks where one call can do it from what is known
before the block, `knowledge.TaskKnowledge`), then turned into concrete calls (each block's
implementation plans its calls from the task's gold calls) and replayed on a fresh world of that
version: a path counts only if every call succeeds, every argument of every call is a fact of the
task or a value an earlier call of the path returned, and its diff covers Δgold. Paths that fail are
kept in the file, marked with the reason, and excluded from scoring.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from toolshift.bench.ecosystem.catalog import DomainCatalog
from toolshift.bench.ecosystem.knowledge import TaskKnowledge, facts_known, known_from, unknown_arguments
from toolshift.bench.ecosystem.store import (
    REFERENCE_FORMAT,
    atomic_write,
    compiled_domain,
    domain_tasks,
    ecosystem_dir,
    load_ecosystem,
    load_history,
    rebuild_catalog,
)
from toolshift.bench.reference import Implementation, ImplementationIndex, ReferencePath, Usable, optimal_path
from toolshift.errors import BadInputError
from toolshift.fileio import atomic_path, read_text
from toolshift.models import Task
from toolshift.world.state.world import World
from toolshift.world.toolerror import ToolError


class PathRecord(BaseModel):
    """One optimal path: its implementations, blocks, the calls it makes, and its weights."""

    impls: list[str]
    blocks: list[tuple[int, int]]
    tools: list[str]
    steps: int
    cost: float
    calls: list[tuple[str, dict[str, Any]]] = Field(default_factory=list)
    replay_ok: bool | None = None
    replay_error: str = ""


class ReferenceRecord(BaseModel):
    """A task's reference paths in one version (one line of references.jsonl)."""

    task_id: str
    domain: str
    version: int
    split: str | None = None
    step: PathRecord | None = None
    cost: PathRecord | None = None

    @property
    def valid(self) -> bool:
        return bool(self.step and self.cost and self.step.replay_ok and self.cost.replay_ok)


class ReferenceHeader(BaseModel):
    format: str = REFERENCE_FORMAT
    ecosystem: str
    instances: int
    valid: int
    failed_replay: int
    not_callable: int = 0
    """Paths (step or cost) with an argument neither a fact nor in an earlier result: excluded."""
    no_path: int
    dp_seconds: float
    replay_seconds: float


def _record(path: ReferencePath | None) -> PathRecord | None:
    if path is None:
        return None
    return PathRecord(
        impls=list(path.implementation_ids),
        blocks=[(b.start, b.end) for b in path.blocks],
        tools=list(path.tools),
        steps=path.steps,
        cost=path.cost,
    )


def plan_calls(cat: DomainCatalog, task: Task, path: PathRecord) -> list[tuple[str, dict[str, Any]]]:
    """The concrete calls of a path: each block's implementation plans them from the block's gold calls."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for impl_id, (start, end) in zip(path.impls, path.blocks, strict=True):
        calls += cat.impls[impl_id].plan(task.gold_path[start:end])
    return calls


NOT_CALLABLE = "not callable"


def replay(world: World, fresh: Any, calls: list[tuple[str, dict[str, Any]]], task: Task) -> str:
    """Run `calls` on a fresh state; '' when every call succeeds with arguments an agent can know
    (the task's facts and earlier results of the path) and the diff covers Δgold, else why not."""
    world.restore(fresh)
    known = facts_known(task)
    for k, (name, args) in enumerate(calls):
        unknown = unknown_arguments(args, known, _schema(world, name))
        if unknown:
            return (
                f"{NOT_CALLABLE}: call {k} ({name}) needs {', '.join(unknown)}, neither a fact of the task"
                " nor in an earlier result"
            )
        r = world.call(name, args)
        if not r.ok:
            return f"{name}: {r.error}"
        known |= known_from([r.result])
    if not task.covered_by(world.changes_since(fresh)):
        return "the diff does not cover Δgold"
    return ""


def _schema(world: World, name: str) -> dict[str, Any] | None:
    try:
        return world.tool(name).input_schema
    except ToolError:
        return None


def usable_for(task: Task, schemas: dict[str, dict[str, Any]] | None = None) -> Usable:
    """The blocks of this task's sequence an implementation can serve: a merge only where one call can
    do the block with what is known before it."""
    knowledge = TaskKnowledge(task, schemas)

    def usable(impl: Implementation, start: int) -> bool:
        # any implementation of several functions in one call: a merge, or one renamed, re-parameterised
        # or reformatted since (its kind is then that transformation's)
        return len(impl.covers) == 1 or knowledge.block_usable(start, start + len(impl.covers))

    return usable


def compute_references(
    build: str | Path,
    *,
    validate: bool = True,
    progress: Callable[[str], None] | None = None,
) -> tuple[ReferenceHeader, list[ReferenceRecord]]:
    """Reference paths for every task × version of the evolved build; writes references.jsonl."""
    eco = load_ecosystem(build)
    records: list[ReferenceRecord] = []
    dp_seconds = replay_seconds = 0.0
    for domain in eco.domains:
        tasks = domain_tasks(build, domain)
        history = load_history(build, domain)
        compiled = compiled_domain(build, domain)
        schemas = {t.name: t.input_schema for t in compiled.tools}
        usables = [usable_for(t, schemas) for t in tasks]
        for entry in history.versions:
            t0 = time.perf_counter()
            index = ImplementationIndex.of(entry.implementations())
            recs = []
            for task, usable in zip(tasks, usables, strict=True):
                recs.append(
                    ReferenceRecord(
                        task_id=task.id,
                        domain=domain,
                        version=entry.version,
                        split=task.split,
                        step=_record(optimal_path(task.base_functions, index, "step", usable)),
                        cost=_record(optimal_path(task.base_functions, index, "cost", usable)),
                    )
                )
            dp_seconds += time.perf_counter() - t0
            if validate:
                t1 = time.perf_counter()
                world = World(compiled)
                cat = rebuild_catalog(world, tasks, history, entry.version)
                cat.world(world)
                fresh = world.snapshot()
                for task, rec in zip(tasks, recs, strict=True):
                    for path in (rec.step, rec.cost):
                        if path is None:
                            continue
                        path.calls = plan_calls(cat, task, path)
                        path.replay_error = replay(world, fresh, path.calls, task)
                        path.replay_ok = not path.replay_error
                world.close()
                replay_seconds += time.perf_counter() - t1
            records.extend(recs)
        if progress:
            progress(domain)
    header = ReferenceHeader(
        ecosystem=eco.id,
        instances=len(records),
        valid=sum(r.valid for r in records),
        failed_replay=sum(
            1
            for r in records
            if r.step and r.cost and (r.step.replay_ok is False or r.cost.replay_ok is False)
        ),
        not_callable=sum(
            1
            for r in records
            for p in (r.step, r.cost)
            if p is not None and p.replay_error.startswith(NOT_CALLABLE)
        ),
        no_path=sum(1 for r in records if r.step is None or r.cost is None),
        dp_seconds=round(dp_seconds, 3),
        replay_seconds=round(replay_seconds, 2),
    )
    lines = [header.model_dump_json()] + [r.model_dump_json() for r in records]
    atomic_write(ecosystem_dir(build) / "references.jsonl", "\n".join(lines) + "\n")
    return header, records


def load_references(build: str | Path) -> tuple[ReferenceHeader, list[ReferenceRecord]]:
    """Read references.jsonl; refuses one computed for a different evolved ecosystem."""
    eco = load_ecosystem(build)
    path = ecosystem_dir(build) / "references.jsonl"
    if not path.is_file():
        raise BadInputError("no reference paths; run `toolshift bench reference` first", source=str(path))
    lines = read_text(path, what="reference paths").splitlines()
    if not lines:
        raise BadInputError("empty file: no header line", source=str(path), record=0)
    header = _reference_line(ReferenceHeader, lines[0], path, 0)
    if header.format != REFERENCE_FORMAT:
        raise BadInputError(f"unknown reference format {header.format!r}", source=str(path), field="format")
    if header.ecosystem != eco.id:
        raise BadInputError(
            f"reference paths were computed for ecosystem {header.ecosystem}, not {eco.id}; run reference again",
            source=str(path),
            field="ecosystem",
        )
    records = [
        _reference_line(ReferenceRecord, line, path, k)
        for k, line in enumerate(lines[1:], start=1)
        if line.strip()
    ]
    return header, records


def _reference_line(model: type[BaseModel], line: str, path: Path, k: int) -> Any:
    """One line of references.jsonl as `model`; a bad line is refused naming its line and field."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"malformed JSON at column {exc.colno}", source=str(path), record=k) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path), record=k) from None


def drift(records: list[ReferenceRecord], versions: int) -> list[dict[str, Any]]:
    """Per transition and criterion: how many tasks' reference weight fell, stayed or rose, and the mean weight."""
    by = {(r.task_id, r.version): r for r in records if r.valid}
    rows: list[dict[str, Any]] = []
    for v in range(1, versions + 1):
        row: dict[str, Any] = {"version": v}
        for crit in ("step", "cost"):
            weights = [
                getattr(getattr(r, crit), "steps" if crit == "step" else "cost")
                for (t, vv), r in by.items()
                if vv == v
            ]
            row[f"mean_{crit}"] = sum(weights) / len(weights) if weights else float("nan")
            if v == 1:
                continue
            fell = same = rose = 0
            for (t, vv), r in by.items():
                if vv != v or (t, v - 1) not in by:
                    continue
                p = getattr(by[(t, v - 1)], crit)
                c = getattr(r, crit)
                a, b = (p.steps, c.steps) if crit == "step" else (p.cost, c.cost)
                if b < a - 1e-9:
                    fell += 1
                elif b > a + 1e-9:
                    rose += 1
                else:
                    same += 1
            row[f"{crit}_fell"], row[f"{crit}_same"], row[f"{crit}_rose"] = fell, same, rose
        rows.append(row)
    return rows


def plot_drift(rows: list[dict[str, Any]], out: Path) -> Path:
    """The seed's Figure 8: share of tasks whose reference weight fell / stayed / rose per transition."""
    import matplotlib.pyplot as plt

    fig = drift_figure(rows)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=120, format=Path(out).suffix.lstrip(".") or "png")
    plt.close(fig)
    return Path(out)


def drift_figure(rows: list[dict[str, Any]]) -> Any:
    """plot_drift's figure (open; the caller closes it); versions are whole-number ticks v1, v2 …"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trans = [r for r in rows if r["version"] > 1]
    labels = [f"v{r['version'] - 1}→v{r['version']}" for r in trans]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, crit in zip(axes[:2], ("step", "cost"), strict=True):
        fell = [r[f"{crit}_fell"] for r in trans]
        same = [r[f"{crit}_same"] for r in trans]
        rose = [r[f"{crit}_rose"] for r in trans]
        total = [max(1, a + b + c) for a, b, c in zip(fell, same, rose, strict=True)]
        f = [100 * a / t for a, t in zip(fell, total, strict=True)]
        s = [100 * a / t for a, t in zip(same, total, strict=True)]
        r_ = [100 * a / t for a, t in zip(rose, total, strict=True)]
        ax.bar(labels, f, color="#2a9d8f", label="fell (better path)")
        ax.bar(labels, s, bottom=f, color="#d9d9d9", label="unchanged")
        ax.bar(
            labels,
            r_,
            bottom=[a + b for a, b in zip(f, s, strict=True)],
            color="#e76f51",
            label="rose (degraded)",
        )
        ax.set_title(f"{crit.capitalize()} reference weight between versions")
        ax.set_ylabel("% of tasks")
        ax.set_ylim(0, 100)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize=8, frameon=False)
    versions = [r["version"] for r in rows]
    axes[2].plot(versions, [r["mean_step"] for r in rows], marker="o", label="mean reference steps")
    axes[2].plot(versions, [r["mean_cost"] for r in rows], marker="s", label="mean reference cost")
    axes[2].set_xticks(versions, [f"v{v}" for v in versions])  # whole versions, never 1.5
    axes[2].set_xlabel("version")
    axes[2].set_title("Mean reference weight per version")
    axes[2].legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
