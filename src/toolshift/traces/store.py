"""The episode store: JSONL files, a header line then one Episode a line, read as a stream.

File layout (`toolshift.episodes/1`, optionally gzip-compressed when the name ends in `.gz`):

    {"format": "toolshift.episodes/1", "created": "2026-11-30T05:00:00+00:00", "meta": {...}}
    {"format": "toolshift.episode/1", "id": "...", "task_id": "...", ...}
    ...

Readers refuse a file whose header names another format, and an episode line whose own `format` is
unknown. Reading iterates lines, so memory does not grow with the file's size. Lines follow the one JSONL
rule of `toolshift.fileio`: a last line without a newline is an episode when it parses and a torn write
(not done: left out, counted in `ReadReport.torn`, cut on the next append) when it does not; any other
bad line is refused naming the file, record and line (or counted and skipped with `skip_bad`).
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import (
    JsonlLine,
    NotJsonError,
    fsync_path,
    jsonl_lines,
    loads_json,
    open_input,
    repair_jsonl_tail,
    temp_sibling,
)
from toolshift.fileio import chmod_default as chmod_default  # re-exported; its home is fileio
from toolshift.fileio import write_text_atomic as write_text_atomic  # re-exported; its home is fileio
from toolshift.traces.episode import EPISODE_FORMAT, Episode

STORE_FORMAT: Final = "toolshift.episodes/1"
EPISODES_SUFFIX = ".episodes.jsonl"


class StoreHeader(BaseModel):
    """The first line of an episode file."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["toolshift.episodes/1"] = STORE_FORMAT
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    meta: dict[str, Any] = Field(default_factory=dict)
    """Free-form provenance: converter, inputs, domain."""


@dataclass
class ReadReport:
    """What a read kept and skipped (with `skip_bad`), by reason."""

    read: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    first_errors: list[str] = field(default_factory=list)
    torn: int = 0
    """Torn last lines left out (an append that a kill interrupted: that episode is not done)."""

    def skip(self, error: BadInputError) -> None:
        self.skipped[error.detail.split(":", 1)[0]] += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(str(error))


def _open_text(path: Path, mode: str, *, gz: bool | None = None) -> IO[str]:
    if path.name.endswith(".gz") if gz is None else gz:
        return cast(IO[str], gzip.open(path, mode, encoding="utf-8", newline="\n"))
    return path.open(mode, encoding="utf-8", newline="\n")


def read_header(path: Path) -> StoreHeader:
    """The file's header; a missing or foreign header is a BadInputError naming the file."""
    path = Path(path)
    try:
        fh = _open_binary(path)
    except OSError as exc:
        raise BadInputError(f"cannot read episode file: {exc}", source=str(path)) from exc
    with fh:
        return _parse_header(next(_lines(fh, path), None), path)


def _parse_header(line: JsonlLine | None, path: Path) -> StoreHeader:
    raw = None
    if line is not None and not line.is_blank():
        try:
            raw = loads_json(line.data, source=str(path), record="header")
        except BadInputError as exc:
            raise BadInputError(
                f"header line is not JSON: {exc.detail}", source=str(path), record="header"
            ) from None
    if not isinstance(raw, dict) or raw.get("format") in (None, EPISODE_FORMAT):
        raise BadInputError(
            f"no header line: an episode file starts with {{'format': {STORE_FORMAT!r}}}",
            source=str(path),
            record="header",
            field="format",
        )
    if raw["format"] != STORE_FORMAT:
        raise BadInputError(
            f"unknown episode file format {raw['format']!r} (this reader knows {STORE_FORMAT})",
            source=str(path),
            record="header",
            field="format",
        )
    try:
        return StoreHeader.model_validate(raw)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path), record="header") from exc


def iter_episodes(
    path: Path, *, skip_bad: bool = False, report: ReadReport | None = None, unique: bool = False
) -> Iterator[Episode]:
    """Yield the file's episodes one at a time (constant memory).

    A malformed line raises BadInputError naming the file, the line's 0-based index after the header
    (and its line number) and the field; with `skip_bad` it is counted in `report` and skipped. An
    unknown format is never skipped. A torn last line is left out and counted in `report.torn`.

    With `unique`, an episode whose id an earlier line has is malformed too (field `id`): what a command
    keys by id (turn anatomy, a split, flows) would count one episode twice (D307). It keeps one hash per
    episode, so it is for the commands that read a user's file, not the constant-memory stream itself.
    """
    path = Path(path)
    report = report if report is not None else ReadReport()
    try:
        fh = _open_binary(path)
    except OSError as exc:
        raise BadInputError(f"cannot read episode file: {exc}", source=str(path)) from exc
    seen: dict[int, int] = {}
    with fh:
        lines = _lines(fh, path)
        _parse_header(next(lines, None), path)
        for line in lines:
            if line.is_blank():
                continue
            try:
                episode = _parse_line(line, path)
                if unique:
                    first = seen.setdefault(hash(episode.id), line.number)
                    if first != line.number:
                        raise BadInputError(
                            f"episode id {episode.id[:80]!r} repeats (line {first} has it; line {line.number})",
                            source=str(path),
                            record=line.number - 2,
                            field="id",
                        )
            except NotJsonError as exc:
                if not line.terminated:  # a torn last line: an append a kill interrupted
                    report.torn += 1
                    return
                if not skip_bad:
                    raise
                report.skip(exc)
                continue
            except BadInputError as exc:
                if not skip_bad or exc.field == "format":
                    raise
                report.skip(exc)
                continue
            report.read += 1
            yield episode


