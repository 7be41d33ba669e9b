"""Benchmark builds: per domain, the spec copy, its dependency graph and its validated tasks, resumable.

Layout (format `toolshift.bench-build/2`, docs/formats.md):
`DIR/manifest.json`, and per domain `DIR/domains/<d>/{spec.yaml, graph.json, tasks.jsonl, report.json}`.
`report.json` is written last and doubles as the domain's completion marker: a rerun skips a
domain whose marker matches the spec digest, seed, target and the digest of its tasks file.
The manifest records every domain's spec and tasks digests, and every reader checks the whole build
against it (`load_manifest`): a build is used as built or refused, naming the file that differs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from toolshift.bench.instructions import paraphrase
from toolshift.bench.synthesis import Synthesizer
from toolshift.errors import BadInputError, ToolshiftError
from toolshift.fileio import read_bytes, read_json, read_text, require_regular, write_text_atomic
from toolshift.models import Task, TaskRevision
from toolshift.taskfile import read_tasks as read_task_file
from toolshift.world.language.spec import load_spec
from toolshift.world.state.compiler import compile_domain
from toolshift.world.state.registry import resolve_spec_path
from toolshift.world.state.world import World

BUILD_FORMAT = "toolshift.bench-build/2"
REPORT_FORMAT = "toolshift.bench-report/2"
TRAIN_FRACTION = 0.75
MIN_TASKS_PER_DOMAIN = 10


class DomainEntry(BaseModel):
    name: str
    title: str = ""
    status: Literal["ok", "short", "failed"]
    tools: int = 0
    tasks: int = 0
    train: int = 0
    test: int = 0
    target: int = 0
    message: str = ""
    spec_digest: str
    """sha256 (16 hex) of `domains/<d>/spec.yaml`."""
    tasks_digest: str
    """sha256 (16 hex) of `domains/<d>/tasks.jsonl`, byte for byte."""


class Manifest(BaseModel):
    format: str = BUILD_FORMAT
    seed: int
    per_domain: int
    domains: list[DomainEntry]
    total_tasks: int = 0
    total_tools: int = 0
    train: int = 0
    test: int = 0


class DomainReport(BaseModel):
    """`report.json`: what synthesis did for one domain, and the inputs that make the build resumable."""

    format: str = REPORT_FORMAT
    domain: str
    spec_digest: str
    seed: int
    target: int
    made: int
    attempts: int
    rejections: dict[str, int] = Field(default_factory=dict)
    """Attempts that produced no task, by reason."""
    candidates_passed_over: dict[str, int] = Field(default_factory=dict)
    """Candidate rows tried and passed over inside attempts, by reason (mostly preconditions)."""
    tools: int
    title: str = ""
    status: Literal["ok", "short", "failed"]
    message: str = ""
    model: str = ""
    """The paraphrasing model (`--model`), empty for template-only instructions."""
    paraphrase: dict[str, int] = Field(default_factory=dict)
    """With a model: instructions kept as paraphrased, and refusals by reason (the template is kept)."""
    tasks_digest: str = ""
    """sha256 (16 hex) of the tasks.jsonl this report describes; a resume requires it to match."""


def spec_text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_digest(path: Path) -> str:
    return hashlib.sha256(read_bytes(path)).hexdigest()[:16]


def domain_key(name: str) -> str:
    """The build's folder name for a domain given by name or by spec path (the file stem)."""
    return Path(name).stem if name.endswith((".yaml", ".yml")) or "/" in name else name


def _atomic_write(path: Path, text: str) -> None:
    write_text_atomic(path, text)


def assign_splits(tasks: list[Task], seed: int) -> None:
    """A fixed 75/25 train/test split by task within each domain, from the seed and the task ids."""
    ranked = sorted(tasks, key=lambda t: hashlib.sha256(f"{seed}:{t.id}".encode()).hexdigest())
    n_train = round(len(ranked) * TRAIN_FRACTION)
    for i, t in enumerate(ranked):
        t.split = "train" if i < n_train else "test"


