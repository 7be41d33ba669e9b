"""The skill library in SQLite: planning, atomic and tool skills, every edit a row, a checksum over the whole.

Schema `toolshift.steward-library/1` (docs/formats.md, "Steward libraries"):

    meta(key, value)        format, name, checksum, catalog_version (the version last maintained on)
    skills(id, ...)         one row per skill: level, domain, description, body (JSON), tools (JSON),
                            active, revision, catalog_version (of its last revision)
    edits(seq, ...)         add / revise / deactivate / reactivate / retire, with the catalog version,
                            the skill's revision after the edit and the evidence that caused it (JSON)
    work(catalog_version)   maintenance work per version: episodes seen and distilled, edits, CPU
                            seconds, model tokens

The checksum is an unkeyed SHA-256 over the canonical JSON of every skill, edit and work row, and
`Library.open` opens the file defensively and refuses a schema (every table, index, view and trigger, whatever
its name, `sqlite_*` included) that is not exactly what `_SCHEMA` creates (`toolshift.sqlitefile`, D300). Both
protect against accidents — a torn copy, a disk error, a hand edit made without Steward — not against
someone who can write the file: they can recompute an unkeyed hash. Where a library crosses a trust
boundary, sign it with a key the user holds: with `TOOLSHIFT_STEWARD_KEY` naming a key file, every
library Steward writes carries `meta.signature` (HMAC-SHA256 over the checksum, the schema and the meta
rows), and every library it opens must carry a valid one.
The signature covers the whole schema, so a library signed before D300 (whose signature left `sqlite_*` rows
out) is refused until it is signed again (`toolshift steward sign`).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from toolshift import sqlitefile
from toolshift.errors import BadInputError
from toolshift.fileio import loads_json, read_bytes

LIBRARY_FORMAT = "toolshift.steward-library/1"
Level = Literal["planning", "atomic", "tool", "foreign"]
LEVELS: tuple[str, ...] = ("planning", "atomic", "tool")
EditOp = Literal["add", "revise", "deactivate", "reactivate", "retire"]
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE skills(
  id TEXT PRIMARY KEY, level TEXT NOT NULL, domain TEXT NOT NULL, description TEXT NOT NULL,
  body TEXT NOT NULL, tools TEXT NOT NULL, active INTEGER NOT NULL, revision INTEGER NOT NULL,
  catalog_version INTEGER NOT NULL);
CREATE TABLE edits(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, skill_id TEXT NOT NULL, op TEXT NOT NULL,
  catalog_version INTEGER NOT NULL, revision INTEGER NOT NULL, evidence TEXT NOT NULL);
CREATE TABLE work(
  catalog_version INTEGER PRIMARY KEY, mode TEXT NOT NULL, episodes INTEGER NOT NULL,
  distilled INTEGER NOT NULL, edits INTEGER NOT NULL, seconds REAL NOT NULL, tokens INTEGER NOT NULL);
"""


KEY_ENV = "TOOLSHIFT_STEWARD_KEY"
"""Names a key file: libraries are then signed when written and must verify when opened."""
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = 4096


def library_key() -> bytes | None:
    """The signing key from the file `TOOLSHIFT_STEWARD_KEY` names (None when unset); a bad file is bad input."""
    name = os.environ.get(KEY_ENV, "").strip()
    if not name:
        return None
    path = Path(name)
    try:  # a regular file of at most MAX_KEY_BYTES, read no further (`/dev/zero` never ends)
        key = read_bytes(path, what="the key file", max_bytes=MAX_KEY_BYTES).strip()
    except BadInputError as exc:
        raise BadInputError(
            exc.detail.replace("larger than the limit of", "a key file is at most"),
            source=str(path),
            field=KEY_ENV,
        ) from None
    if len(key) < MIN_KEY_BYTES:
        raise BadInputError(
            f"the key is {len(key)} bytes; a signing key is at least {MIN_KEY_BYTES} (e.g. 32 random bytes, hex)",
            source=str(path),
            field=KEY_ENV,
        )
    return key


@functools.cache
def expected_schema() -> tuple[sqlitefile.SchemaObject, ...]:
    """The schema `_SCHEMA` creates (tables, `sqlite_sequence`, automatic indexes): a library has exactly this."""
    return tuple(sqlitefile.created_schema(s for s in _SCHEMA.split(";") if s.strip()))


def schema_problems(conn: sqlite3.Connection) -> list[str]:
    """How a library's schema differs from `_SCHEMA` (an added trigger, a changed table): [] when it does not."""
    return sqlitefile.schema_difference(sqlitefile.schema_objects(conn), expected_schema())


