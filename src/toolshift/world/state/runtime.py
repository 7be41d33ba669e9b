"""What a tool handler works with: the world's connection plus row helpers, bound inside one call's transaction.

The same helpers are what a spec's custom-action `code` and `preconditions` may call through the
safe interpreter (`get`, `require`, `find`, `count`, `insert`, `update`, `delete`, `fail`, `call`,
`add_days`, `days_between`, with `today` and `now`); see `ActionSpec` and docs/formats.md.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from toolshift.world.language.bounds import Budget
from toolshift.world.state.schema import Table, quote
from toolshift.world.toolerror import ToolError

if TYPE_CHECKING:
    from toolshift.world.state.world import World

MAX_CALL_DEPTH = 16
"""How deep tools may call each other through `call` (a spec cannot recurse without end)."""


class Runtime:
    """Row-level access to a world's tables for handlers; every write is tracked by the world's diff triggers."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.tables: dict[str, Table] = world.domain.tables
        self.today: str = world.domain.spec.today
        self.now: str = f"{self.today}T12:00"
        self.budget: Budget | None = None
        """The step budget of the outermost call now running interpreted action code (None between calls)."""
        self._helpers: dict[bool, dict[str, Callable[..., Any]]] = {}

    @property
    def conn(self) -> sqlite3.Connection:
        return self.world.conn

    def table(self, entity: str) -> Table:
        try:
            return self.tables[entity]
        except KeyError:
            raise ToolError("unknown_entity", f"no entity {entity!r} in this world") from None

    def _check_fields(self, t: Table, names: Any) -> None:
        for name in names:
            if name not in t.columns:
                raise ToolError("unknown_field", f"{t.name} has no field {name!r}")

    def get(self, entity: str, key: Any) -> dict[str, Any] | None:
        """The row with this key, or None."""
        t = self.table(entity)
        row = self.conn.execute(t.select_by_key, (key,)).fetchone()
        return t.to_row(row) if row is not None else None

    def require(self, entity: str, key: Any) -> dict[str, Any]:
        """The row with this key, or a `not_found` error."""
        row = self.get(entity, key)
        if row is None:
            raise ToolError("not_found", f"no {entity} with {self.table(entity).key} {key!r}")
        return row

    def _where(self, t: Table, where: dict[str, Any]) -> tuple[str, list[Any]]:
        self._check_fields(t, where)
        if not where:
            return "", []
        clauses, params = [], []
        for k, v in where.items():
            if v is None:
                clauses.append(f"{quote(k)} IS NULL")
            else:
                clauses.append(f"{quote(k)} = ?")
                params.append(v)
        return " WHERE " + " AND ".join(clauses), params

    def find(self, entity: str, **where: Any) -> list[dict[str, Any]]:
        """Rows whose fields equal the given values, in key order."""
        t = self.table(entity)
        sql, params = self._where(t, where)
        rows = self.conn.execute(f"{t.select}{sql} ORDER BY {quote(t.key)}", params).fetchall()
        return [t.to_row(r) for r in rows]

    def count(self, entity: str, **where: Any) -> int:
        t = self.table(entity)
        sql, params = self._where(t, where)
        return int(self.conn.execute(f"SELECT COUNT(*) FROM {quote(t.name)}{sql}", params).fetchone()[0])

    def next_key(self, entity: str) -> str:
        """A fresh key from the entity's `id_format` and its row sequence."""
        t = self.table(entity)
        (n,) = self.conn.execute("SELECT next FROM _ts_sequence WHERE entity = ?", (entity,)).fetchone()
        while True:
            key = t.entity.id_format.format(n)
            n += 1
            if (
                self.conn.execute(
                    f"SELECT 1 FROM {quote(t.name)} WHERE {quote(t.key)} = ?", (key,)
                ).fetchone()
                is None
            ):
                break
        self.conn.execute("UPDATE _ts_sequence SET next = ? WHERE entity = ?", (n, entity))
        return key

    def insert(self, entity: str, **values: Any) -> str:
        """Insert a row (missing fields take their default, else NULL) and return its key."""
        t = self.table(entity)
        self._check_fields(t, values)
        if values.get(t.key) is None:
            values[t.key] = self.next_key(entity)
        for f in t.entity.fields:
            if f.name not in values and f.default is not None:
                values[f.name] = f.default
        self._check_refs(t, values)
        cols = list(values)
        self._execute(
            f"INSERT INTO {quote(t.name)} ({', '.join(quote(c) for c in cols)}) "
            f"VALUES ({', '.join('?' for _ in cols)})",
            [values[c] for c in cols],
            entity,
        )
        return str(values[t.key])

    def update(self, entity: str, key: Any, **values: Any) -> None:
        """Set fields of an existing row (`not_found` if it does not exist; the key cannot change)."""
        t = self.table(entity)
        self._check_fields(t, values)
        if t.key in values and values[t.key] != key:
            raise ToolError("invalid_arguments", f"the key {t.key!r} of a {entity} cannot change")
        values.pop(t.key, None)
        self.require(entity, key)
        if not values:
            return
        self._check_refs(t, values)
        sets = ", ".join(f"{quote(c)} = ?" for c in values)
        self._execute(
            f"UPDATE {quote(t.name)} SET {sets} WHERE {quote(t.key)} = ?", [*values.values(), key], entity
        )

    def delete(self, entity: str, key: Any) -> None:
        """Delete a row; `conflict` if other rows still reference it."""
        t = self.table(entity)
        self.require(entity, key)
        for other, col in t.referenced_by:
            n = self.count(other, **{col: key})
            if n:
                noun = self.tables[other].entity.plural_name if n > 1 else other
                raise ToolError(
                    "conflict",
                    f"{entity} {key} is still referenced by {n} {noun} (field {col}); "
                    "delete or reassign them first",
                )
        self._execute(f"DELETE FROM {quote(t.name)} WHERE {quote(t.key)} = ?", [key], entity)

    def _check_refs(self, t: Table, values: dict[str, Any]) -> None:
        for col, target in t.refs.items():
            v = values.get(col)
            if v is not None and self.get(target, v) is None:
                raise ToolError("not_found", f"{t.name}.{col}: no {target} with key {v!r}")

    def _execute(self, sql: str, params: list[Any], entity: str) -> None:
        bad = next((v for v in params if isinstance(v, float) and not math.isfinite(v)), None)
        if bad is not None:
            raise ToolError(
                "internal_error",
                f"{entity}: a field would be set to {bad!r}; a world stores finite numbers only",
            )
        try:
            self.conn.execute(sql, params)
        except sqlite3.IntegrityError as exc:
            text = str(exc)
            if text.startswith("UNIQUE constraint failed: "):
                cols = [c.split(".", 1)[-1] for c in text.split(": ", 1)[1].split(", ")]
                raise ToolError(
                    "conflict", f"another {entity} already has this {' and '.join(cols)}"
                ) from None
            if text.startswith("CHECK constraint failed: "):
                raise ToolError("invalid_arguments", f"{entity}: a value is not allowed ({text})") from None
            raise ToolError("constraint_violation", f"{entity}: {text}") from None

    def fail(self, code: str, message: str) -> NoReturn:
        """Stop the call with a domain error; its transaction rolls back."""
        raise ToolError(code, message)

    def call(self, tool: str, args: dict[str, Any] | None = None) -> Any:
        """Call another tool of the catalog inside this call's transaction; its error propagates."""
        if self.world._depth >= MAX_CALL_DEPTH:
            raise ToolError("limit_exceeded", f"tools call each other more than {MAX_CALL_DEPTH} deep")
        return self.world.call_inside(tool, args or {})

    def call_read(self, tool: str, args: dict[str, Any] | None = None) -> Any:
        """`call` for an action labelled read: only tools labelled read."""
        if self.world.tool(tool).effect != "read":
            raise ToolError("read_only", f"an action labelled read cannot call {tool!r}, which writes")
        return self.call(tool, args)

    @staticmethod
    def add_days(day: str, n: int) -> str:
        """ISO date `n` days after `day` (a date or the date part of a datetime)."""
        return (date.fromisoformat(str(day)[:10]) + timedelta(days=int(n))).isoformat()

    @staticmethod
    def days_between(a: str, b: str) -> int:
        """Days from `a` to `b` (ISO dates or datetimes; negative when `b` is earlier)."""
        return (date.fromisoformat(str(b)[:10]) - date.fromisoformat(str(a)[:10])).days

    def helpers(self, read_only: bool = False) -> dict[str, Callable[..., Any]]:
        """The functions interpreted action code calls by name; an action labelled read gets no writes."""
        cached = self._helpers.get(read_only)
        if cached is not None:
            return cached
        out: dict[str, Callable[..., Any]] = {
            "get": self.get,
            "require": self.require,
            "find": self.find,
            "count": self.count,
            "insert": self.insert,
            "update": self.update,
            "delete": self.delete,
            "fail": self.fail,
            "call": self.call,
            "add_days": self.add_days,
            "days_between": self.days_between,
        }
        if read_only:
            for name in ("insert", "update", "delete"):
                out[name] = _refuse_write(name)
            out["call"] = self.call_read
        self._helpers[read_only] = out
        return out


def _refuse_write(name: str) -> Callable[..., NoReturn]:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise ToolError("read_only", f"an action labelled read cannot {name} rows")

    return refuse