def carry_versions(new: list[Task], old: list[Task], reason: str) -> None:
    """Keep each task's version when its content is unchanged; bump it and record why when it changed."""
    previous = {t.id: t for t in old}
    for t in new:
        fp = t.fingerprint()
        before = previous.get(t.id)
        if before is None:
            t.version = 1
            t.history = [TaskRevision(version=1, reason="synthesised", fingerprint=fp)]
        elif before.fingerprint() == fp:
            t.version, t.history = before.version, list(before.history)
        else:
            t.version = before.version + 1
            t.history = [*before.history, TaskRevision(version=t.version, reason=reason, fingerprint=fp)]


def gold_path_problems(world: World, task: Task) -> list[tuple[str, str]]:
    """(field, why) for each gold-path step that names a tool the world lacks or passes an argument its tool
    does not take: read from the catalog, whatever a replay would let through (issue 56)."""
    tools = {t.name: t for t in world.tools}
    out: list[tuple[str, str]] = []
    for i, call in enumerate(task.gold_path):
        tool = tools.get(call.tool)
        if tool is None:
            out.append((f"gold_path[{i}].tool", f"no tool {call.tool!r} in domain {world.name}"))
            continue
        extra = sorted(set(call.arguments) - set(tool.input_schema.get("properties") or {}))
        if extra:
            out.append(
                (f"gold_path[{i}].arguments", f"{call.tool} takes no argument {', '.join(map(repr, extra))}")
            )
    return out


def require_gold_paths(world: World, tasks: list[Task], source: str) -> None:
    """Refuse the first task whose gold path `gold_path_problems` faults, naming file, task and field."""
    for task in tasks:
        for field_name, why in gold_path_problems(world, task)[:1]:
            raise BadInputError(why, source=source, record=task.id, field=field_name)


def replay_problems(world: World, task: Task) -> list[str]:
    """Replay a task's gold path on `world` (already fresh) and list every way it misses its record: first
    every step `gold_path_problems` faults, then what the replay shows."""
    base = world.snapshot()
    problems: list[str] = [f"{field_name}: {why}" for field_name, why in gold_path_problems(world, task)]
    for i, call in enumerate(task.gold_path):
        res = world.call(call.tool, call.arguments)
        if not res.ok:
            problems.append(f"step {i} {call.tool} failed: {res.error}")
        elif json.dumps(res.result, sort_keys=True, default=str) != json.dumps(
            call.result, sort_keys=True, default=str
        ):
            problems.append(f"step {i} {call.tool} returned a different result")
    delta = world.diff(base)
    if [c.model_dump(mode="json") for c in delta] != [
        c.model_dump(mode="json") for c in task.expected_changes
    ]:
        problems.append("replayed changes differ from expected_changes")
    if not task.expected_changes:
        problems.append("expected_changes is empty")
    world.restore(base)
    reads = {t.name for t in world.tools if t.effect == "read"}
    for call in task.gold_path:
        if call.tool in reads:
            world.call(call.tool, call.arguments)
    if task.covered_by(world.diff(base)):
        problems.append("a read-only replay already satisfies the task")
    world.restore(base)
    return problems


def read_tasks(path: Path) -> list[Task]:
    """A domain's tasks in a build; none when the domain has no task file yet or kept no task."""
    return read_task_file(path, missing_ok=True, allow_empty=True)


def _read_report(path: Path) -> DomainReport | None:
    """A domain's report, or None when it is missing, unreadable or of another format (not done)."""
    try:
        rep = DomainReport.model_validate_json(read_text(path, what="domain report"))
    except (BadInputError, ValidationError, ValueError):
        return None
    return rep if rep.format == REPORT_FORMAT else None


