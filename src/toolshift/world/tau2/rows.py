"""Row helpers the τ² tool implementations share: reading rows as dicts, and lists kept as `<parent>/<position>` rows.

A τ² record's nested list (a reservation's flights, an order's items) is a child table whose key is
`<parent key>/<position, 3 digits>` with a `position` column, so a list reads back in order and a
changed list shows as row changes by position.
"""

from __future__ import annotations

import json
from typing import Any

from toolshift.world.toolerror import ToolError


def child_key(parent: str, position: int) -> str:
    return f"{parent}/{position:03d}"


def select(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    cur = conn.execute(sql, params)
    names = [c[0] for c in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def insert(conn: Any, table: str, row: dict[str, Any]) -> None:
    cols = ", ".join(f'"{c}"' for c in row)
    conn.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({", ".join("?" for _ in row)})', list(row.values()))


def append_child(conn: Any, table: str, parent_col: str, parent: str, values: dict[str, Any]) -> None:
    """Append one element to a parent's list (the next position)."""
    (n,) = conn.execute(
        f'SELECT COALESCE(MAX(position) + 1, 0) FROM "{table}" WHERE "{parent_col}" = ?', (parent,)
    ).fetchone()
    insert(conn, table, {"id": child_key(parent, n), parent_col: parent, "position": n, **values})


def replace_children(
    conn: Any, table: str, parent_col: str, parent: str, items: list[dict[str, Any]]
) -> None:
    """Make a parent's list exactly `items`: rows by position are updated, added or removed.

    Plain UPDATE / INSERT, not an upsert: an upsert's conflict clause would override the world's
    change-tracking triggers' own `OR IGNORE`.
    """
    conn.execute(f'DELETE FROM "{table}" WHERE "{parent_col}" = ? AND position >= ?', (parent, len(items)))
    for pos, item in enumerate(items):
        key = child_key(parent, pos)
        sets = ", ".join(f'"{c}" = ?' for c in item)
        done = conn.execute(f'UPDATE "{table}" SET {sets} WHERE id = ?', [*item.values(), key])
        if done.rowcount == 0:
            insert(conn, table, {"id": key, parent_col: parent, "position": pos, **item})


def to_json_text(value: Any) -> str | None:
    """A nested leaf value (an options dict, a list of ids) as compact JSON text, keeping its order; None stays NULL."""
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def from_json_text(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def refused(message: str) -> ToolError:
    """τ²-bench's error as a domain error: `not_found` when its message says so, else `refused`; the message is τ²'s."""
    return ToolError("not_found" if message.endswith(("not found", "not found.")) else "refused", message)
