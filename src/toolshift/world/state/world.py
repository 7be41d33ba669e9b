"""A live world: a SQLite state plus a mutable tool catalog; calls, snapshots, restores and exact diffs.

Every write call runs inside a SAVEPOINT. Temporary triggers copy the before-image of each row
a call touches into temp tables, so a call reports exactly the `RowChange`s it made, and a
failed call (domain error, schema error, exception in an action) rolls back and reports none.
Read calls run under an SQLite authorizer set once per connection that refuses every statement that could
change anything while a read runs (D147), so a tool labelled `read` provably changes nothing.

The same triggers keep the key of every row written since the world was made or last restored
(`temp._ts_touched`), so a diff from a snapshot the world took in that time compares those rows only
(D153); any other diff compares every row.
"""

from __future__ import annotations

import asyncio
import difflib
import itertools
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolshift import sqlitefile
from toolshift.errors import BadInputError
from toolshift.fileio import atomic_path, loads_json
from toolshift.models import RowChange
from toolshift.world.state.compiler import CompiledDomain
from toolshift.world.state.runtime import Runtime
from toolshift.world.state.schema import Table, quote
from toolshift.world.state.tools import CallResult, Tool, argument_problem, integral_floats, nonfinite_path
from toolshift.world.state.validation import ArgumentSchema, SchemaProblem
from toolshift.world.toolerror import ToolError

_READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
"""What a statement prepared during a read may do; anything else (a write, DDL, a transaction, ATTACH) is denied."""
_READ_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
     "foreign_key_check", "integrity_check", "quick_check"}
)  # fmt: skip
"""Pragmas that only report, with any argument; every other pragma only as a query (no value)."""
_QUERY_PRAGMAS = frozenset(
    {"query_only", "foreign_keys", "user_version", "schema_version", "data_version", "page_count",
     "page_size", "table_list", "database_list", "collation_list", "function_list", "pragma_list",
     "compile_options", "encoding", "freelist_count"}
)  # fmt: skip


@dataclass
class Snapshot:
    """A frozen copy of a world's whole database (taken with the SQLite backup API)."""

    domain: str
    conn: sqlite3.Connection
    taken_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))
    _epoch: int | None = field(default=None, repr=False, compare=False)
    """The world epoch it was taken in: while a world is in that epoch, its touched rows cover every change."""

    def save(self, path: str | Path) -> Path:
        """Write the snapshot as a standalone SQLite file, atomically: a temp sibling renamed over `path`, so
        a kill mid-write leaves any previous file whole."""
        path = Path(path)
        with atomic_path(path) as tmp:
            dst = sqlite3.connect(tmp)
            try:
                self.conn.backup(dst)
            finally:
                dst.close()
        return path

    def to_bytes(self) -> bytes:
        return self.conn.serialize()

    def close(self) -> None:
        self.conn.close()


_epochs = itertools.count()
"""World epochs: a world's begins when it is made or restored, never shared by two worlds."""


def _copy(src: sqlite3.Connection) -> sqlite3.Connection:
    dst = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    src.backup(dst)
    return dst


def row_changes(
    t: Table, key: Any, before: tuple[Any, ...] | None, after: tuple[Any, ...] | None
) -> list[RowChange]:
    """The field-level changes between two images of one row (None = the row does not exist)."""
    if before is None and after is None:
        return []
    out: list[RowChange] = []
    skey = str(key)
    if before is None:
        assert after is not None
        for c, v in zip(t.columns, after, strict=True):
            out.append(RowChange(table=t.name, key=skey, field=c, op="insert", after=t.to_value(c, v)))
    elif after is None:
        for c, v in zip(t.columns, before, strict=True):
            out.append(RowChange(table=t.name, key=skey, field=c, op="delete", before=t.to_value(c, v)))
    else:
        for c, b, a in zip(t.columns, before, after, strict=True):
            if b != a or type(b) is not type(a):
                out.append(
                    RowChange(
                        table=t.name,
                        key=skey,
                        field=c,
                        op="update",
                        before=t.to_value(c, b),
                        after=t.to_value(c, a),
                    )
                )
    return out


