"""An index of episode files: byte offsets of lines with the fields people filter by, built once and cached.

The viewer and the report open run sets of any size through it: one pass over each file records, per
episode line, its byte offset and length and a few fields (id, task, trial, domain, agent, model,
harness, ecosystem version, outcome, strict verdict, collateral changes, turns, calls, termination);
afterwards a page of episodes is read by seeking to its lines, never by reading the file again. The index
of a file is cached (`toolshift.episode-index/2`, docs/formats.md) under a key made of the file's real
path, size and modification time, so an edited or appended file is indexed afresh and an unchanged one
never is.

Lines follow the episode store's rules (`toolshift.traces.store`) and the one JSONL rule with bounded
JSON (`toolshift.fileio`): a header line first; a last line without its newline that does not parse is a
torn write, left out and counted; any other line that is not an episode object (not UTF-8, not JSON,
nested beyond the limit) is counted as bad with its line number and reason, and the rest of the file is
still indexed, so one bad line never hides a file. Only the indexed fields are checked here; a line is
validated in full as an `Episode` when it is shown.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import NotJsonError, atomic_path, jsonl_lines, loads_json, open_input
from toolshift.traces.episode import EPISODE_FORMAT, Episode
from toolshift.traces.store import read_header

INDEX_FORMAT: Final = "toolshift.episode-index/4"
MAX_ERRORS = 20
"""Bad lines whose reason an index keeps (all are counted)."""
CATEGORIES = ("domain", "agent", "model", "harness", "version", "outcome", "strict", "termination", "kind",
              "condition", "shared")  # fmt: skip
"""Columns stored as codes into a list of values: few distinct values, filtered by equality."""
RECORDING_HARNESS = "toolshift-gateway"
"""The harness of a gateway's recording (`toolshift.gateway.record`): the calls an agent made through the
gateway, not an agent's episode; shown as a recording, never counted as an episode (D320)."""
KINDS = ("episode", "recording")
TRIAL_KEY = ("run", "condition", "kind", "harness", "agent", "model", "domain", "task_id", "version")
"""What identifies a task's trials (D320): the run that made them (`run_of`), the condition and harness they
ran under, the agent and model, the task and the ecosystem version. Rows that share all of these are trials
of one task in one run; pass^k is computed over them and nothing wider."""
NUMBERS = ("offset", "length", "line", "trial", "turns", "calls", "collateral", "missing", "failed", "tokens")
OUTCOMES = ("success", "failure", "unjudged")
STRICT = ("strict", "collateral", "failure", "unknown", "unjudged")
"""The strict verdict: a success with no collateral write, a success with one, a failure (never strict) whose
judge recorded the strict verdict, a judged episode recorded without it (τ²-bench's and converted runs':
its judge never looked at collateral writes, so it is unknown, never 0; D321), an unjudged episode.
`collateral` is -1 when unknown."""