def skill_name(prefix: str, text: str, key: str) -> str:
    """A valid Agent Skills name (≤ 64 lowercase letters, digits, hyphens) made of a prefix, readable text
    and an 8-hex digest of `key` so distinct keys never share a name."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    words = re.sub(r"[^a-z0-9]+", "-", f"{prefix}-{text}".lower()).strip("-")
    room = MAX_NAME - len(digest) - 1
    return f"{words[:room].rstrip('-')}-{digest}"


@dataclass(frozen=True)
class Skill:
    """One skill. `body` is level-specific structured content (docs/formats.md); `tools` its tool dependencies."""

    id: str
    level: Level
    domain: str
    description: str
    body: dict[str, Any]
    tools: tuple[str, ...]
    active: bool = True
    revision: int = 1
    catalog_version: int = 1

    def text(self) -> str:
        """What retrieval indexes: the description, request examples, fact names and tool names."""
        parts = [self.description, *self.body.get("requests", []), *self.body.get("facts", [])]
        parts += [t.replace("_", " ") for t in self.tools]
        return " ".join(parts)


@dataclass(frozen=True)
class Edit:
    seq: int
    skill_id: str
    op: str
    catalog_version: int
    revision: int
    evidence: dict[str, Any]


@dataclass
class Work:
    """Maintenance work done on one catalog version."""

    catalog_version: int
    mode: str
    episodes: int = 0
    distilled: int = 0
    edits: int = 0
    seconds: float = 0.0
    tokens: int = 0
    by_op: dict[str, int] = field(default_factory=dict)


def _skill_row(row: tuple[Any, ...], source: str) -> Skill:
    """A `skills` row as a Skill, each column checked (a row written outside Steward is bad input, by field)."""
    sid, level, domain, description, body, tools, active, revision, version = row

    def bad(column: str, why: str) -> BadInputError:
        return BadInputError(f"corrupted library: {why}", source=source, record=repr(sid)[:80], field=column)

    if not isinstance(sid, str) or not NAME.match(sid) or len(sid) > MAX_NAME:
        raise bad("id", "not a skill name (a-z, 0-9 and single hyphens, at most 64)")
    if level not in (*LEVELS, "foreign"):
        raise bad("level", f"unknown level {str(level)[:40]!r}")
    for column, value in (("domain", domain), ("description", description)):
        if not isinstance(value, str):
            raise bad(column, "not text")
    parsed: dict[str, Any] = {}
    for column, text, kind in (("body", body, dict), ("tools", tools, list)):
        if not isinstance(text, str):
            raise bad(column, "not JSON text")
        try:
            value = loads_json(text, source=source)
        except BadInputError as exc:
            raise bad(column, exc.detail) from None
        if not isinstance(value, kind):
            raise bad(
                column,
                f"a JSON {'object' if kind is dict else 'list'} is expected, not {type(value).__name__}",
            )
        parsed[column] = value
    if not all(isinstance(t, str) for t in parsed["tools"]):
        raise bad("tools", "every tool is a name (text)")
    if active not in (0, 1) or isinstance(active, float):
        raise bad("active", "0 or 1")
    for column, value in (("revision", revision), ("catalog_version", version)):
        if not isinstance(value, int) or value < 0:
            raise bad(column, "a whole number of at least 0")
    return Skill(
        sid,
        level,
        domain,
        description,
        parsed["body"],
        tuple(parsed["tools"]),
        bool(active),
        revision,
        version,
    )


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Library:
    """An open skill library. Read skills with `skills()`; change them only through `edit` inside `transaction()`."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn
        self._skills: dict[str, Skill] = {}
        self._in_tx = False
        for row in conn.execute(
            "SELECT id, level, domain, description, body, tools, active, revision, catalog_version FROM skills"
        ):
            skill = _skill_row(row, str(path))
            self._skills[skill.id] = skill

    # --- opening ----------------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path, name: str = "library", *, replace_existing: bool = False) -> Library:
        """A new, empty library at `path` (refused if one exists, unless `replace_existing`)."""
        p = Path(path)
        if p.exists() and not replace_existing:
            raise BadInputError("a library already exists here (choose another path)", source=str(p))
        p.parent.mkdir(parents=True, exist_ok=True)
        for stale in (p, p.with_name(p.name + "-journal")):
            if stale.exists():
                stale.unlink()
        conn = sqlite3.connect(p)
        conn.executescript(_SCHEMA)
        sqlitefile.harden(conn)
        conn.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("format", LIBRARY_FORMAT), ("name", name), ("catalog_version", "0")],
        )
        conn.commit()
        lib = cls(p, conn)
        lib._store_checksum()
        return lib

    @classmethod
    def open(cls, path: str | Path, *, check_signature: bool = True) -> Library:
        """Open a library, refusing a missing file, an unknown format, a schema that is not `_SCHEMA`, a checksum
        that does not match, and (with `TOOLSHIFT_STEWARD_KEY` set, unless `check_signature` is off) a
        signature that is missing or not this key's."""
        p = Path(path)
        if not p.exists():
            raise BadInputError("no library here (toolshift steward build makes one)", source=str(p))
        conn = sqlitefile.connect(p, writable=True, what="steward library")
        try:
            sqlitefile.require_schema(
                conn,
                expected_schema(),
                source=str(p),
                expected="a steward library's",
                what="steward library",
                field="schema",
            )
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise BadInputError(f"not a steward library: {exc}", source=str(p)) from None
        except BadInputError:
            conn.close()
            raise
        if meta.get("format") != LIBRARY_FORMAT:
            conn.close()
            raise BadInputError(
                f"unknown library format {meta.get('format')!r} (this reads {LIBRARY_FORMAT!r})",
                source=str(p),
                field="format",
            )
        try:
            lib = cls(p, conn)
            actual = lib.checksum()
        except (sqlite3.DatabaseError, TypeError) as exc:
            conn.close()
            raise BadInputError(f"corrupted library: {exc}", source=str(p)) from None
        except BadInputError:
            conn.close()
            raise
        if actual != meta.get("checksum"):
            conn.close()
            raise BadInputError(
                f"corrupted library: checksum {actual[:16]} does not match the stored "
                f"{str(meta.get('checksum'))[:16]} (rows changed outside Steward)",
                source=str(p),
                field="checksum",
            )
        key = library_key()
        if (
            check_signature
            and key is not None
            and not hmac.compare_digest(str(meta.get("signature", "")), lib.signature(key))
        ):
            lib.close()
            why = (
                "is not signed"
                if not meta.get("signature")
                else "is signed with another key, or was changed since"
            )
            raise BadInputError(
                f"the library {why} ({KEY_ENV} is set: only libraries signed with its key are opened)",
                source=str(p),
                field="signature",
            )
        return lib

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reading ----------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    @property
    def catalog_version(self) -> int:
        return int(self.meta("catalog_version") or 0)

    def skills(self, level: str | None = None, *, active: bool | None = None) -> list[Skill]:
        return sorted(
            (
                s
                for s in self._skills.values()
                if (level is None or s.level == level) and (active is None or s.active == active)
            ),
            key=lambda s: s.id,
        )

    def get(self, skill_id: str) -> Skill | None:
        return self._skills.get(skill_id)

    def edits(self) -> list[Edit]:
        return [
            Edit(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]))
            for r in self._conn.execute(
                "SELECT seq, skill_id, op, catalog_version, revision, evidence FROM edits ORDER BY seq"
            )
        ]

    def work(self) -> list[Work]:
        return [
            Work(*r)
            for r in self._conn.execute(
                "SELECT catalog_version, mode, episodes, distilled, edits, seconds, tokens FROM work "
                "ORDER BY catalog_version"
            )
        ]

    def checksum(self) -> str:
        h = hashlib.sha256()
        for table, order in (("skills", "id"), ("edits", "seq"), ("work", "catalog_version")):
            for row in self._conn.execute(f"SELECT * FROM {table} ORDER BY {order}"):
                h.update(_canon([table, *row]).encode())
                h.update(b"\n")
        return h.hexdigest()

    def signature(self, key: bytes) -> str:
        """HMAC-SHA256 with the user's key over the row checksum, the schema and every meta row but the
        checksum and signature themselves: what an unkeyed checksum cannot vouch for."""
        h = hmac.new(key, digestmod=hashlib.sha256)
        h.update(self.checksum().encode())
        for obj in sqlitefile.schema_objects(self._conn):
            h.update(_canon(["schema", obj.type, obj.name, obj.table, obj.sql]).encode() + b"\n")
        for k, v in self._conn.execute(
            "SELECT key, value FROM meta WHERE key NOT IN ('checksum', 'signature') ORDER BY key"
        ):
            h.update(_canon(["meta", k, v]).encode() + b"\n")
        return h.hexdigest()

    # --- writing ----------------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Library]:
        """All edits inside commit together with a fresh checksum, or none of them do."""
        if self._in_tx:
            yield self
            return
        self._in_tx = True
        before = dict(self._skills)
        try:
            yield self
            self._store_checksum(commit=False)
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            self._skills = before
            raise
        finally:
            self._in_tx = False

    def _store_checksum(self, *, commit: bool = True) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('checksum', ?)", (self.checksum(),))
        key = library_key()
        if key is not None:
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('signature', ?)", (self.signature(key),))
        if commit:
            self._conn.commit()

    def sign(self) -> None:
        """Sign the library with the key `TOOLSHIFT_STEWARD_KEY` names (it was opened, so its checksum held)."""
        if library_key() is None:
            raise BadInputError(f"set {KEY_ENV} to a key file to sign with", field=KEY_ENV)
        self._store_checksum()

    def _require_tx(self) -> None:
        if not self._in_tx:
            raise RuntimeError("library edits happen inside Library.transaction()")

    def set_meta(self, key: str, value: str) -> None:
        self._require_tx()
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def edit(
        self, op: EditOp, skill: Skill, catalog_version: int, evidence: dict[str, Any], *, as_is: bool = False
    ) -> Skill:
        """Apply one edit and record it. `add` inserts `skill` (`as_is`: keeping its revision, state and
        version, as an import does); `revise` replaces its content (revision + 1);
        `deactivate` / `reactivate` flip its state; `retire` removes it (the edit row keeps the record)."""
        self._require_tx()
        current = self._skills.get(skill.id)
        if op == "add":
            if current is not None:
                raise ValueError(f"skill {skill.id} exists")
            new = skill if as_is else replace(skill, revision=1, catalog_version=catalog_version)
        elif current is None:
            raise ValueError(f"no skill {skill.id} to {op}")
        elif op == "revise":
            new = replace(skill, revision=current.revision + 1, catalog_version=catalog_version)
        elif op in ("deactivate", "reactivate"):
            new = replace(current, active=op == "reactivate")
        elif op == "retire":
            new = current
        else:
            raise ValueError(f"unknown edit {op!r}")
        if op == "retire":
            self._conn.execute("DELETE FROM skills WHERE id = ?", (skill.id,))
            self._skills.pop(skill.id)
        else:
            self._conn.execute(
                "INSERT OR REPLACE INTO skills VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new.id, new.level, new.domain, new.description, _canon(new.body), _canon(list(new.tools)),
                    int(new.active), new.revision, new.catalog_version,
                ),
            )  # fmt: skip
            self._skills[new.id] = new
        self._conn.execute(
            "INSERT INTO edits(skill_id, op, catalog_version, revision, evidence) VALUES (?, ?, ?, ?, ?)",
            (skill.id, op, catalog_version, new.revision, _canon(evidence)),
        )
        return new

    def record_work(self, work: Work) -> None:
        self._require_tx()
        self._conn.execute(
            "INSERT OR REPLACE INTO work VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                work.catalog_version, work.mode, work.episodes, work.distilled, work.edits,
                round(work.seconds, 4), work.tokens,
            ),
        )  # fmt: skip
        self.set_meta("catalog_version", str(work.catalog_version))


