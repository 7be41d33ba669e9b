"""Notes on an episode or a task, kept beside the run they were written on (as `tau2 view` keeps its notes).

The notes of an episode file `X.episodes.jsonl` (or `.jsonl.gz`, or a τ²-bench results file `X.json`) live in
`X.notes.json` beside it (`toolshift.notes/1`, docs/formats.md): a note is on one episode (by id) or on a task
(domain and task id), with its text and when it was written. The file is read bounded and written atomically
under a lock (the viewer's server is threaded); a note's text is at most `MAX_TEXT` characters and a file holds
at most `MAX_NOTES`. Text is data: the page puts it on screen as text, never as HTML.
"""

from __future__ import annotations

import json
import secrets
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import read_json, write_text_atomic
from toolshift.report.episode_index import STORE_SUFFIXES

NOTES_FORMAT: Final = "toolshift.notes/1"
MAX_TEXT = 16_000
MAX_NOTES = 10_000
MAX_FILE_BYTES = 64 << 20
_LOCK = threading.Lock()


class Note(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(max_length=64)
    on: Literal["episode", "task"]
    episode: str | None = Field(default=None, max_length=4096)
    """The episode's id (a note on an episode)."""
    task: str = Field(max_length=4096)
    domain: str = Field(max_length=512)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    written: str


class NotesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["toolshift.notes/1"] = NOTES_FORMAT
    notes: list[Note] = Field(default_factory=list, max_length=MAX_NOTES)


def notes_path(source: Path) -> Path:
    """Where the notes of an episode file are kept: beside it, its suffix replaced by `.notes.json`."""
    name = source.name
    for suffix in STORE_SUFFIXES:
        if name.endswith(suffix):
            return source.with_name(name[: -len(suffix)] + ".notes.json")
    return source.with_name(name + ".notes.json")


def read_notes(path: Path) -> NotesFile:
    """A notes file, or an empty one where there is none; a file that is not one is bad input naming it."""
    if not path.is_file():
        return NotesFile()
    if path.stat().st_size > MAX_FILE_BYTES:
        raise BadInputError(f"larger than {MAX_FILE_BYTES:,} bytes", source=str(path))
    raw = read_json(path, what="notes file")
    try:
        return NotesFile.model_validate(raw)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path)) from None


def notes_for(sources: list[Path], *, episode: str, task: str, domain: str, file: Path) -> dict[str, Any]:
    """The notes on an episode (in its own file's notes) and on its task (in the notes beside any of `sources`)."""
    on_episode, on_task, problems = [], [], []
    for source in sources:
        path = notes_path(source)
        try:
            found = read_notes(path)
        except BadInputError as exc:
            problems.append(str(exc))
            continue
        for n in found.notes:
            shown = {**n.model_dump(), "file": str(source)}
            if n.on == "task" and n.task == task and n.domain == domain:
                on_task.append(shown)
            elif n.on == "episode" and source == file and n.episode == episode:
                on_episode.append(shown)
    return {"episode": on_episode, "task": on_task, "problems": problems, "path": str(notes_path(file))}


def add_note(source: Path, body: dict[str, Any]) -> Note:
    """Write a note beside `source` (the file of the episode it was written on); its id and time are given here."""
    try:
        note = Note.model_validate({**{k: body.get(k) for k in ("on", "episode", "task", "domain")},
                                    "text": str(body.get("text", "")).strip(), "id": f"n-{secrets.token_hex(6)}",
                                    "written": datetime.now(UTC).isoformat(timespec="seconds")})  # fmt: skip
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source="note") from None
    if note.on == "episode" and not note.episode:
        raise BadInputError("a note on an episode names the episode", field="episode")
    path = notes_path(source)
    with _LOCK:
        found = read_notes(path)
        if len(found.notes) >= MAX_NOTES:
            raise BadInputError(f"holds {MAX_NOTES} notes already", source=str(path))
        found.notes.append(note)
        _write(path, found)
    return note


def delete_note(source: Path, note_id: str) -> bool:
    """Remove one note from the notes beside `source`; False when it is not there."""
    path = notes_path(source)
    with _LOCK:
        found = read_notes(path)
        kept = [n for n in found.notes if n.id != note_id]
        if len(kept) == len(found.notes):
            return False
        _write(path, NotesFile(notes=kept))
    return True


def _write(path: Path, notes: NotesFile) -> None:
    try:
        write_text_atomic(path, json.dumps(notes.model_dump(), ensure_ascii=False, indent=1) + "\n")
    except OSError as exc:
        raise BadInputError(f"cannot write the notes: {exc.strerror or exc}", source=str(path)) from None
