"""The record middleware's journal: each call appended as it completes, so a kill -9 loses at most the call in
flight, and the next start closes the sessions it left open.

A line is written (`os.write`) before the call's answer goes back: from then on it is the kernel's, and the
death of the process cannot lose it. The disk flush (`fsync`, against the machine's own crash) runs in a
background thread that coalesces the lines written meanwhile, never on the call's path, and once more when
the journal closes (D149): a flush costs 1–12 ms on a busy disk, several times a call's own time.

`<out>/<domain>.journal.jsonl` holds one JSON object a line (`toolshift.gateway-journal/1`): `{"session",
"started", "task", "call": {"messages", "changes", "source"}}` per completed call (already redacted: the
same text the episode will hold) and `{"session", "closed": true}` once the session's episode is in the
episode file. At start (`RecordMiddleware.recover`), every session with calls and no `closed` line is
written as an episode with `termination_reason: gateway_killed`, unless the episode file already holds it
(a kill between the two writes), and the journal is then emptied. A torn last line (the kill came
mid-write) is the call in flight: left out. One gateway writes one folder at a time.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.fileio import open_input

JOURNAL_FORMAT = "toolshift.gateway-journal/1"


@dataclass
class Orphan:
    """A session the journal saw calls of but no end: what its episode is rebuilt from."""

    session: str
    started: str
    task: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    changes_complete: bool = True
    calls: list[dict[str, Any]] = field(default_factory=list)
    ended: str | None = None


class Journal:
    """Append-only; each line written at once and flushed to disk by a background thread; thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = None
        self.lines = 0
        self.synced = 0
        """Lines known flushed to disk (`fsync` done after they were written)."""
        self._wake = threading.Event()
        self._syncer: threading.Thread | None = None

    def append(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                if os.fstat(self._fd).st_size == 0:
                    header = json.dumps({"format": JOURNAL_FORMAT}) + "\n"
                    os.write(self._fd, header.encode())
            os.write(self._fd, data)
            self.lines += 1
            if self._syncer is None:
                self._syncer = threading.Thread(target=self._sync_loop, name="journal-fsync", daemon=True)
                self._syncer.start()
        self._wake.set()

    def _sync_loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                if self._fd is None or self._syncer is not threading.current_thread():
                    return  # closed (a journal opened again has a thread of its own)
                fd, upto = os.dup(self._fd), self.lines
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self.synced = max(self.synced, upto)

    def close(self) -> None:
        with self._lock:
            syncer, self._syncer = self._syncer, None
            if self._fd is not None:
                os.fsync(self._fd)
                self.synced = self.lines
                os.close(self._fd)
                self._fd = None
        self._wake.set()
        if syncer is not None and syncer is not threading.current_thread():
            syncer.join(timeout=10)

    def clear(self) -> None:
        """Empty the journal: every session in it is now in the episode file."""
        self.close()
        self.path.unlink(missing_ok=True)

    def orphans(self) -> list[Orphan]:
        """Sessions with calls and no `closed` line, in the order they started; a torn or bad line is skipped."""
        if not self.path.exists():
            return []
        found: dict[str, Orphan] = {}
        closed: set[str] = set()
        with open_input(self.path, what="gateway journal") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # the call in flight when the kill came
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(line, dict) or not isinstance(line.get("session"), str):
                    continue
                sid = line["session"]
                if line.get("closed"):
                    closed.add(sid)
                    continue
                call = line.get("call")
                if not isinstance(call, dict):
                    continue
                o = found.setdefault(sid, Orphan(session=sid, started=str(line.get("started", ""))))
                if isinstance(line.get("task"), str):
                    o.task = line["task"]
                o.messages += [m for m in call.get("messages", []) if isinstance(m, dict)]
                changes = call.get("changes")
                if isinstance(changes, list):
                    o.changes += [c for c in changes if isinstance(c, dict)]
                else:
                    o.changes_complete = False
                if isinstance(call.get("source"), dict):
                    o.calls.append(call["source"])
                o.ended = str(line.get("at", "")) or o.ended
        return [o for sid, o in found.items() if sid not in closed and o.messages]