def build_domain(
    out: Path,
    name: str,
    *,
    seed: int,
    per_domain: int,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
    rewrite: Callable[[str], str] | None = None,
    model: str = "",
) -> DomainReport:
    """Build (or resume) one domain; a domain short of its target says why, by rejection reason."""
    path = resolve_spec_path(name)
    name = domain_key(name)
    text = read_text(path, what="domain spec")
    digest = spec_text_digest(text)
    ddir = out / "domains" / name
    report_path = ddir / "report.json"
    done = _read_report(report_path)
    tasks_path = ddir / "tasks.jsonl"
    if (
        not force
        and done is not None
        and (done.spec_digest, done.seed, done.target, done.model) == (digest, seed, per_domain, model)
        and tasks_path.is_file()
        and file_digest(tasks_path) == done.tasks_digest
    ):
        return done
    ddir.mkdir(parents=True, exist_ok=True)
    _atomic_write(ddir / "spec.yaml", text)
    spec = load_spec(path)
    compiled = compile_domain(spec, str(path))
    world = World(compiled)
    tools = len(world.tools)
    try:
        synth = Synthesizer(world, seed=seed)
    except BadInputError as exc:
        report = DomainReport(
            domain=name, spec_digest=digest, seed=seed, target=per_domain, made=0, attempts=0,
            tools=tools, title=spec.title, status="failed", message=exc.detail, tasks_digest=spec_text_digest(""),
        )  # fmt: skip
        _atomic_write(tasks_path, "")
        _atomic_write(report_path, report.model_dump_json(indent=1) + "\n")
        return report
    synth.graph.save(ddir / "graph.json")
    tasks, rep = synth.synthesize(per_domain, progress=progress)
    # independent check on a fresh world: every kept task replays to exactly its Δgold
    fresh = World(compiled)
    kept: list[Task] = []
    for t in tasks:
        if replay_problems(fresh, t):
            rep.rejections["final_replay_failed"] += 1
            continue
        kept.append(t)
    paraphrased: Counter[str] = Counter()
    if rewrite is not None:
        forbidden = tuple(t.name for t in world.tools) + tuple(a.name for a in spec.actions)
        for t in kept:
            try:
                t.instruction, why = paraphrase(t.instruction, rewrite, forbidden)
            except ToolshiftError:
                why = "paraphrase_model_error"
            paraphrased[why or "kept"] += 1
    assign_splits(kept, seed)
    old = read_tasks(ddir / "tasks.jsonl")
    carry_versions(kept, old, reason=f"rebuilt (seed {seed}, spec {digest})")
    tasks_text = "".join(t.model_dump_json() + "\n" for t in kept)
    _atomic_write(tasks_path, tasks_text)
    floor = min(MIN_TASKS_PER_DOMAIN, per_domain)
    status: Literal["ok", "short", "failed"] = "ok" if len(kept) >= per_domain else "short"
    message = ""
    if status == "short":
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(rep.rejections.items(), key=lambda kv: -kv[1])[:6])
        message = f"made {len(kept)} of {per_domain} tasks in {rep.attempts} attempts; rejected: {reasons or 'none'}"
        if len(kept) < floor:
            status = "failed"
    report = DomainReport(
        domain=name, spec_digest=digest, seed=seed, target=per_domain, made=len(kept), attempts=rep.attempts,
        rejections=dict(sorted(rep.rejections.items())),
        candidates_passed_over=dict(sorted(rep.candidates.items())), tools=tools, model=model,
        paraphrase=dict(sorted(paraphrased.items())), title=spec.title, status=status,
        message=message, tasks_digest=spec_text_digest(tasks_text),
    )  # fmt: skip
    _atomic_write(report_path, report.model_dump_json(indent=1) + "\n")
    fresh.close()
    world.close()
    return report


def _existing_manifest(out: Path) -> Manifest | None:
    """The manifest already in `out`, unchecked (None when there is none or it is not this format)."""
    try:
        data = read_json(out / "manifest.json", what="build manifest")
        return Manifest.model_validate(data) if data.get("format") == BUILD_FORMAT else None
    except (BadInputError, ValueError, ValidationError, AttributeError):
        return None


def check_rebuild(out: Path, names: list[str], seed: int, per_domain: int) -> None:
    """Refuse, before any work, a partial rebuild that would mix seeds or targets in one build."""
    old = _existing_manifest(out)
    if old is None or (old.seed, old.per_domain) == (seed, per_domain):
        return
    rest = [e.name for e in old.domains if e.name not in set(map(domain_key, names))]
    if rest:
        raise BadInputError(
            f"this build was made with --seed {old.seed} --per-domain {old.per_domain}; rebuilding only "
            f"{', '.join(map(domain_key, names))} with --seed {seed} --per-domain {per_domain} would leave "
            f"{len(rest)} domain(s) made otherwise ({', '.join(rest[:4])}{', …' if len(rest) > 4 else ''}; "
            "rebuild them all, or use another --out)",
            source=str(out / "manifest.json"),
        )