def _change_order(c: RowChange) -> tuple[str, str, str]:
    return (c.table, c.key, c.field)


class World:
    """One world: its own in-memory SQLite state (a copy of the domain template) and its own tool catalog."""

    def __init__(self, domain: CompiledDomain, *, state: sqlite3.Connection | None = None) -> None:
        self.domain = domain
        if state is None:
            with domain.lock:
                self.conn = _copy(domain.template)
        else:
            self.conn = _copy(state)
        self.conn.execute("PRAGMA foreign_keys = ON")
        self._catalog: dict[str, Tool] = {t.name: t for t in domain.tools}
        self._validators: dict[str, tuple[dict[str, Any], ArgumentSchema]] = {}
        self._lock = threading.RLock()
        self._depth = 0
        self._reading = False
        self._writes_prepared = False
        self.conn.set_authorizer(self._authorize)
        self.runtime = Runtime(self)
        self._install_tracking()
        self._epoch = next(_epochs)

    # --- construction ---------------------------------------------------------------------------

    @classmethod
    def load(cls, name_or_path: str | Path, *, seed: int | None = None) -> World:
        """A fresh world of a built-in domain (by name) or a spec file (by path)."""
        from toolshift.world.state.registry import load_domain

        return cls(load_domain(name_or_path, seed=seed))

    @classmethod
    def open(cls, path: str | Path) -> World:
        """A world whose state is a compiled or saved SQLite file (the spec is read from its `_ts_meta`).

        The file is opened defensively and read only after its schema holds no trigger or view; then its whole
        schema (every table, index, view and trigger, whatever its name, `sqlite_*` included, and each one's
        SQL) must be exactly what its spec compiles to, or it is refused naming what differs
        (`toolshift.sqlitefile`, D300): a trigger or view in a world file would be code the data runs.
        """
        from toolshift.world.language.spec import parse_spec
        from toolshift.world.state.compiler import compile_domain
        from toolshift.world.state.schema import WORLD_FORMAT

        path = Path(path)
        src = sqlitefile.connect(path, what="toolshift world file", check_same_thread=False)
        try:
            sqlitefile.require_schema(
                src, None, source=str(path), expected="a world's", what="toolshift world file"
            )  # before any read
            meta = dict(src.execute("SELECT key, value FROM _ts_meta").fetchall())
            if meta.get("format") != WORLD_FORMAT:
                raise BadInputError(
                    f"unknown world format {meta.get('format')!r} (this build reads {WORLD_FORMAT!r})",
                    source=str(path),
                    field="_ts_meta.format",
                )
            spec = parse_spec(
                loads_json(meta["spec"], source=f"{path}:_ts_meta.spec"), f"{path}:_ts_meta.spec"
            )
            domain = compile_domain(spec, str(path), with_data=False)
            with domain.lock:
                want = sqlitefile.schema_objects(domain.template)
            sqlitefile.require_schema(
                src, want, source=str(path), expected="what its spec compiles to", what="toolshift world file"
            )
            return cls(domain, state=src)
        except (sqlite3.DatabaseError, KeyError, ValueError) as exc:  # ValueError: JSON, UTF-8 damage
            reason = " ".join(str(exc).split())[:300]
            raise BadInputError(f"not a toolshift world file: {reason}", source=str(path)) from None
        finally:
            src.close()

    def fork(self) -> World:
        """A new world with a copy of this world's current state and catalog."""
        with self._lock:
            other = World(self.domain, state=self.conn)
        other._catalog = dict(self._catalog)
        return other

    def close(self) -> None:
        self.conn.close()

    @property
    def name(self) -> str:
        return self.domain.name

    @property
    def policy(self) -> str:
        return self.domain.spec.policy

    # --- catalog ----------------------------------------------------------------------------------

    @property
    def tools(self) -> list[Tool]:
        return list(self._catalog.values())

    def tool(self, name: str) -> Tool:
        """The tool with this name; `ToolError(unknown_tool)` suggesting close names otherwise."""
        try:
            return self._catalog[name]
        except KeyError:
            raise ToolError("unknown_tool", self._unknown_message(name)) from None

    def _unknown_message(self, name: str) -> str:
        # MCP tool names are at most 128 characters: a longer one is nobody's typo.
        close = (
            difflib.get_close_matches(name, list(self._catalog), n=3, cutoff=0.5) if len(name) <= 128 else []
        )
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"no tool named {name!r}{hint}"

    def add_tool(self, tool: Tool, *, replace: bool = False) -> None:
        if tool.name in self._catalog and not replace:
            raise ValueError(f"tool {tool.name!r} already exists")
        self._catalog[tool.name] = tool
        self._validators.pop(tool.name, None)

    def remove_tool(self, name: str) -> Tool:
        self._validators.pop(name, None)
        return self._catalog.pop(name)

    def rename_tool(self, old: str, new: str, description: str | None = None) -> Tool:
        tool = self.remove_tool(old).renamed(new, description)
        self.add_tool(tool)
        return tool

    def set_tools(self, tools: Iterable[Tool]) -> None:
        """Replace the whole catalog."""
        self._catalog = {t.name: t for t in tools}
        self._validators.clear()

    # --- calls ------------------------------------------------------------------------------------

    def validate(self, tool: Tool, args: dict[str, Any]) -> None:
        """Check arguments against the tool's schema and what a world can store; the error names the field path.

        Non-finite numbers, integers beyond 64 bits, lone surrogates, strings over `MAX_STRING_CHARS` and
        nesting over `MAX_ARGUMENT_DEPTH` are refused before the schema is consulted.
        """
        problem = argument_problem(args)
        if problem is not None:
            path, reason = problem
            raise ToolError("invalid_arguments", f"{tool.name}: argument {path!r}: {reason}")
        cached = self._validators.get(tool.name)
        if cached is not None and cached[0] is tool.input_schema:
            checker = cached[1]
        else:
            try:
                checker = ArgumentSchema(tool.input_schema)
            except SchemaProblem as exc:
                raise ToolError("internal_error", f"{tool.name} has an invalid input schema: {exc}") from None
            self._validators[tool.name] = (tool.input_schema, checker)
        err = checker.problem(args)
        if err is not None:
            path = "/".join(str(p) for p in err.absolute_path)
            if err.validator == "required" or err.validator == "additionalProperties" or not path:
                where = "arguments"
            else:
                where = f"argument {path!r}"
            raise ToolError("invalid_arguments", f"{tool.name}: {where}: {err.message}")
        problem = integral_floats(tool.input_schema, args)
        if problem is not None:
            raise ToolError("invalid_arguments", f"{tool.name}: argument {problem[0]!r}: {problem[1]}")

    def call(self, name: str, args: dict[str, Any] | None = None) -> CallResult:
        """Validate and run one tool call in its own transaction; never raises for domain failures."""
        if args is None:
            args = {}
        with self._lock:
            try:
                if not isinstance(args, dict):
                    raise ToolError("invalid_arguments", f"{name}: arguments must be a JSON object")
                args = dict(args)  # validation may turn an integral float into an int
                tool = self.tool(name)
                self.validate(tool, args)
                if tool.effect == "read":
                    return CallResult(name, True, self._run_read(tool, args))
                result, changes = self._run_write(tool, args)
                return CallResult(name, True, result, changes=changes)
            except ToolError as exc:
                return CallResult(name, False, error=exc.as_dict())

    def call_inside(self, name: str, args: dict[str, Any]) -> Any:
        """Run a tool from inside another tool's handler (same transaction); errors propagate."""
        tool = self.tool(name)
        args = dict(args)
        self.validate(tool, args)
        return self._invoke(tool, args)

    def _invoke(self, tool: Tool, args: dict[str, Any]) -> Any:
        self._depth += 1
        try:
            result = tool.handler(self.runtime, dict(args))
            if (where := nonfinite_path(result)) is not None:
                raise ToolError(
                    "internal_error",
                    f"{tool.name} returned a number that is not finite at {where!r} (NaN or infinity)",
                )
            return result
        except ToolError:
            raise
        except sqlite3.IntegrityError as exc:
            raise ToolError("constraint_violation", str(exc)) from None
        except sqlite3.DatabaseError as exc:  # OperationalError, or the read authorizer's "not authorized"
            if "not authorized" in str(exc) or "readonly" in str(exc):
                raise ToolError(
                    "internal_error", f"{tool.name} is labelled read but tried to write"
                ) from None
            raise ToolError("internal_error", f"{tool.name} failed: {exc}") from None
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:
            # SystemExit, GeneratorExit or any other non-cancellation escape from a handler is the handler's
            # failure, not the caller's: it must not end a server or the CLI that made the call.
            raise ToolError("internal_error", f"{tool.name} failed: {type(exc).__name__}: {exc}") from None
        finally:
            self._depth -= 1

    def _run_read(self, tool: Tool, args: dict[str, Any]) -> Any:
        if self._depth:
            return self._invoke(tool, args)
        with self.reading():
            return self._invoke(tool, args)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """While inside, no statement on this world's connection can change anything (reentrant).

        The authorizer is consulted when SQLite prepares a statement, and a statement prepared before
        (cached by sqlite3) is not prepared again: so when a statement that writes has been prepared since
        the last time, the authorizer is set again, which expires every prepared statement and makes the
        next use of each prepare it anew, under the read rules.
        """
        if self._reading:
            yield
            return
        if self._writes_prepared:
            self.conn.set_authorizer(self._authorize)
            self._writes_prepared = False
        self._reading = True
        try:
            yield
        finally:
            self._reading = False

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, _: str | None
    ) -> int:
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and (
            arg1 in _READ_PRAGMAS or (arg2 is None and arg1 in _QUERY_PRAGMAS)
        ):
            return sqlite3.SQLITE_OK
        if self._reading:
            return sqlite3.SQLITE_DENY
        self._writes_prepared = True
        return sqlite3.SQLITE_OK

    def _run_write(self, tool: Tool, args: dict[str, Any]) -> tuple[Any, list[RowChange]]:
        self.conn.execute("SAVEPOINT ts_call")
        try:
            result = self._invoke(tool, args)
            changes = self._collect_changes()
        except BaseException:
            self.conn.execute("ROLLBACK TO ts_call")
            self.conn.execute("RELEASE ts_call")
            raise
        self.conn.execute("RELEASE ts_call")
        return result, changes

    # --- change tracking --------------------------------------------------------------------------

    def _install_tracking(self) -> None:
        c = self.conn
        c.execute("CREATE TEMP TABLE IF NOT EXISTS _ts_dirty (tbl TEXT PRIMARY KEY)")
        c.execute("CREATE TEMP TABLE IF NOT EXISTS _ts_touched (tbl TEXT, k, PRIMARY KEY (tbl, k))")
        for t in self.domain.tables.values():
            before = quote(f"_ts_before_{t.name}")
            cols = ", ".join(quote(col) for col in t.columns)
            mark = f"INSERT OR IGNORE INTO _ts_dirty VALUES ('{t.name}');"
            key = quote(t.key)
            touch = {  # the rows a statement writes, kept since the epoch began (D153)
                row: f"INSERT OR IGNORE INTO _ts_touched VALUES ('{t.name}', {row}.{key});"
                for row in ("NEW", "OLD")
            }
            old = ", ".join(f"OLD.{quote(col)}" for col in t.columns)
            c.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {before} ({cols}, _ts_existed, PRIMARY KEY ({quote(t.key)}))"
            )
            c.execute(
                f"CREATE TEMP TRIGGER IF NOT EXISTS {quote(f'_ts_ins_{t.name}')} AFTER INSERT ON main.{quote(t.name)} "
                f"BEGIN INSERT OR IGNORE INTO {before} ({quote(t.key)}, _ts_existed) VALUES (NEW.{quote(t.key)}, 0); "
                f"{mark} {touch['NEW']} END"
            )
            for op in ("UPDATE", "DELETE"):
                touched = touch["OLD"] + (" " + touch["NEW"] if op == "UPDATE" else "")
                c.execute(
                    f"CREATE TEMP TRIGGER IF NOT EXISTS {quote(f'_ts_{op.lower()}_{t.name}')} BEFORE {op} "
                    f"ON main.{quote(t.name)} BEGIN INSERT OR IGNORE INTO {before} VALUES ({old}, 1); {mark} "
                    f"{touched} END"
                )

    def _collect_changes(self) -> list[RowChange]:
        dirty = [r[0] for r in self.conn.execute("SELECT tbl FROM temp._ts_dirty")]
        if not dirty:
            return []
        out: list[RowChange] = []
        for name in dirty:
            t = self.domain.tables[name]
            before_tbl = quote(f"_ts_before_{name}")
            for row in self.conn.execute(f"SELECT * FROM temp.{before_tbl}").fetchall():
                *image, existed = row
                key = image[t.key_index]
                now = self.conn.execute(t.select_by_key, (key,)).fetchone()
                out += row_changes(t, key, tuple(image) if existed else None, now)
            self.conn.execute(f"DELETE FROM temp.{before_tbl}")
        self.conn.execute("DELETE FROM temp._ts_dirty")
        return sorted(out, key=_change_order)

    # --- state ------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(self.name, _copy(self.conn), _epoch=self._epoch)

    def restore(self, snapshot: Snapshot) -> None:
        """Make the world's state exactly the snapshot's (the catalog is unchanged)."""
        if snapshot.domain != self.name:
            raise BadInputError(f"snapshot of {snapshot.domain!r} cannot restore world {self.name!r}")
        with self._lock:
            snapshot.conn.backup(self.conn)
            self.conn.execute("PRAGMA foreign_keys = ON")
            # A new epoch that the restored snapshot is now taken in (its state is the world's, nothing touched).
            self.conn.execute("DELETE FROM temp._ts_touched")
            self._epoch = snapshot._epoch = next(_epochs)

    def diff(self, before: Snapshot | World, after: Snapshot | World | None = None) -> list[RowChange]:
        """Exact row-level changes from `before` to `after` (default: this world now), sorted.

        `before` is attached (serialized, then deserialized) to `after`'s connection, and each table
        is compared in SQL by primary key; only the rows that differ are read into Python.
        """
        a = before.conn
        b = (after or self).conn
        if a is b:
            return []
        with self._lock:
            if b.in_transaction or a.in_transaction:
                return self._diff_in_python(a, b)
            touched: dict[str, list[Any]] | None = None
            if isinstance(before, Snapshot) and after in (None, self) and before._epoch == self._epoch:
                touched = {}
                for name, key in b.execute("SELECT tbl, k FROM temp._ts_touched"):
                    touched.setdefault(name, []).append(key)
                if not touched:
                    return []
            b.execute("ATTACH DATABASE ':memory:' AS _ts_before")
            try:
                b.deserialize(a.serialize(), name="_ts_before")
                out: list[RowChange] = []
                for t in self.domain.tables.values():
                    if touched is None:
                        out += self._diff_table(b, t)
                    elif t.name in touched:
                        out += self._diff_table(b, t, touched[t.name])
            finally:
                b.execute("DETACH DATABASE _ts_before")
        return sorted(out, key=_change_order)

    def _diff_table(
        self, conn: sqlite3.Connection, t: Table, only: list[Any] | None = None
    ) -> list[RowChange]:
        """The rows of `t` that differ (`only`: among these keys, every other row being unchanged)."""
        k, n = quote(t.key), quote(t.name)
        differs = " OR ".join(f"m.{quote(c)} IS NOT o.{quote(c)}" for c in t.columns if c != t.key) or "0"
        query = (
            f"SELECT m.{k} FROM main.{n} m JOIN _ts_before.{n} o ON m.{k} = o.{k} WHERE ({differs}) AND {{m}} "
            f"UNION ALL SELECT m.{k} FROM main.{n} m "
            f"WHERE NOT EXISTS (SELECT 1 FROM _ts_before.{n} o WHERE o.{k} = m.{k}) AND {{m}} "
            f"UNION ALL SELECT o.{k} FROM _ts_before.{n} o "
            f"WHERE NOT EXISTS (SELECT 1 FROM main.{n} m WHERE m.{k} = o.{k}) AND {{o}}"
        )
        if only is None:
            keys = [r[0] for r in conn.execute(query.format(m="1", o="1"))]
        else:
            keys = []
            for i in range(0, len(only), 300):
                chunk = only[i : i + 300]
                marks = ", ".join("?" for _ in chunk)
                where = query.format(m=f"m.{k} IN ({marks})", o=f"o.{k} IN ({marks})")
                keys += [r[0] for r in conn.execute(where, chunk * 3)]
        if not keys:
            return []
        cols = ", ".join(quote(c) for c in t.columns)
        out: list[RowChange] = []
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ", ".join("?" for _ in chunk)
            now = {
                r[t.key_index]: r
                for r in conn.execute(f"SELECT {cols} FROM main.{n} WHERE {k} IN ({marks})", chunk)
            }
            was = {
                r[t.key_index]: r
                for r in conn.execute(f"SELECT {cols} FROM _ts_before.{n} WHERE {k} IN ({marks})", chunk)
            }
            for key in chunk:
                out += row_changes(t, key, was.get(key), now.get(key))
        return out

    def _diff_in_python(self, a: sqlite3.Connection, b: sqlite3.Connection) -> list[RowChange]:
        """The same diff without ATTACH (which SQLite refuses inside a transaction)."""
        out: list[RowChange] = []
        for t in self.domain.tables.values():
            rows_a = {r[t.key_index]: r for r in a.execute(t.select)}
            rows_b = {r[t.key_index]: r for r in b.execute(t.select)}
            if rows_a == rows_b:
                continue
            for key in rows_a.keys() | rows_b.keys():
                ra, rb = rows_a.get(key), rows_b.get(key)
                if ra != rb:
                    out += row_changes(t, key, ra, rb)
        return sorted(out, key=_change_order)

    def changes_since(self, snapshot: Snapshot) -> list[RowChange]:
        return self.diff(snapshot, self)

    def save(self, path: str | Path) -> Path:
        """Write the current state as a standalone SQLite file (layout in docs/formats.md)."""
        with self._lock:
            return Snapshot(self.name, self.conn).save(path)

    def row_counts(self) -> dict[str, int]:
        return {
            t: int(self.conn.execute(f"SELECT COUNT(*) FROM {quote(t)}").fetchone()[0])
            for t in self.domain.tables
        }


def compose_changes(changes: Iterable[RowChange]) -> list[RowChange]:
    """Fold changes made one after another into the net change per field (what one diff would show)."""
    net: dict[tuple[str, str, str], RowChange] = {}
    for c in changes:
        k = (c.table, c.key, c.field)
        prev = net.get(k)
        if prev is None:
            net[k] = c
            continue
        start_exists = prev.op != "insert"
        start_value = prev.before
        end_exists = c.op != "delete"
        if not start_exists and not end_exists:
            del net[k]
        elif not start_exists:
            net[k] = RowChange(table=c.table, key=c.key, field=c.field, op="insert", after=c.after)
        elif not end_exists:
            net[k] = RowChange(table=c.table, key=c.key, field=c.field, op="delete", before=start_value)
        elif start_value == c.after and type(start_value) is type(c.after):
            del net[k]
        else:
            net[k] = RowChange(
                table=c.table, key=c.key, field=c.field, op="update", before=start_value, after=c.after
            )
    return sorted(net.values(), key=_change_order)
