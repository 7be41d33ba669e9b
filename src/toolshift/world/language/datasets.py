"""Data sources: a spec's `data: NAME` takes its rows from Python an installed package registers, never from code it carries.

Generated worlds are seeded by the spec's `gen` rules. A world imported from another benchmark
(τ²-bench's airline and retail) instead starts from that benchmark's own database files.
The spec only names the source; the package that registers the name reads the files (as data:
JSON, TOML), checks their digests and returns rows for the spec's entities:

- by entry point: `[project.entry-points."toolshift.data"]` `NAME = "package.module:function"`;
- in process: `register_data_source(NAME)(function)`.

A source is `function(spec) -> DataRows`. Where its files are missing or altered it raises
`BadInputError` naming the file, or `DataUnavailable` (a `BadInputError` too) with the reason, which
`toolshift world domains` shows for a world it cannot build here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from toolshift.errors import BadInputError

if TYPE_CHECKING:
    from toolshift.world.language.spec import DomainSpec

ENTRY_POINT_GROUP = "toolshift.data"


class DataUnavailable(BadInputError):
    """A data source's files are not on this machine (or not the ones it was written for)."""


@dataclass
class DataRows:
    """Rows by entity name (each a dict of column values), and the files they were read from."""

    rows: dict[str, list[dict[str, Any]]]
    sources: dict[str, str] = field(default_factory=dict)
    """File (as the source names it) → SHA-256 of the bytes read."""
    policy: str | None = None
    """The agent's policy read with the data (it replaces the spec's `policy`), or None."""


DataSource = Callable[["DomainSpec"], DataRows]

_registered: dict[str, DataSource] = {}
_lock = threading.Lock()


def register_data_source(name: str, function: DataSource | None = None) -> Any:
    """Register `function` as the data source named `name` (usable as a decorator)."""
    from toolshift.world.language.actions import IMPL_NAME

    if not IMPL_NAME.match(name):
        raise ValueError(f"data source name {name!r} is not dotted snake_case")

    def add(fn: DataSource) -> DataSource:
        with _lock:
            _registered[name] = fn
        return fn

    return add(function) if function is not None else add


def registered_data_sources() -> list[str]:
    with _lock:
        names = set(_registered)
    return sorted(names | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def find_data_source(name: str) -> DataSource | None:
    with _lock:
        if name in _registered:
            return _registered[name]
    ep = next((e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == name), None)
    if ep is None:
        return None
    fn = ep.load()
    if not callable(fn):
        raise TypeError(f"entry point {ep.value} is not callable")
    with _lock:
        return _registered.setdefault(name, fn)


def check_data_source(spec: DomainSpec, source: str) -> None:
    """Refuse, at load, a spec naming a data source no installed package registers."""
    from toolshift.world.language.actions import IMPL_NAME

    name = spec.data or ""
    if not IMPL_NAME.match(name):
        raise BadInputError(
            f"{name!r} is not a data source name (dotted snake_case)", source=source, field="data"
        )
    try:
        found = find_data_source(name)
    except Exception as exc:
        raise BadInputError(
            f"the data source {name!r} failed to load: {type(exc).__name__}: {exc}",
            source=source,
            field="data",
        ) from None
    if found is None:
        known = registered_data_sources()
        have = f"registered: {', '.join(known)}" if known else "none are registered"
        raise BadInputError(
            f"no installed package registers the data source {name!r} ({have})", source=source, field="data"
        )


def load_data_rows(spec: DomainSpec, source: str) -> DataRows:
    """The rows of a spec's data source, checked to name only the spec's entities and columns."""
    fn = find_data_source(spec.data or "")
    if fn is None:
        raise BadInputError(f"no data source {spec.data!r}", source=source, field="data")
    loaded = fn(spec)
    entities = {e.name: {f.name for f in e.fields} for e in spec.entities}
    for entity, rows in loaded.rows.items():
        columns = entities.get(entity)
        if columns is None:
            raise BadInputError(
                f"the data source {spec.data!r} gave rows for {entity!r}, which is not an entity",
                source=source,
                field="data",
            )
        for row in rows:
            extra = set(row) - columns
            if extra:
                raise BadInputError(
                    f"the data source {spec.data!r} gave {entity} columns the spec lacks: {', '.join(sorted(extra))}",
                    source=source,
                    field="data",
                )
    return loaded
