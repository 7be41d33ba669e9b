"""What `toolshift report` and `toolshift view` were given: every result file found, by kind, and the bad ones.

Paths are files or folders; folders are walked (hidden entries skipped). Each file is recognised by a
kind (docs/formats.md, "Result kinds"): an episode store, a τ²-bench results file or folder, a tool
catalog, a flow, a flows decision log, a benchmark build (a folder), a run's configuration or summary.
A file of a known kind that cannot be read is kept as bad, with the one-line reason, so the others are
still shown and the bad one is named; files of no kind are listed as not read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError, ToolshiftError
from toolshift.fileio import loads_json, open_input, read_bytes, read_json, write_text_atomic
from toolshift.report.episode_index import FileIndex, RunSet, default_cache_dir, index_file

MAX_CLASSIFY_BYTES = 256 * 1024 * 1024
"""A JSON file larger than this is not opened to find its kind (name it by its kind's file name)."""
MAX_DEPTH = 8
KINDS = (
    "episodes",
    "tau2-results",
    "catalog",
    "flow",
    "decision-log",
    "bench-build",
    "run-config",
    "run-results",
    "steward-results",
    "evolve-run",
    "loop-results",
    "notes",
)
"""The result kinds this reader recognises (docs/formats.md). A renderer names the kinds it draws on."""


@dataclass
class ResultFile:
    """One input: its path, its kind (or None: not a result file), and why it could not be read, if so."""

    path: Path
    kind: str | None
    error: str | None = None
    note: str = ""
    index: FileIndex | None = None
    """For episode sources (episode stores, τ²-bench results): the index that reads them."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.kind is not None and self.error is None

    def problems(self) -> list[str]:
        """This file's problems, one line each: why it is unreadable, or the lines that were left out."""
        if self.error:
            return [self.error]
        if self.index is None:
            return []
        out = list(self.index.errors)
        if self.index.bad_lines > len(self.index.errors):
            out.append(f"{self.path}: {self.index.bad_lines - len(self.index.errors)} more bad lines")
        if self.index.torn:
            out.append(f"{self.path}: a torn last line (an interrupted append) left out")
        return out


@dataclass
class Inputs:
    """Everything found under the given paths."""

    files: list[ResultFile]
    cache: Path

    def of(self, *kinds: str) -> list[ResultFile]:
        return [f for f in self.files if f.kind in kinds and f.ok]

    @property
    def bad(self) -> list[ResultFile]:
        return [f for f in self.files if f.kind is not None and f.problems()]

    def episode_sources(self) -> list[ResultFile]:
        return [f for f in self.files if f.ok and f.index is not None]

    def runset(self) -> RunSet:
        return RunSet([f.index for f in self.episode_sources() if f.index is not None])


def _walk(path: Path, depth: int = 0) -> Iterator[Path]:
    """Files and bench-build / τ²-bench folders under `path`, in name order, hidden entries skipped."""
    if path.is_file():
        yield path
        return
    if not path.is_dir():
        return
    if _is_build(path) or _is_tau2_dir(path) or _is_evolve_run(path) or depth > MAX_DEPTH:
        yield path
        return
    for child in sorted(path.iterdir()):
        if child.name.startswith("."):
            continue
        yield from _walk(child, depth + 1)


def _is_build(path: Path) -> bool:
    manifest = path / "manifest.json"
    if not manifest.is_file() or not (path / "domains").is_dir():
        return False
    # Any version: the bench's own reader accepts the current one and names an older one as bad input.
    return str(_json_format(manifest) or "").startswith("toolshift.bench-build/")


def _is_evolve_run(path: Path) -> bool:
    return (path / "evolve.json").is_file() and _json_format(path / "evolve.json") == "toolshift.evolve-run/1"


def _is_tau2_dir(path: Path) -> bool:
    return (path / "results.json").is_file() and (path / "simulations").is_dir()


def _json_format(path: Path) -> str | None:
    try:
        raw = read_json(path, what="manifest")
    except (OSError, BadInputError):
        return None
    return raw.get("format") if isinstance(raw, dict) else None


def _first_line(path: Path) -> bytes:
    with open_input(path) as fh:
        return fh.readline(1 << 20)


def classify(path: Path) -> tuple[str | None, Any]:
    """The kind of one file or folder, and what was read to decide it (the parsed JSON, where read)."""
    name = path.name
    if path.is_dir():
        if _is_build(path):
            return "bench-build", None
        if _is_tau2_dir(path):
            return "tau2-results", None
        if _is_evolve_run(path):
            return "evolve-run", None
        return None, None
    if name.endswith((".jsonl", ".jsonl.gz")):
        if name.endswith(".gz"):
            return ("episodes", None) if name.endswith(".episodes.jsonl.gz") else (None, None)
        first = _first_line(path)
        try:
            head = loads_json(first, source=str(path), record=1) if first.strip() else None
        except BadInputError:
            head = None
        if isinstance(head, dict) and head.get("format") == "toolshift.episodes/1":
            return "episodes", None
        if isinstance(head, dict) and {"decider", "score", "used"} <= head.keys():
            return "decision-log", None
        if name.endswith(".episodes.jsonl"):
            return "episodes", None  # named as one: its header is checked, and refused, when it is read
        if name.endswith(".decisions.jsonl"):
            return "decision-log", None
        return None, None
    if not name.endswith(".json"):
        return None, None
    if path.stat().st_size > MAX_CLASSIFY_BYTES:
        return None, None
    try:
        raw = loads_json(read_bytes(path, max_bytes=MAX_CLASSIFY_BYTES), source=str(path))
    except BadInputError as exc:  # not UTF-8, not JSON, or nested beyond the limit: named, never a crash
        if name.endswith(".catalog.json"):
            return "catalog", exc
        if (path.parent / "simulations").is_dir() or name == "results.json":
            return "tau2-results", exc
        return "unreadable-json", exc
    if not isinstance(raw, dict):
        return None, raw
    fmt = raw.get("format")
    if raw.get("kind") == "toolshift.flow":
        return "flow", raw
    if fmt == "toolshift.catalog/1" or name.endswith(".catalog.json"):
        return "catalog", raw
    if fmt == "toolshift.run/1":
        return "run-config", raw
    if fmt == "toolshift.run-results/1":
        return "run-results", raw
    if fmt == "toolshift.steward-results/1":
        return "steward-results", raw
    if fmt == "toolshift.loop-results/1":
        return "loop-results", raw
    if fmt == "toolshift.notes/1":
        return "notes", raw
    if isinstance(raw.get("simulations"), list) or (path.parent / "simulations").is_dir():
        return "tau2-results", raw
    return None, raw


def _tau2_key(path: Path) -> str:
    """A key over every file a τ²-bench result is read from (the dir layout has many)."""
    files = [path] if path.is_file() else [path / "results.json"]
    sims = (path if path.is_dir() else path.parent) / "simulations"
    if sims.is_dir():
        files += sorted(sims.glob("*.json"))
    body = "\0".join(f"{f.resolve()}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files)
    return hashlib.sha256(body.encode()).hexdigest()[:24]


def tau2_episodes(path: Path, cache: Path) -> tuple[Path, dict[str, Path], list[str]]:
    """A τ²-bench result converted once (toolshift.traces.tau2) into a cached episode store and catalogs.

    Malformed simulations are left out and named in the returned notes; the others are kept.
    """
    from toolshift.traces.catalog import catalog_path, save_catalog
    from toolshift.traces.store import write_episodes
    from toolshift.traces.tau2 import convert_tau2

    key = _tau2_key(path)
    folder = cache / f"{key}.tau2"
    done = folder / "converted.json"
    if done.is_file():
        state = read_json(done, what="τ²-bench conversion record")
        return (
            Path(state["episodes"]),
            {d: Path(p) for d, p in state["catalogs"].items()},
            list(state["notes"]),
        )
    conv = convert_tau2(path, skip_bad=True)
    folder.mkdir(parents=True, exist_ok=True)
    episodes = folder / "tau2.episodes.jsonl"
    write_episodes(episodes, conv.episodes, meta={"converter": "tau2", "inputs": [str(path)]})
    catalogs = {d: save_catalog(c, catalog_path(folder, d)) for d, c in conv.catalogs.items()}
    notes = [f"{path}: {n} simulations left out: {reason}" for reason, n in sorted(conv.skipped.items())]
    state = {"episodes": str(episodes), "catalogs": {d: str(p) for d, p in catalogs.items()}, "notes": notes}
    write_text_atomic(done, json.dumps(state))
    return episodes, catalogs, notes


def _open(path: Path, cache: Path) -> ResultFile:
    try:
        kind, raw = classify(path)
    except OSError as exc:
        return ResultFile(path, "unreadable", f"{path}: cannot read: {exc.strerror or exc}")
    if kind == "unreadable-json":
        return ResultFile(path, "unreadable", f"{path}: {raw.detail}")
    item = ResultFile(path, kind)
    if isinstance(raw, BadInputError):
        item.error = f"{path}: {raw.detail}"
        return item
    try:
        if kind == "episodes":
            item.index = index_file(path, cache=cache)
        elif kind == "tau2-results":
            episodes, catalogs, notes = tau2_episodes(path, cache)
            item.index = index_file(path, read_from=episodes, cache=cache)
            item.extra["catalogs"] = catalogs
            item.index.errors = notes + item.index.errors
            item.index.bad_lines += len(notes)
        elif kind == "catalog":
            from toolshift.traces.catalog import load_catalog

            item.extra["catalog"] = load_catalog(path)
        elif kind == "flow":
            from toolshift.flows.model import parse_flow

            item.extra["flow"] = parse_flow(raw, source=str(path))
        elif kind == "steward-results":
            if not isinstance(raw.get("supply", {}), dict) or not isinstance(raw.get("follow", {}), dict):
                raise BadInputError("supply and follow are objects", source=str(path), field="supply")
            item.extra["results"] = raw
        elif kind == "loop-results":
            if not isinstance(raw.get("conditions", {}), dict) or not isinstance(
                raw.get("definition", {}), dict
            ):
                raise BadInputError(
                    "conditions and definition are objects", source=str(path), field="conditions"
                )
            item.extra["results"] = raw
        elif kind == "bench-build":
            from toolshift.bench.ecosystem.store import load_ecosystem

            if (path / "ecosystem" / "manifest.json").is_file():
                item.extra["ecosystem"] = load_ecosystem(path)
            else:
                item.note = "not evolved (no ecosystem/): only its tasks are known"
    except ToolshiftError as exc:
        item.error = str(exc)
    except OSError as exc:
        item.error = f"{path}: cannot read: {exc.strerror or exc}"
    return item


def discover(paths: Sequence[Path | str], *, cache: Path | None = None, progress: Any = None) -> Inputs:
    """Find and open every result under `paths`. A path that does not exist is bad input (exit 2)."""
    cache = Path(cache) if cache is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    found: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise BadInputError("no such file or folder", source=str(p))
        found += [f for f in _walk(p) if f not in found]
    files = []
    for path in found:
        files.append(_open(path, cache))
        if progress is not None:
            progress(path)
    return Inputs(files, cache)


KIND_NAMES: dict[str, tuple[str, str]] = {
    "episodes": ("episode store", "episode stores"),
    "tau2-results": ("τ²-bench result", "τ²-bench results"),
    "catalog": ("catalog", "catalogs"),
    "flow": ("flow", "flows"),
    "decision-log": ("decision log", "decision logs"),
    "bench-build": ("benchmark build", "benchmark builds"),
    "run-config": ("run configuration", "run configurations"),
    "run-results": ("run summary", "run summaries"),
    "steward-results": ("steward result", "steward results"),
    "evolve-run": ("evolve run", "evolve runs"),
    "loop-results": ("loop result", "loop results"),
    "notes": ("notes file", "notes files"),
}
"""How the report's subtitle names one and several files of each kind."""


def describe_kinds(files: Iterable[ResultFile]) -> str:
    """`3 episode stores, 1 catalog, 2 not read`: a one-line count of what was found, each noun in its number."""
    counts: dict[str, int] = {}
    for f in files:
        key = "not read" if f.kind in (None, "unreadable") else str(f.kind)
        counts[key] = counts.get(key, 0) + 1
    parts = []
    for kind, n in counts.items():
        one, many = KIND_NAMES.get(kind, (kind, kind))
        parts.append(f"{n} {one if n == 1 else many}")
    return ", ".join(parts) or "nothing"