class _Outcome(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reward: float | None = None
    success: bool | None = None
    info: dict[str, Any] = {}


class _IndexedFields(BaseModel):
    """The fields the index keeps, checked as the Episode model types them; everything else is ignored."""

    model_config = ConfigDict(extra="ignore")
    id: str
    task_id: str
    trial: int = 0
    domain: str
    agent: str | None = None
    model: str | None = None
    harness: str | None = None
    ecosystem_version: str | None = None
    termination_reason: str | None = None
    outcome: _Outcome | None = None
    messages: list[Any] = []
    source: dict[str, Any] = {}


def default_cache_dir() -> Path:
    """`$TOOLSHIFT_VIEW_CACHE`, else a per-user folder under the system's temporary directory."""
    env = os.environ.get("TOOLSHIFT_VIEW_CACHE")
    if env:
        return Path(env)
    return Path(tempfile.gettempdir()) / f"toolshift-view-cache-{os.getuid()}"


def cache_key(path: Path, *parts: str) -> str:
    """A key naming this exact version of a file: its real path, size and modification time (and `parts`)."""
    st = path.stat()
    body = "\0".join([str(path.resolve()), str(st.st_size), str(st.st_mtime_ns), INDEX_FORMAT, *parts])
    return hashlib.sha256(body.encode()).hexdigest()[:24]


def outcome_of(outcome: Any) -> str:
    """`success`, `failure` or `unjudged`: the episode's own verdict, else its reward (1 is a success)."""
    if outcome is None:
        return "unjudged"
    if outcome.success is not None:
        return "success" if outcome.success else "failure"
    if outcome.reward is not None:
        return "success" if outcome.reward >= 1.0 else "failure"
    return "unjudged"


def strict_of(outcome: Any) -> tuple[str, int]:
    """The strict verdict (one of STRICT) and the collateral change count (-1: unknown) of an outcome."""
    verdict = outcome_of(outcome)
    if verdict == "unjudged":
        return "unjudged", -1
    info = outcome.info if isinstance(getattr(outcome, "info", None), dict) else {}
    strict, changes = info.get("strict_success"), info.get("collateral_changes")
    count = changes if isinstance(changes, int) and not isinstance(changes, bool) and changes >= 0 else -1
    if not isinstance(strict, bool):
        return "unknown", count  # a judge that never looked at collateral writes: not a failure of strictness
    if verdict == "failure":
        return "failure", count
    return ("strict" if strict else "collateral"), count


def missing_of(outcome: Any) -> int:
    """The gold changes the judge found missing (`outcome.info.missing_changes`), -1 when not recorded."""
    info = outcome.info if outcome is not None and isinstance(getattr(outcome, "info", None), dict) else {}
    value = info.get("missing_changes")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else -1


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _counts(messages: list[Any]) -> tuple[int, int, int, int]:
    """(turns, calls, failed calls, tokens) of an episode's messages: assistant messages, their tool calls, tool
    results marked as errors, and the prompt and completion tokens the assistant messages record."""
    turns = calls = failed = tokens = 0
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant":
            turns += 1
            calls += len(m.get("tool_calls") or ())
            usage = m.get("usage")
            if isinstance(usage, dict):
                tokens += _number(usage.get("prompt_tokens")) + _number(usage.get("completion_tokens"))
        elif m.get("role") == "tool" and m.get("error") is True:
            failed += 1
    return turns, calls, failed, tokens


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def condition_of(source: dict[str, Any], meta: dict[str, Any]) -> str:
    """The condition an episode ran under, from its own `source` (`condition`, the loop's `loop.condition`,
    a baseline's `setting`), else its file's header (`condition`, the loop's `loop`, `setting`); "" if none.
    An oracle episode that followed only the step- or only the cost-optimal reference path (`source.criterion`,
    where the two differ) adds `step path` / `cost path`: the two are two episodes of one trial, not two trials."""
    loop = source.get("loop") if isinstance(source.get("loop"), dict) else {}
    found = ""
    for value in (source.get("condition"), loop.get("condition"), source.get("setting"), meta.get("condition"),
                  meta.get("loop"), meta.get("setting")):  # fmt: skip
        if _text(value):
            found = str(value)
            break
    criterion = _text(source.get("criterion"))
    if criterion in ("step", "cost"):
        return f"{found} · {criterion} path" if found else f"{criterion} path"
    return found


def shared_of(source: dict[str, Any]) -> str:
    """The condition an episode was copied from ("" for none): the loop serves its first version once and
    each other condition keeps a copy (`source.loop.shared_from`), counted once when conditions are pooled."""
    loop = source.get("loop") if isinstance(source.get("loop"), dict) else {}
    return _text(loop.get("shared_from"))


def kind_of(harness: str | None) -> str:
    """`recording` for a gateway's recording of a session, else `episode`."""
    return "recording" if harness == RECORDING_HARNESS else "episode"


RUN_ROOT_FILES = ("loop.json",)
"""A folder holding one of these is a run whose episode files sit in folders below it (`toolshift loop`)."""
STORE_SUFFIXES = (".episodes.jsonl.gz", ".episodes.jsonl", ".jsonl.gz", ".jsonl", ".json")


def run_of(source: Path, meta: dict[str, Any]) -> str:
    """The run an episode file belongs to (D320): its header's `run`, else the command that wrote it (its
    header's `command`, as `bench baseline` and `steward eval` record), else the run folder above it (one
    holding `loop.json`, within three levels), else the file itself without its suffix."""
    if _text(meta.get("run")):
        return str(meta["run"])
    if _text(meta.get("command")):
        return str(meta["command"]).removeprefix("toolshift ")
    for folder in list(source.parents)[:3]:
        if any((folder / name).is_file() for name in RUN_ROOT_FILES):
            return str(folder)
    name = str(source)
    for suffix in STORE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@dataclass
class FileIndex:
    """One episode file's index: where each episode line is, its filter fields, and what was left out."""

    source: Path
    """The file as given (an episode store, or a τ²-bench results file converted for reading)."""
    read_from: Path
    """The plain JSONL whose byte offsets these are (the source itself, or a cached plain copy)."""
    columns: dict[str, np.ndarray]
    """Per episode: NUMBERS, and a code into `values` for each of CATEGORIES and `task_id`."""
    values: dict[str, list[str]]
    id_blob: bytes = b""
    """Every episode id, UTF-8, end to end; `id_ends[i]` is where the i-th ends (decoded only when shown)."""
    id_ends: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    torn: int = 0
    bad_lines: int = 0
    errors: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    _ids: list[str] | None = None

    @property
    def episodes(self) -> int:
        return int(self.columns["offset"].size)

    def value(self, column: str, row: int) -> Any:
        v = int(self.columns[column][row])
        return self.values[column][v] if column in self.values else v

    def id(self, row: int) -> str:
        start = int(self.id_ends[row - 1]) if row else 0
        return self.id_blob[start : int(self.id_ends[row])].decode("utf-8")

    def ids(self) -> list[str]:
        """All ids, decoded once (a text search needs them)."""
        if self._ids is None:
            bounds = [0, *self.id_ends.tolist()]
            self._ids = [self.id_blob[a:b].decode("utf-8") for a, b in itertools.pairwise(bounds)]
        return self._ids

    def read_line(self, row: int) -> bytes:
        """The raw JSON line of one indexed episode (one seek, one read)."""
        with self.read_from.open("rb") as fh:
            fh.seek(int(self.columns["offset"][row]))
            return fh.read(int(self.columns["length"][row]))

    def episode(self, row: int) -> Episode:
        """One indexed episode, validated in full; a line that is not a valid episode names file, line and field."""
        line_no = int(self.columns["line"][row])
        where = str(self.source)
        try:
            raw = loads_json(self.read_line(row))
        except BadInputError as exc:
            raise BadInputError(
                f"not an episode (line {line_no}): {exc.detail}", source=where, record=row
            ) from None
        try:
            return Episode.model_validate(raw)
        except ValidationError as exc:
            bad = BadInputError.from_validation(exc, source=where)
            raise BadInputError(
                f"invalid episode (line {line_no}): {bad.detail}", source=where, record=row, field=bad.field
            ) from None

    def save(self, path: Path) -> None:
        """Write the index as one uncompressed `.npz` (arrays, plus a JSON header as bytes), atomically."""
        head = {"format": INDEX_FORMAT, "source": str(self.source), "read_from": str(self.read_from),
                "torn": self.torn, "bad_lines": self.bad_lines, "errors": self.errors, "meta": self.meta,
                "values": self.values}  # fmt: skip
        arrays = {f"col_{k}": v for k, v in self.columns.items()}
        arrays["id_blob"] = np.frombuffer(self.id_blob, dtype=np.uint8)
        arrays["id_ends"] = self.id_ends
        arrays["head"] = np.frombuffer(json.dumps(head, ensure_ascii=False).encode(), dtype=np.uint8)
        with atomic_path(path) as tmp, tmp.open("wb") as fh:
            np.savez(fh, **arrays)

    @classmethod
    def load(cls, path: Path, source: Path) -> FileIndex:
        with np.load(path, allow_pickle=False) as z:
            head = loads_json(z["head"].tobytes(), source=str(path))
            if head.get("format") != INDEX_FORMAT:
                raise ValueError(f"unknown index format {head.get('format')!r}")
            columns = {k[4:]: z[k] for k in z.files if k.startswith("col_")}
            id_blob, id_ends = z["id_blob"].tobytes(), z["id_ends"]
        return cls(source=source, read_from=Path(head["read_from"]), columns=columns, values=head["values"],
                   id_blob=id_blob, id_ends=id_ends, torn=int(head["torn"]), bad_lines=int(head["bad_lines"]),
                   errors=list(head["errors"]), meta=dict(head.get("meta") or {}))  # fmt: skip


def _lines_with_offsets(fh: Any, source: str) -> Any:
    """(offset, line) for every line of a binary file, by the one JSONL rule (`toolshift.fileio`)."""
    offset = 0
    for line in jsonl_lines(fh, source=source):
        yield offset, line
        offset += len(line.data) + line.terminated


def scan(source: Path, read_from: Path) -> FileIndex:
    """Index a plain episode store in one pass (the header is checked as the store's readers check it)."""
    header = read_header(read_from)
    numbers: dict[str, list[int]] = {name: [] for name in NUMBERS}
    coded = (*CATEGORIES, "task_id")
    codes: dict[str, list[int]] = {name: [] for name in coded}
    tables: dict[str, dict[str, int]] = {name: {} for name in coded}
    ids = bytearray()
    ends: list[int] = []
    index = FileIndex(source, read_from, {}, {})
    index.meta = dict(header.meta)
    number_cols = [numbers[n] for n in NUMBERS]
    code_cols = [(codes[n], tables[n]) for n in coded]

    def bad(line_no: int, reason: str) -> None:
        index.bad_lines += 1
        if len(index.errors) < MAX_ERRORS:
            index.errors.append(f"{source}: line {line_no}: {reason}")

    with open_input(read_from, what="episode file", gz=False) as fh:
        lines = _lines_with_offsets(fh, str(source))
        next(lines, None)  # the header, checked above
        for offset, line in lines:
            number, raw = line.number, line.data
            if line.is_blank():
                continue
            try:
                doc = loads_json(raw)
            except NotJsonError as exc:
                if not line.terminated:
                    index.torn += 1  # a torn last line: the append a kill interrupted
                    break
                bad(number, exc.detail)
                continue
            except BadInputError as exc:  # JSON beyond the limits (nested too deep, too long)
                bad(number, exc.detail)
                continue
            if not isinstance(doc, dict):
                bad(number, "not JSON: an episode line is an object")
                continue
            if doc.get("format", EPISODE_FORMAT) != EPISODE_FORMAT:
                bad(
                    number,
                    f"unknown episode format {doc.get('format')!r} (this reader knows {EPISODE_FORMAT})",
                )
                continue
            try:
                f = _IndexedFields.model_validate(doc)
            except ValidationError as exc:
                err = BadInputError.from_validation(exc)
                bad(number, f"invalid episode: field {err.field!r}: {err.detail}")
                continue
            turns, calls, failed, tokens = _counts(f.messages)
            strict, collateral = strict_of(f.outcome)
            nums = (
                offset,
                len(raw),
                number,
                f.trial,
                turns,
                calls,
                collateral,
                missing_of(f.outcome),
                failed,
                tokens,
            )
            for col, v in zip(number_cols, nums, strict=True):
                col.append(v)
            ids += f.id.encode("utf-8")
            ends.append(len(ids))
            cats = (f.domain, f.agent or "", f.model or "", f.harness or "", f.ecosystem_version or "",
                    outcome_of(f.outcome), strict, f.termination_reason or "", kind_of(f.harness),
                    condition_of(f.source, index.meta), shared_of(f.source), f.task_id)  # fmt: skip
            for (col, table), v in zip(code_cols, cats, strict=True):
                code = table.get(v)
                if code is None:
                    code = table[v] = len(table)
                col.append(code)
    index.columns = {n: np.asarray(numbers[n], dtype=np.int64) for n in NUMBERS}
    index.columns |= {n: np.asarray(codes[n], dtype=np.int32) for n in coded}
    index.values = {n: list(tables[n]) for n in coded}
    index.id_blob, index.id_ends = bytes(ids), np.asarray(ends, dtype=np.int64)
    return index


def _plain_copy(source: Path, cache: Path, key: str) -> Path:
    """A compressed store decompressed once into the cache (pages seek in it)."""
    target = cache / f"{key}.episodes.jsonl"
    if not target.exists():
        try:
            with (
                atomic_path(target) as tmp,
                tmp.open("wb") as out,
                open_input(source, what="episode file", gz=True) as src,
            ):
                shutil.copyfileobj(src, out, 1 << 20)
        except (OSError, EOFError) as exc:
            raise BadInputError(f"cannot read episode file: {exc}", source=str(source)) from exc
    return target


def index_file(source: Path, *, read_from: Path | None = None, cache: Path | None = None) -> FileIndex:
    """The index of one episode store, from the cache when this version of the file was indexed before.

    `read_from` is the plain JSONL to index when it is not `source` itself (a converted τ²-bench file).
    """
    source = Path(source)
    cache = Path(cache) if cache is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    plain = Path(read_from) if read_from is not None else source
    if plain.name.endswith(".gz"):
        plain = _plain_copy(plain, cache, cache_key(plain, "plain"))
    key = cache_key(plain)
    cached = cache / f"{key}.index.npz"
    if cached.exists():
        try:
            found = FileIndex.load(cached, source)
            if found.read_from == plain:
                return found
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile):
            pass  # an unreadable cache entry is rebuilt
    index = scan(source, plain)
    index.save(cached)
    return index