def copy_library(src: str | Path, dest: str | Path) -> Library:
    """A byte copy of a verified library at `dest` (written beside, then renamed), opened."""
    Library.open(src).close()
    d = Path(dest)
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = d.with_name(d.name + ".tmp")
    tmp.write_bytes(read_bytes(src, what="steward library"))
    os.replace(tmp, d)
    return Library.open(d)


def dependencies_present(skill: Skill, catalog: Iterable[str]) -> bool:
    """A skill is usable while every tool it depends on is in the catalog."""
    names = catalog if isinstance(catalog, set | frozenset | dict) else set(catalog)
    return all(t in names for t in skill.tools)


def sign_library(path: str | Path) -> Path:
    """Sign a library you trust (its checksum and schema still checked) with the `TOOLSHIFT_STEWARD_KEY` key."""
    with Library.open(path, check_signature=False) as lib:
        lib.sign()
    return Path(path)


def plan_facts(steps: list[dict[str, Any]]) -> list[str]:
    """The facts a plan's steps bind (arguments and where-clauses), in step order."""
    out: list[str] = []
    for step in steps:
        for b in step.get("args", {}).values():
            out += (
                [b["fact"]] if "fact" in b else list(b.get("facts", [])) or list(b.get("where", {}).values())
            )
    return list(dict.fromkeys(out))
