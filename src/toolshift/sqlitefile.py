"""SQLite files from outside: opened defensively, and refused unless their whole schema is one toolshift makes.

A SQLite file's schema is code: a trigger runs on the writes it names and a view runs when it is read, and
`PRAGMA writable_schema` lets anyone who can edit a file plant either under any name, `sqlite_*` included.
So every SQLite file toolshift opens from outside (a saved world, a Steward library) goes through here
(docs/formats.md, "SQLite files from outside"; D300):

- `connect` refuses what is not a regular file, opens it (read-only unless asked) and `harden`s the
  connection: `PRAGMA trusted_schema=OFF` (no function with side effects called from a schema object),
  `writable_schema` off, `SQLITE_DBCONFIG_DEFENSIVE` on and triggers and views off where Python exposes
  `setconfig` (3.12+), and an authorizer that denies every step a trigger or a view asks for (SQLite
  names the object on each request), so no trigger or view runs even where Python cannot configure SQLite.
- `schema_objects` lists every row of `sqlite_master` — every table, index, view and trigger, whatever its
  name — as (type, name, table, SQL); `created_schema` lists what the same statements create in a fresh
  in-memory database, and `schema_difference` names each object that differs, duplicates counted.
- `require_schema` refuses a file whose schema differs with one `BadInputError` naming up to four
  differences.
"""

from __future__ import annotations

import sqlite3
import stat
import urllib.parse
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from toolshift.errors import BadInputError

SHOWN = 4
"""Differences named in a refusal; the rest are counted."""

_DBCONFIG_OFF = ("SQLITE_DBCONFIG_TRUSTED_SCHEMA", "SQLITE_DBCONFIG_WRITABLE_SCHEMA",
                 "SQLITE_DBCONFIG_ENABLE_TRIGGER", "SQLITE_DBCONFIG_ENABLE_VIEW")  # fmt: skip
_DBCONFIG_ON = ("SQLITE_DBCONFIG_DEFENSIVE",)


@dataclass(frozen=True, order=True, slots=True)
class SchemaObject:
    """One row of `sqlite_master`: its SQL with runs of whitespace made one space (NULL for automatic indexes)."""

    type: str
    name: str
    table: str
    sql: str | None

    def label(self) -> str:
        return f"{self.type} {self.name!r}"


def _refuse_schema_steps(
    action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
) -> int:
    """The authorizer of `harden`: nothing a trigger or view asks for, and no writable schema."""
    if source is not None:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() == "writable_schema" and arg2 is not None:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def harden(conn: sqlite3.Connection) -> sqlite3.Connection:
    """Give a connection to an outside file the defensive settings SQLite offers (the module's list)."""
    setconfig = getattr(conn, "setconfig", None)  # Python 3.12+
    if setconfig is not None:
        for names, value in ((_DBCONFIG_OFF, False), (_DBCONFIG_ON, True)):
            for name in names:
                op = getattr(sqlite3, name, None)
                if op is not None:
                    setconfig(op, value)
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute("PRAGMA writable_schema = OFF")
    conn.set_authorizer(_refuse_schema_steps)
    return conn


def connect(
    path: str | Path, *, writable: bool = False, what: str = "SQLite file", check_same_thread: bool = True
) -> sqlite3.Connection:
    """A hardened connection to an existing regular file (a FIFO, device or folder is refused, never opened)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise BadInputError(f"no {what} here: {exc.strerror or exc}", source=str(path)) from None
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else "not a file"
        raise BadInputError(f"{kind}, not a regular file, so not a {what}", source=str(path))
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode={'rw' if writable else 'ro'}"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=check_same_thread)
    except sqlite3.Error as exc:
        raise BadInputError(f"cannot open the {what}: {exc}", source=str(path)) from None
    try:
        return harden(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise BadInputError(f"not a {what}: {exc}", source=str(path)) from None


def schema_objects(conn: sqlite3.Connection) -> list[SchemaObject]:
    """Every row of the main schema, sorted: tables, indexes, views and triggers, `sqlite_*` names included."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM main.sqlite_master").fetchall()
    return sorted(
        SchemaObject(str(t), str(n), str(tb), None if sql is None else " ".join(str(sql).split()))
        for t, n, tb, sql in rows
    )


def created_schema(statements: Iterable[str]) -> list[SchemaObject]:
    """The schema the statements create in a fresh in-memory database: what a file made by them must have."""
    conn = sqlite3.connect(":memory:")
    try:
        for stmt in statements:
            conn.execute(stmt)
        return schema_objects(conn)
    finally:
        conn.close()


def schema_difference(have: Iterable[SchemaObject], want: Iterable[SchemaObject]) -> list[str]:
    """How one schema differs from another, one line per object: extra, missing, defined differently,
    or present more than once (a planted duplicate name); [] when they are equal."""
    have_n, want_n = Counter(have), Counter(want)
    extra, missing = have_n - want_n, want_n - have_n
    by_name = {(o.type, o.name) for o in missing}
    out: list[str] = []
    for obj in sorted(extra):
        if have_n[obj] > 1 and want_n[obj]:
            out.append(f"{obj.label()} appears {have_n[obj]} times")
        elif (obj.type, obj.name) in by_name:
            out.append(f"{obj.label()} defined differently")
        else:
            out.append(f"extra {obj.label()}")
    changed = {(o.type, o.name) for o in extra}
    out += [f"missing {o.label()}" for o in sorted(missing) if (o.type, o.name) not in changed]
    return out


def require_schema(
    conn: sqlite3.Connection,
    want: Iterable[SchemaObject] | None,
    *,
    source: str,
    expected: str,
    what: str,
    field: str = "sqlite_master",
) -> None:
    """Refuse a file whose schema is not `want` ("its schema is not <expected>"), naming up to `SHOWN`
    differences; with `want` None, refuse only code: any trigger or view, whatever its name. A schema SQLite
    cannot read is "not a <what>"."""
    try:
        have = schema_objects(conn)
    except sqlite3.Error as exc:
        raise BadInputError(f"not a {what}: {' '.join(str(exc).split())[:300]}", source=source) from None
    if want is None:
        want = [o for o in have if o.type not in ("trigger", "view")]
    differs = schema_difference(have, want)
    if differs:
        shown = differs[:SHOWN] + ([f"and {len(differs) - SHOWN} more"] if len(differs) > SHOWN else [])
        raise BadInputError(
            f"its schema is not {expected} (data never runs code): " + "; ".join(shown),
            source=source,
            field=field,
        )