def _entry(out: Path, name: str) -> DomainEntry | None:
    ddir = out / "domains" / name
    rep = _read_report(ddir / "report.json")
    if rep is None:
        return None
    tasks = read_tasks(ddir / "tasks.jsonl")
    return DomainEntry(
        name=name, title=rep.title, status=rep.status, tools=rep.tools, tasks=len(tasks),
        train=sum(1 for t in tasks if t.split == "train"), test=sum(1 for t in tasks if t.split == "test"),
        target=rep.target, message=rep.message, spec_digest=rep.spec_digest,
        tasks_digest=file_digest(ddir / "tasks.jsonl"),
    )  # fmt: skip


def write_manifest(out: Path, names: list[str], seed: int, per_domain: int) -> Manifest:
    """Record the domains just built; a build's other domains keep their entries (and digests) as they were."""
    check_rebuild(out, names, seed, per_domain)
    built = {name: _entry(out, name) for name in map(domain_key, names)}
    old = _existing_manifest(out)
    entries: list[DomainEntry] = []
    for e in old.domains if old is not None else []:
        entry = built.pop(e.name) if e.name in built else e
        if entry is not None:
            entries.append(entry)
    entries += [e for e in built.values() if e is not None]
    m = Manifest(
        seed=seed,
        per_domain=per_domain,
        domains=entries,
        total_tasks=sum(e.tasks for e in entries),
        total_tools=sum(e.tools for e in entries),
        train=sum(e.train for e in entries),
        test=sum(e.test for e in entries),
    )
    _atomic_write(out / "manifest.json", m.model_dump_json(indent=1) + "\n")
    _verified.clear()
    return m


def clean_domain(out: Path, name: str) -> None:
    shutil.rmtree(out / "domains" / name, ignore_errors=True)


# --- reading a build ---------------------------------------------------------------------------------


def load_manifest(out: str | Path) -> Manifest:
    """A build's manifest, after checking the whole build against it (`check_build`)."""
    path = Path(out) / "manifest.json"
    if not path.is_file():
        raise BadInputError("not a bench build: no manifest.json", source=str(path))
    data = read_json(path, what="build manifest")
    if not isinstance(data, dict):
        raise BadInputError("not a bench build manifest (a JSON object)", source=str(path))
    if data.get("format") == "toolshift.bench-build/1":
        raise BadInputError(
            "made by an older toolshift (toolshift.bench-build/1 records no digests); rebuild it with "
            "`toolshift bench build --out DIR`",
            source=str(path),
            field="format",
        )
    if data.get("format") != BUILD_FORMAT:
        raise BadInputError(
            f"unknown build format {data.get('format') if isinstance(data, dict) else None!r} "
            f"(this reads {BUILD_FORMAT!r})",
            source=str(path),
            field="format",
        )
    try:
        m = Manifest.model_validate(data)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path)) from None
    check_build(Path(out), m)
    return m


_verified: dict[Path, tuple[Any, ...]] = {}
"""Builds checked in this process, by the size and mtime of every file checked (a change re-checks)."""


