"""The episode store: JSONL files, a header line then one Episode a line, read as a stream.

File layout (`toolshift.episodes/1`, optionally gzip-compressed when the name ends in `.gz`):

    {"format": "toolshift.episodes/1", "created": "2026-11-30T05:00:00+00:00", "meta": {...}}
    {"format": "toolshift.episode/1", "id": "...", "task_id": "...", ...}
    ...

Readers refuse a file whose header names another format, and an episode line whose own `format` is
unknown. Reading iterates lines, so memory does not grow with the file's size.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.errors import BadInputError
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

    def skip(self, error: BadInputError) -> None:
        self.skipped[error.detail.split(":", 1)[0]] += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(str(error))


def _open_text(path: Path, mode: str, *, gz: bool | None = None) -> IO[str]:
    if path.name.endswith(".gz") if gz is None else gz:
        return cast(IO[str], gzip.open(path, mode, encoding="utf-8", newline="\n"))
    return path.open(mode, encoding="utf-8", newline="\n")


def _validation_error(exc: ValidationError, path: Path, index: int) -> BadInputError:
    bad = BadInputError.from_validation(exc, source=str(path), record=index)
    return BadInputError(f"invalid episode: {bad.detail}", source=str(path), record=index, field=bad.field)


def read_header(path: Path) -> StoreHeader:
    """The file's header; a missing or foreign header is a BadInputError naming the file."""
    path = Path(path)
    try:
        with _open_binary(path) as fh:
            first = next(_lines(fh, path), b"")
    except OSError as exc:
        raise BadInputError(f"cannot read episode file: {exc}", source=str(path)) from exc
    return _parse_header(first, path)


def _parse_header(line: bytes | str, path: Path) -> StoreHeader:
    try:
        raw = json.loads(line) if line.strip() else None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInputError(f"header line is not JSON: {exc}", source=str(path), record="header") from exc
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
    path: Path, *, skip_bad: bool = False, report: ReadReport | None = None
) -> Iterator[Episode]:
    """Yield the file's episodes one at a time (constant memory).

    A malformed line raises BadInputError naming the file, the line's 0-based index after the header
    and the field;
    with `skip_bad` it is counted in `report` and skipped. An unknown format is never skipped.
    """
    path = Path(path)
    report = report if report is not None else ReadReport()
    try:
        fh = _open_binary(path)
    except OSError as exc:
        raise BadInputError(f"cannot read episode file: {exc}", source=str(path)) from exc
    with fh:
        lines = _lines(fh, path)
        _parse_header(next(lines, b""), path)
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                episode = _parse_line(line, path, index)
            except BadInputError as exc:
                if not skip_bad or exc.field == "format":
                    raise
                report.skip(exc)
                continue
            report.read += 1
            yield episode


def _open_binary(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb")  # type: ignore[return-value]


def _lines(fh: IO[bytes], path: Path) -> Iterator[bytes]:
    """The file's raw lines; a read error (a truncated gzip) names the line (0-based after the header)."""
    number = 0
    try:
        for number, raw in enumerate(fh):  # noqa: B007 - used in the except clause
            yield raw
    except (OSError, EOFError) as exc:
        raise BadInputError(
            f"cannot read episode file: {exc}",
            source=str(path),
            record="header" if number == 0 else number - 1,
        ) from exc


def _parse_line(line: bytes, path: Path, index: int) -> Episode:
    # json.loads + model_validate, not model_validate_json: pydantic-core's JSON string cache grows with
    # the number of distinct strings read, which the constant-memory benchmark shows.
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"not UTF-8: {exc.reason}", source=str(path), record=index) from exc
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"not JSON: {exc.msg}", source=str(path), record=index) from exc
    if not isinstance(raw, dict):
        raise BadInputError("not JSON: an episode line is an object", source=str(path), record=index)
    if raw.get("format", EPISODE_FORMAT) != EPISODE_FORMAT:
        raise BadInputError(
            f"unknown episode format {raw.get('format')!r} (this reader knows {EPISODE_FORMAT})",
            source=str(path),
            record=index,
            field="format",
        )
    try:
        return Episode.model_validate(raw)
    except ValidationError as exc:
        raise _validation_error(exc, path, index) from exc


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
    extended in place instead (for resumable runs): its header is checked and a torn last line from
    a crash is cut off first.
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
            read_header(self.path)
            _cut_torn_tail(self.path)
            self._fh = _open_text(self.path, "at")
        else:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
            os.close(fd)
            chmod_default(tmp)
            self._tmp = Path(tmp)
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
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)


def chmod_default(path: str) -> None:
    """Give a temp file the mode a plain `open` would have (mkstemp makes it owner-only)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def write_text_atomic(path: Path, text: str) -> Path:
    """Write a whole text file via a temp sibling and a rename: a failed write leaves the old file intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        chmod_default(tmp)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _cut_torn_tail(path: Path) -> None:
    with path.open("rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        pos = size
        while pos > 0:
            step = min(65536, pos)
            fh.seek(pos - step)
            chunk = fh.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                fh.truncate(pos - step + nl + 1)
                return
            pos -= step


def write_episodes(path: Path, episodes: Iterable[Episode], *, meta: dict[str, Any] | None = None) -> int:
    """Write a whole store file atomically; returns the number of episodes written."""
    with EpisodeWriter(path, meta=meta) as writer:
        return writer.write_all(episodes)
