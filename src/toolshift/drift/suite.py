"""A server's task suite across its versions: Δgold per task, and per version its reference path or why not.

The **stations** of a server are the versions where its catalog changes (the first of each run of versions
listing the same fingerprint) and its newest: a version identical to the one before it would repeat every
measurement exactly (D367).

Each task's Δgold is what its reference path does on a fresh sandbox of its **defining version**, the newest
station with every capability it needs. Every other station's own reference path is replayed on a fresh
sandbox too: the task is `ok` there when it makes exactly that Δgold, `absent` when the version lacks a
capability (the tool, or a schema that takes the call), `fails` when a call of its path answers with an error
(a published version's bug), and `differs` when the version's tools run but make another change (behaviour
changed under the same names). Only `ok` cases are scored; the others are listed.

File `toolshift.drift-suite/1` (docs/formats.md), one per server in the run folder; resumable as a whole.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.drift.capabilities import Resolution, resolve
from toolshift.drift.history import History, ServerHistory
from toolshift.drift.install import install, load_pins
from toolshift.drift.replay import replay
from toolshift.drift.tasks import DriftTask, make_tasks
from toolshift.errors import BadInputError
from toolshift.fileio import read_json, write_text_atomic
from toolshift.models import GoldCall, RowChange, Task

SUITE_FORMAT = "toolshift.drift-suite/1"
Status = Literal["ok", "absent", "fails", "differs"]


def stations(history: ServerHistory) -> list[str]:
    """The versions where the catalog changes, and the newest (D367)."""
    out: list[str] = []
    last = None
    listed = history.listed()
    for v in listed:
        if v.fingerprint != last:
            out.append(v.version)
            last = v.fingerprint
    if listed and listed[-1].version not in out:
        out.append(listed[-1].version)
    return out


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str
    version: str
    status: Status
    tools: list[str] = Field(default_factory=list)
    reason: str = ""


class SuiteTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: Task
    template: str
    defining: str
    program: list[tuple[str, dict[str, str]]]


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = SUITE_FORMAT
    server: str
    stations: list[str]
    fingerprints: dict[str, str]
    tasks: list[SuiteTask]
    cases: list[Case]

    def case(self, task: str, version: str) -> Case:
        return next(c for c in self.cases if c.task == task and c.version == version)

    def drift_tasks(self) -> list[DriftTask]:
        return [DriftTask(t.task, tuple((c, dict(p)) for c, p in t.program), t.template) for t in self.tasks]


def load_suite(path: Path) -> Suite:
    raw = read_json(path, what="drift suite")
    if not isinstance(raw, dict) or raw.get("format") != SUITE_FORMAT:
        raise BadInputError(f"not a {SUITE_FORMAT} file", source=str(path), field="format")
    try:
        return Suite.model_validate(raw)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path)) from None


def _key(changes: list[RowChange]) -> list[str]:
    return sorted(json.dumps(c.model_dump(mode="json"), sort_keys=True) for c in changes)


def _difference(got: list[RowChange], gold: list[RowChange]) -> str:
    have, want = {(c.table, c.key, c.field) for c in got}, {(c.table, c.key, c.field) for c in gold}
    parts = []
    if want - have:
        parts.append("missing " + ", ".join(sorted(f"{t} {k} {f}" for t, k, f in want - have)[:3]))
    if have - want:
        parts.append("extra " + ", ".join(sorted(f"{t} {k} {f}" for t, k, f in have - want)[:3]))
    if not parts:
        parts.append("other values in " + ", ".join(sorted({f"{c.table} {c.key}" for c in got})[:3]))
    return "; ".join(parts)


def build_suite(
    server: str,
    history: History,
    *,
    progress: Callable[[str, int | None], None] | None = None,
    workers: int = 2,
    only: Collection[str] | None = None,
) -> Suite:
    """Resolve and replay every task (or the tasks `only` names) on every station of `server` (the servers
    installed as needed)."""
    hist = history.servers[server]
    points = stations(hist)
    tasks = [t for t in make_tasks(server) if only is None or t.id in only]
    listings = {v: hist.at(v) for v in points}
    pins = load_pins()
    resolved = {(t.id, v): resolve(server, list(t.program), listings[v]) for t in tasks for v in points}
    jobs = [(t.id, v) for t in tasks for v in points if resolved[(t.id, v)].ok]
    if progress:
        progress(f"{server} replays", len(jobs))
    insts = {v: install(server, v, pins=pins) for v in points}

    def one(job: tuple[str, str]) -> tuple[tuple[str, str], Any]:
        out = asyncio.run(replay(insts[job[1]], resolved[job]))
        if progress:
            progress(f"{server} replays", None)
        return job, out

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        replays = dict(pool.map(one, jobs))
    suite_tasks: list[SuiteTask] = []
    cases: list[Case] = []
    for t in tasks:
        good = [v for v in points if (t.id, v) in replays and not replays[(t.id, v)].errors]
        if not good:
            raise BadInputError(f"task {t.id} runs on no version of {server}: its template needs mending")
        defining = good[-1]
        gold = replays[(t.id, defining)].changes
        if not gold:
            raise BadInputError(
                f"task {t.id} changes nothing on {server} {defining}: its template needs mending"
            )
        res: Resolution = resolved[(t.id, defining)]
        task = t.task.model_copy(
            update={
                "expected_changes": gold,
                "gold_path": [
                    GoldCall(tool=s.tool, arguments=s.template, function=s.capability) for s in res.steps
                ],
            }
        )
        suite_tasks.append(
            SuiteTask(task=task, template=t.template, defining=defining, program=list(t.program))
        )
        for v in points:
            r = resolved[(t.id, v)]
            tools = [s.tool for s in r.steps]
            if not r.ok:
                cases.append(Case(task=t.id, version=v, status="absent", reason=r.missing or ""))
                continue
            made = replays[(t.id, v)]
            if made.errors:
                cases.append(Case(task=t.id, version=v, status="fails", tools=tools, reason=made.errors[0]))
            elif _key(made.changes) != _key(gold):
                cases.append(
                    Case(
                        task=t.id,
                        version=v,
                        status="differs",
                        tools=tools,
                        reason=_difference(made.changes, gold),
                    )
                )
            else:
                cases.append(Case(task=t.id, version=v, status="ok", tools=tools))
    fingerprints = {v: listings[v].fingerprint for v in points}
    return Suite(server=server, stations=points, fingerprints=fingerprints, tasks=suite_tasks, cases=cases)


def suite_for(server: str, history: History, path: Path, **kw: Any) -> Suite:
    """The suite kept at `path`, rebuilt when the stations' catalogs or the task templates changed."""
    if path.exists():
        suite = load_suite(path)
        hist = history.servers[server]
        same_catalogs = suite.fingerprints == {v: hist.at(v).fingerprint for v in stations(hist)}
        same_tasks = [t.task.id for t in suite.tasks] == [t.id for t in make_tasks(server)] and all(
            [list(p) for p in s.program] == [list(p) for p in d.program]
            and s.task.instruction == d.task.instruction
            for s, d in zip(suite.tasks, make_tasks(server), strict=True)
        )
        if same_catalogs and same_tasks:
            return suite
    suite = build_suite(server, history, **kw)
    write_text_atomic(path, suite.model_dump_json(indent=1) + "\n")
    return suite