def _open_binary(path: Path) -> IO[bytes]:
    return open_input(path, what="episode file")


def _lines(fh: IO[bytes], path: Path) -> Iterator[JsonlLine]:
    """The file's lines; a read error (a truncated gzip) is reported as an unreadable episode file."""
    try:
        yield from jsonl_lines(fh, source=str(path))
    except BadInputError as exc:
        raise BadInputError(f"cannot read episode file: {exc.detail}", source=str(path)) from None


def _parse_line(line: JsonlLine, path: Path) -> Episode:
    # loads_json (pydantic-core's parser without its string cache) + model_validate, not model_validate_json:
    # that cache grows with the number of distinct strings read, which the constant-memory benchmark shows.
    index = line.number - 2  # 0-based after the header
    where = f"line {line.number}"
    try:
        raw = loads_json(line.data, source=str(path), record=index)
    except BadInputError as exc:
        raise type(exc)(f"{exc.detail} ({where})", source=str(path), record=index, field=exc.field) from None
    if not isinstance(raw, dict):
        raise BadInputError(
            f"not JSON: an episode line is an object ({where})", source=str(path), record=index
        )
    if raw.get("format", EPISODE_FORMAT) != EPISODE_FORMAT:
        raise BadInputError(
            f"unknown episode format {raw.get('format')!r} (this reader knows {EPISODE_FORMAT}; {where})",
            source=str(path),
            record=index,
            field="format",
        )
    try:
        return Episode.model_validate(raw)
    except ValidationError as exc:
        bad = BadInputError.from_validation(exc, source=str(path), record=index)
        raise BadInputError(
            f"invalid episode ({where}): {bad.detail}", source=str(path), record=index, field=bad.field
        ) from None


def read_episodes(
    paths: Iterable[Path], *, skip_bad: bool = False, report: ReadReport | None = None
) -> Iterator[Episode]:
    """Stream the episodes of several files in order."""
    for path in paths:
        yield from iter_episodes(Path(path), skip_bad=skip_bad, report=report)


class EpisodeWriter:
    """Write episodes to a store file, one line each.

    A new file is written to a temporary name and renamed on a clean close, so a failed write leaves
    no half file (and the previous file, if any, intact). With `append=True` an existing file is
    extended in place instead (for resumable runs): it is read through first by the same rule as every
    reader (its header checked, a bad line refused), and a torn last line from a crash is cut off, or a
    complete last line without its newline given one (`toolshift.fileio.repair_jsonl_tail`).
    """

    def __init__(self, path: Path, *, meta: dict[str, Any] | None = None, append: bool = False) -> None:
        self.path = Path(path)
        self.meta = meta or {}
        self.append = append and self.path.exists()
        self.count = 0
        self._fh: IO[str] | None = None
        self._tmp: Path | None = None

    def __enter__(self) -> EpisodeWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.append:
            if self.path.name.endswith(".gz"):
                raise BadInputError("cannot append to a compressed episode file", source=str(self.path))
            for _ in iter_episodes(self.path):
                pass
            repair_jsonl_tail(self.path)
            self._fh = _open_text(self.path, "at")
        else:
            self._tmp = temp_sibling(self.path)
            self._fh = _open_text(self._tmp, "wt", gz=self.path.name.endswith(".gz"))
            self._fh.write(StoreHeader(meta=self.meta).model_dump_json() + "\n")
        return self

    def write(self, episode: Episode) -> None:
        assert self._fh is not None, "use EpisodeWriter as a context manager"
        self._fh.write(episode.model_dump_json(exclude_none=True) + "\n")
        self.count += 1

    def sync(self) -> None:
        """Flush and fsync what was written: a crash after this loses none of it (resumable runs)."""
        assert self._fh is not None, "use EpisodeWriter as a context manager"
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def write_all(self, episodes: Iterable[Episode]) -> int:
        for episode in episodes:
            self.write(episode)
        return self.count

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self._fh is not None
        self._fh.close()
        if self._tmp is None:
            return
        if exc_type is None:
            fsync_path(self._tmp)
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)


def write_episodes(path: Path, episodes: Iterable[Episode], *, meta: dict[str, Any] | None = None) -> int:
    """Write a whole store file atomically; returns the number of episodes written."""
    with EpisodeWriter(path, meta=meta) as writer:
        return writer.write_all(episodes)
