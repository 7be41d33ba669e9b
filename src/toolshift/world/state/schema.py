"""The compiled SQLite layout of a domain: one table per entity, typed columns, keys, foreign keys, indexes.

Internal tables start with `_ts_` and are never part of a diff: `_ts_meta` (format, domain,
seed, the spec as JSON) and `_ts_sequence` (the next row number per entity, for created keys).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from toolshift.world.language.spec import DomainSpec, EntitySpec, FieldSpec

WORLD_FORMAT = "toolshift.world/1"

SQL_TYPES = {
    "string": "TEXT",
    "text": "TEXT",
    "email": "TEXT",
    "phone": "TEXT",
    "enum": "TEXT",
    "date": "TEXT",
    "datetime": "TEXT",
    "ref": "TEXT",
    "int": "INTEGER",
    "bool": "INTEGER",
    "float": "REAL",
    "money": "REAL",
}

DATETIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$"
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass
class Table:
    """One entity's table: its columns in spec order and how to turn a SQLite row back into JSON values."""

    entity: EntitySpec
    columns: list[str]
    bools: frozenset[str]
    refs: dict[str, str]
    """Ref column → referenced entity."""
    referenced_by: list[tuple[str, str]] = field(default_factory=list)
    """(entity, column) pairs whose ref points at this table."""

    @property
    def name(self) -> str:
        return self.entity.name

    @property
    def key(self) -> str:
        return self.entity.key

    @cached_property
    def key_index(self) -> int:
        return self.columns.index(self.entity.key)

    @cached_property
    def select(self) -> str:
        """`SELECT <every column> FROM <table>` (built once: the columns do not change after compiling)."""
        return f"SELECT {', '.join(quote(c) for c in self.columns)} FROM {quote(self.name)}"

    @cached_property
    def select_by_key(self) -> str:
        """`select` of the one row with a given key (`?`)."""
        return f"{self.select} WHERE {quote(self.key)} = ?"

    def to_row(self, values: tuple[Any, ...]) -> dict[str, Any]:
        if not self.bools:
            return dict(zip(self.columns, values, strict=True))
        return {
            c: (bool(v) if c in self.bools and v is not None else v)
            for c, v in zip(self.columns, values, strict=True)
        }

    def to_value(self, column: str, value: Any) -> Any:
        return bool(value) if column in self.bools and value is not None else value


def column_ddl(f: FieldSpec, entity: EntitySpec) -> str:
    parts = [quote(f.name), SQL_TYPES[f.type]]
    if f.name == entity.key:
        parts.append("PRIMARY KEY NOT NULL")
    elif f.unique:
        parts.append("UNIQUE")
    if f.type == "ref":
        parts.append(f"REFERENCES {quote(f.ref or '')}")
    if f.type == "enum" and f.values:
        parts.append(f"CHECK ({quote(f.name)} IN ({', '.join(sql_literal(v) for v in f.values)}))")
    if f.type == "bool":
        parts.append(f"CHECK ({quote(f.name)} IN (0, 1))")
    return " ".join(parts)


def build_tables(spec: DomainSpec) -> dict[str, Table]:
    tables = {
        e.name: Table(
            entity=e,
            columns=[f.name for f in e.fields],
            bools=frozenset(f.name for f in e.fields if f.type == "bool"),
            refs={f.name: f.ref for f in e.fields if f.type == "ref" and f.ref},
        )
        for e in spec.entities
    }
    for t in tables.values():
        for col, target in t.refs.items():
            tables[target].referenced_by.append((t.name, col))
    return tables


def ddl(spec: DomainSpec) -> list[str]:
    """CREATE statements for the entity tables, their ref indexes and the internal tables."""
    out = [
        "CREATE TABLE _ts_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
        "CREATE TABLE _ts_sequence (entity TEXT PRIMARY KEY NOT NULL, next INTEGER NOT NULL)",
    ]
    for e in spec.entities:
        cols = ",\n  ".join(column_ddl(f, e) for f in e.fields)
        out.append(f"CREATE TABLE {quote(e.name)} (\n  {cols}\n)")
        for f in e.fields:
            if f.type == "ref" or (f.name in e.lookup and f.name != e.key and not f.unique):
                out.append(
                    f"CREATE INDEX {quote(f'ix_{e.name}_{f.name}')} ON {quote(e.name)} ({quote(f.name)})"
                )
    return out