def check_build(out: Path, m: Manifest) -> None:
    """Check every domain the manifest lists against its files, by digest; refuse the first that differs.

    Per domain: `spec.yaml`, `tasks.jsonl` and `report.json` exist; the spec's digest is the manifest's
    and the report's; the tasks file's digest is the manifest's and the report's; the manifest's totals
    are the sums of its entries. The error names the file and field and says how to repair the build.
    """
    files = [out / "manifest.json"] + [
        out / "domains" / e.name / f for e in m.domains for f in ("spec.yaml", "tasks.jsonl", "report.json")
    ]
    try:
        stamp = tuple((st.st_size, st.st_mtime_ns) for st in (f.stat() for f in files))
    except OSError:
        stamp = ()
    key = out.resolve()
    if stamp and _verified.get(key) == stamp:
        return
    repair = "rebuild the domain with `toolshift bench build --out {out} --domains {d} --force`"
    manifest = str(out / "manifest.json")
    for i, e in enumerate(m.domains):
        ddir = out / "domains" / e.name
        hint = repair.format(out=out, d=e.name)
        for f in ("spec.yaml", "tasks.jsonl", "report.json"):
            if not (ddir / f).exists():
                raise BadInputError(
                    f"missing (the manifest lists domain {e.name}); {hint}", source=str(ddir / f)
                )
            require_regular(ddir / f, what=f"{f} of domain {e.name}")
        rep = _read_report(ddir / "report.json")
        if rep is None:
            raise BadInputError(f"not a {REPORT_FORMAT} report; {hint}", source=str(ddir / "report.json"))
        spec = spec_text_digest(read_text(ddir / "spec.yaml", what="domain spec"))
        if spec != e.spec_digest or spec != rep.spec_digest:
            raise BadInputError(
                f"the spec's digest is {spec}, but the manifest records {e.spec_digest} and report.json "
                f"{rep.spec_digest}: the tasks were not made from this spec; {hint}",
                source=str(ddir / "spec.yaml"),
            )
        tasks = file_digest(ddir / "tasks.jsonl")
        if tasks != e.tasks_digest or tasks != rep.tasks_digest:
            raise BadInputError(
                f"digest {tasks} differs from the manifest's {e.tasks_digest} (domain {e.name} has "
                f"{e.tasks} tasks: {e.train} train, {e.test} test); the file was changed after the build; {hint}",
                source=str(ddir / "tasks.jsonl"),
                field="tasks_digest",
            )
        if e.tasks != rep.made:
            raise BadInputError(
                f"domain {e.name}: the manifest says {e.tasks} tasks, report.json {rep.made}",
                source=manifest, record=i, field="tasks",
            )  # fmt: skip
    for name, total in (
        ("total_tasks", "tasks"),
        ("train", "train"),
        ("test", "test"),
        ("total_tools", "tools"),
    ):
        summed = sum(getattr(e, total) for e in m.domains)
        if getattr(m, name) != summed:
            raise BadInputError(
                f"{getattr(m, name)} is not the sum over its domains ({summed})", source=manifest, field=name
            )
    if stamp:
        _verified[key] = stamp


def iter_domain_tasks(out: str | Path) -> Iterator[tuple[str, list[Task]]]:
    m = load_manifest(out)
    for e in m.domains:
        yield e.name, read_tasks(Path(out) / "domains" / e.name / "tasks.jsonl")


def load_tasks(
    out: str | Path, domain: str | None = None, split: Literal["train", "test"] | None = None
) -> list[Task]:
    """Tasks of a build (checked whole against its manifest), optionally of one domain and one split."""
    if domain is not None:
        if (Path(out) / "manifest.json").is_file():
            load_manifest(out)
        path = Path(out) / "domains" / domain / "tasks.jsonl"
        if not path.is_file():
            raise BadInputError(f"no tasks for domain {domain!r} in this build", source=str(out))
        tasks = read_tasks(path)
    else:
        tasks = [t for _, ts in iter_domain_tasks(out) for t in ts]
    return [t for t in tasks if split is None or t.split == split]


def build_world(out: str | Path, domain: str) -> World:
    """A fresh world compiled from the build's own copy of the domain spec — refused when the spec is not
    the one its tasks were made from (its digest differs from report.json's)."""
    path = Path(out) / "domains" / domain / "spec.yaml"
    if not path.is_file():
        raise BadInputError(f"no spec for domain {domain!r} in this build", source=str(out))
    text = read_text(path, what="domain spec")
    rep = _read_report(path.with_name("report.json"))
    if rep is None or rep.spec_digest != spec_text_digest(text):
        raise BadInputError(
            f"digest {spec_text_digest(text)} is not the spec_digest in report.json "
            f"({rep.spec_digest if rep else 'no report'}): the tasks were made from another spec",
            source=str(path),
            field="spec_digest",
        )
    return World(compile_domain(load_spec(path), str(path)))


def domain_report(out: str | Path, domain: str) -> DomainReport:
    rep = _read_report(Path(out) / "domains" / domain / "report.json")
    if rep is None:
        raise BadInputError(f"no report for domain {domain!r}", source=str(out))
    return rep


def summary_row(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "split": task.split,
        "path_length": len(task.gold_path),
        "functions": len(set(task.base_functions)),
        "changes": len(task.expected_changes),
    }