FACETS = ("run", "condition", "harness", "kind", "domain", "agent", "model", "version", "outcome", "strict",
          "file", "task_id")  # fmt: skip
"""The columns a list of episodes is faceted by: values with counts under the other filters."""


@dataclass
class RunSet:
    """Several indexed files seen as one table: a global row number for every episode, and filters over them."""

    files: list[FileIndex]
    file_of: np.ndarray = field(init=False)
    row_of: np.ndarray = field(init=False)
    codes: dict[str, np.ndarray] = field(init=False)
    values: dict[str, list[str]] = field(init=False)
    lookup: dict[str, dict[str, int]] = field(init=False)

    def __post_init__(self) -> None:
        sizes = [f.episodes for f in self.files]
        self.file_of = np.repeat(np.arange(len(self.files), dtype=np.int32), sizes)
        self.row_of = np.concatenate([np.arange(n, dtype=np.int64) for n in sizes] or [np.zeros(0, np.int64)])
        self.values, self.codes = {}, {}
        for name in (*CATEGORIES, "task_id", "file", "run"):
            table: dict[str, int] = {}
            parts = []
            for f in self.files:
                if name in ("file", "run"):
                    label = str(f.source) if name == "file" else run_of(f.source, f.meta)
                    local_values, local_codes = [label], np.zeros(f.episodes, dtype=np.int32)
                else:
                    local_values, local_codes = f.values[name], f.columns[name]
                remap = np.array(
                    [table.setdefault(v, len(table)) for v in local_values] or [0], dtype=np.int32
                )
                parts.append(remap[local_codes])
            self.values[name] = list(table)
            self.codes[name] = np.concatenate(parts) if parts else np.zeros(0, np.int32)
        self.lookup = {name: {v: i for i, v in enumerate(vals)} for name, vals in self.values.items()}

    def numeric(self, name: str) -> np.ndarray:
        """A number column (`trial`, `turns`, `calls`, `collateral`) over every row."""
        parts = [np.asarray(f.columns[name], dtype=np.int64) for f in self.files]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    @property
    def size(self) -> int:
        return int(self.file_of.size)

    def mask(self, filters: dict[str, str], *, without: str | None = None, text: str = "") -> np.ndarray:
        """Rows matching every `column = value` filter (but `without`'s) and, when given, an id or task substring."""
        keep = np.ones(self.size, dtype=bool)
        for name, value in filters.items():
            if name == without or name not in self.codes:
                continue
            code = self.lookup[name].get(value)
            if code is None:
                return np.zeros(self.size, dtype=bool)
            keep &= self.codes[name] == code
        if text:
            needle = text.lower()
            task_hit = np.array([needle in v.lower() for v in self.values["task_id"]], dtype=bool)
            hit = task_hit[self.codes["task_id"]] if task_hit.size else np.zeros(self.size, dtype=bool)
            rest = np.nonzero(keep & ~hit)[0]
            if rest.size:
                hit[rest] = [needle in self._id(int(i)).lower() for i in rest]
            keep &= hit
        return keep

    def facets(self, filters: dict[str, str], text: str = "", limit: int = 200) -> dict[str, list[list[Any]]]:
        """For each filterable column, its values and how many rows each would keep under the other filters."""
        out: dict[str, list[list[Any]]] = {}
        for name in FACETS:
            keep = self.mask(filters, without=name, text=text)
            counts = np.bincount(self.codes[name][keep], minlength=len(self.values[name]))
            order = np.argsort(-counts, kind="stable")[:limit] if name == "task_id" else range(len(counts))
            out[name] = [[self.values[name][i], int(counts[i])] for i in order if counts[i] > 0]
        return out

    def _id(self, row: int) -> str:
        f = self.files[int(self.file_of[row])]
        return f.ids()[int(self.row_of[row])]

    def locate(self, row: int) -> tuple[FileIndex, int]:
        if not 0 <= row < self.size:
            raise IndexError(row)
        return self.files[int(self.file_of[row])], int(self.row_of[row])

    def summary(self, row: int) -> dict[str, Any]:
        """What a list of episodes shows of one row, from the index alone."""
        f, r = self.locate(row)
        out: dict[str, Any] = {
            "row": row,
            "file": str(f.source),
            "line": int(f.columns["line"][r]),
            "id": f.id(r),
        }
        for name in ("trial", "turns", "calls", "collateral", "missing", "failed", "tokens"):
            out[name] = int(f.columns[name][r])
        for name in (*CATEGORIES, "task_id"):
            out[name] = f.value(name, r)
        out["run"] = self.values["run"][int(self.codes["run"][row])]
        return out
