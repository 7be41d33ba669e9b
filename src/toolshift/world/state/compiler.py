"""Compile a domain spec into a seeded SQLite template database and its generated tool surface.

The template is built once (DDL + `executemany` of the seed rows); every `World` starts as a
backup-API copy of it. Tool names: `{prefix}get_<entity>`, `{prefix}list_<plural>`,
`{prefix}search_<plural>`, `{prefix}create_<entity>`, `{prefix}update_<entity>`,
`{prefix}delete_<entity>`, `{prefix}list_<from>_<relation>`, and `{prefix}<action>`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import Any

from toolshift.errors import BadInputError
from toolshift.world.language.actions import compile_action
from toolshift.world.language.bounds import Budget, jsonable
from toolshift.world.language.datasets import DataRows, load_data_rows
from toolshift.world.language.spec import (
    TOOL_NAME,
    ActionSpec,
    DomainSpec,
    EntitySpec,
    FieldSpec,
    ParamSpec,
    RelationSpec,
)
from toolshift.world.state.runtime import Runtime
from toolshift.world.state.schema import (
    DATE_PATTERN,
    DATETIME_PATTERN,
    WORLD_FORMAT,
    Table,
    build_tables,
    ddl,
    quote,
)
from toolshift.world.state.seeding import seed_rows
from toolshift.world.state.tools import Tool
from toolshift.world.toolerror import ToolError

DEFAULT_PAGE = 20
MAX_PAGE = 100


@dataclass
class CompiledDomain:
    """A spec, its table layout, its seeded template database and its generated tools."""

    spec: DomainSpec
    source: str
    tables: dict[str, Table]
    template: sqlite3.Connection
    tools: list[Tool] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while the template is copied, so worlds can be made from several threads."""

    @property
    def name(self) -> str:
        return self.spec.name

    def row_counts(self) -> dict[str, int]:
        return {
            t: int(self.template.execute(f"SELECT COUNT(*) FROM {quote(t)}").fetchone()[0])
            for t in self.tables
        }


# --- JSON Schemas -------------------------------------------------------------------------------


def value_schema(
    spec_type: str, *, values: list[str] | None = None, ref: str | None = None
) -> dict[str, Any]:
    """The JSON Schema of one value of a spec field type."""
    if spec_type == "int":
        return {"type": "integer"}
    if spec_type in ("float", "money"):
        return {"type": "number"}
    if spec_type == "bool":
        return {"type": "boolean"}
    if spec_type == "enum":
        return {"type": "string", "enum": list(values or [])}
    if spec_type == "date":
        return {"type": "string", "format": "date", "pattern": DATE_PATTERN}
    if spec_type == "datetime":
        return {"type": "string", "pattern": DATETIME_PATTERN, "description": "YYYY-MM-DDTHH:MM"}
    if spec_type == "email":
        return {"type": "string", "format": "email"}
    return {"type": "string"}


def field_schema(f: FieldSpec | ParamSpec, description: str | None = None) -> dict[str, Any]:
    if isinstance(f, ParamSpec) and f.type == "json":
        schema = copy.deepcopy(f.schema_ or {})
    else:
        schema = value_schema(f.type, values=f.values, ref=f.ref)
    text = description if description is not None else f.description
    if f.type == "ref" and f.ref:
        text = (text + " " if text else "") + f"(a {f.ref} key)"
    if f.type == "datetime":
        text = (text + " " if text else "") + "(YYYY-MM-DDTHH:MM)"
    if text:
        schema["description"] = text
    if f.default is not None:
        schema["default"] = f.default
    return schema


def object_schema(properties: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


PAGING = {
    "limit": {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_PAGE,
        "default": DEFAULT_PAGE,
        "description": f"Rows per page (1-{MAX_PAGE}).",
    },
    "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Rows to skip."},
}


def _key_schema(e: EntitySpec) -> dict[str, Any]:
    example = e.id_format.format(1)
    return {"type": "string", "description": f"The {e.name}'s key, e.g. {example}."}


def _searchable(f: FieldSpec, e: EntitySpec) -> bool:
    if f.name == e.key:
        return bool(f.searchable)
    if f.searchable is not None:
        return f.searchable
    return f.type in ("string", "email", "enum", "ref", "date")


def _describe(e: EntitySpec) -> str:
    return f" {e.description.strip()}" if e.description.strip() else ""


# --- generated handlers -------------------------------------------------------------------------


def _page(args: dict[str, Any]) -> tuple[int, int]:
    return int(args.get("limit", DEFAULT_PAGE)), int(args.get("offset", 0))


def _paged(rt: Runtime, t: Table, where_sql: str, params: list[Any], args: dict[str, Any]) -> dict[str, Any]:
    limit, offset = _page(args)
    total = int(rt.conn.execute(f"SELECT COUNT(*) FROM {quote(t.name)}{where_sql}", params).fetchone()[0])
    rows = rt.conn.execute(
        f"{t.select}{where_sql} ORDER BY {quote(t.key)} LIMIT ? OFFSET ?", [*params, limit, offset]
    ).fetchall()
    items = [t.to_row(r) for r in rows]
    nxt = offset + len(items)
    return {"items": items, "total": total, "offset": offset, "next_offset": nxt if nxt < total else None}


def _get_tool(name: str, t: Table) -> Tool:
    e = t.entity

    def handler(rt: Runtime, args: dict[str, Any]) -> Any:
        return rt.require(e.name, args[e.key])

    return Tool(
        name=name,
        description=f"Get one {e.name} by its {e.key}.{_describe(e)}",
        input_schema=object_schema({e.key: _key_schema(e)}, [e.key]),
        effect="read",
        handler=handler,
        meta={"kind": "get", "entity": e.name},
    )


def _list_tool(name: str, t: Table) -> Tool:
    e = t.entity
    filters = {c: t.entity.field(c) for c in t.refs}
    props: dict[str, dict[str, Any]] = {
        c: field_schema(f, f"Only {e.plural_name} whose {c} is this.") for c, f in filters.items() if f
    }
    props.update(PAGING)

    def handler(rt: Runtime, args: dict[str, Any]) -> Any:
        where = {c: args[c] for c in filters if c in args}
        sql, params = rt._where(t, where)
        return _paged(rt, t, sql, params, args)

    by = f", optionally filtered by {', '.join(filters)}" if filters else ""
    return Tool(
        name=name,
        description=f"List {e.plural_name} in key order, a page at a time{by}.{_describe(e)}",
        input_schema=object_schema(props, []),
        effect="read",
        handler=handler,
        meta={"kind": "list", "entity": e.name},
    )


_TEXTUAL = ("string", "text", "email", "phone")


def _search_tool(name: str, t: Table) -> Tool:
    e = t.entity
    fields = [f for f in e.fields if _searchable(f, e)]
    props: dict[str, dict[str, Any]] = {}
    for f in fields:
        how = "contains this text (case-insensitive)" if f.type in _TEXTUAL else "equals this"
        if f.type == "datetime":
            how = "starts with this (e.g. a date)"
            props[f.name] = {"type": "string", "description": f"{f.description} ({f.name} {how})".strip()}
            continue
        desc = f"{f.description.rstrip('.')}. Matches rows whose {f.name} {how}.".lstrip(". ")
        props[f.name] = field_schema(f, desc)
    props.update(PAGING)
    names = [f.name for f in fields]

    def handler(rt: Runtime, args: dict[str, Any]) -> Any:
        given = [n for n in names if args.get(n) is not None]
        if names and not given:
            raise ToolError("invalid_arguments", f"{name} needs at least one filter: {', '.join(names)}")
        clauses, params = [], []
        for f in fields:
            if f.name not in given:
                continue
            v = args[f.name]
            if f.type in _TEXTUAL:
                escaped = str(v).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                clauses.append(f"{quote(f.name)} LIKE ? ESCAPE '\\'")
                params.append(f"%{escaped}%")
            elif f.type == "datetime":
                clauses.append(f"substr({quote(f.name)}, 1, ?) = ?")
                params += [len(str(v)), str(v)]
            else:
                clauses.append(f"{quote(f.name)} = ?")
                params.append(v)
        sql = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        return _paged(rt, t, sql, params, args)

    need = f" Give at least one of: {', '.join(names)}." if names else ""
    return Tool(
        name=name,
        description=f"Search {e.plural_name} by field values; text fields match substrings.{need}{_describe(e)}",
        input_schema=object_schema(props, []),
        effect="read",
        handler=handler,
        meta={"kind": "search", "entity": e.name},
    )


def _create_tool(name: str, t: Table) -> Tool:
    e = t.entity
    fields = [f for f in e.fields if f.name != e.key]
    props = {f.name: field_schema(f) for f in fields}
    required = [f.name for f in fields if f.required and f.default is None]

    def handler(rt: Runtime, args: dict[str, Any]) -> Any:
        key = rt.insert(e.name, **{f.name: args[f.name] for f in fields if f.name in args})
        return rt.get(e.name, key)

    return Tool(
        name=name,
        description=f"Create a {e.name}; its {e.key} is assigned and the new row returned.{_describe(e)}",
        input_schema=object_schema(props, required),
        effect="write",
        handler=handler,
        meta={"kind": "create", "entity": e.name},
    )


def _update_tool(name: str, t: Table) -> Tool:
    e = t.entity
    fields = [f for f in e.fields if f.name != e.key]
    props = {e.key: _key_schema(e)}
    props.update({f.name: field_schema(f) for f in fields})
    schema = object_schema(props, [e.key])
    schema["minProperties"] = 2

    def handler(rt: Runtime, args: dict[str, Any]) -> Any:
        values = {f.name: args[f.name] for f in fields if f.name in args}
        rt.update(e.name, args[e.key], **values)
        return rt.get(e.name, args[e.key])

    return Tool(
        name=name,
        description=f"Change fields of an existing {e.name}; give its {e.key} and the fields to set; "
        f"returns the updated row.{_describe(e)}",
        input_schema=schema,
        effect="write",
        handler=handler,
        meta={"kind": "update", "entity": e.name},
    )


def _delete_tool(name: str, t: Table) -> Tool:
    e = t.entity

    def handler(rt: Runtime, args: dict[str, Any]) -> Any:
        rt.delete(e.name, args[e.key])
        return {"deleted": args[e.key]}

    return Tool(
        name=name,
        description=f"Delete a {e.name} by its {e.key}; refused while other rows still refer to it.",
        input_schema=object_schema({e.key: _key_schema(e)}, [e.key]),
        effect="write",
        handler=handler,
        destructive=True,
        meta={"kind": "delete", "entity": e.name},
    )


def _relation_tool(name: str, rel: RelationSpec, src: Table, dst: Table) -> Tool:
    e = src.entity

    def handler(rt: Runtime, args: dict[str, Any]) -> Any:
        rt.require(e.name, args[e.key])
        return _paged(rt, dst, f" WHERE {quote(rel.via)} = ?", [args[e.key]], args)

    desc = rel.description.strip() or f"The {dst.entity.plural_name} of a {e.name}."
    return Tool(
        name=name,
        description=f"{desc} Lists the {dst.entity.plural_name} whose {rel.via} is the given {e.key}.",
        input_schema=object_schema({e.key: _key_schema(e), **PAGING}, [e.key]),
        effect="read",
        handler=handler,
        meta={"kind": "relation", "entity": e.name, "relation": rel.name, "to": dst.name},
    )


def _action_tool(name: str, act: ActionSpec, index: int, spec: DomainSpec, source: str) -> Tool:
    props = {p.name: field_schema(p) for p in act.params}
    required = [p.name for p in act.params if p.required and p.default is None]
    compiled = compile_action(act, index, source)
    checks, body, impl = compiled.checks, compiled.body, compiled.impl
    ref_params = [(p.name, p.ref) for p in act.params if p.type == "ref" and p.ref]
    defaults = {p.name: p.default for p in act.params if p.default is not None}
    read_only = act.effect == "read"

    def run(rt: Runtime, args: dict[str, Any], budget: Budget) -> Any:
        for pname, target in ref_params:
            if args.get(pname) is not None and rt.get(target, args[pname]) is None:
                raise ToolError("not_found", f"{pname}: no {target} with key {args[pname]!r}")
        names = {**args, "args": args, "today": rt.today, "now": rt.now}
        helpers = rt.helpers(read_only)
        for check, pre in checks:
            if not check.run(names, helpers, budget):
                raise ToolError(pre.code, _format_message(pre.message, names))
        if impl is not None:
            return jsonable(impl(rt, args), budget)
        assert body is not None
        return jsonable(body.run(dict(names), helpers, budget), budget)

    def handler(rt: Runtime, args: dict[str, Any]) -> Any:
        args = {**defaults, **args}
        outer = rt.budget is None
        budget = rt.budget = Budget() if outer else rt.budget
        assert budget is not None
        try:
            if read_only and not outer:
                return _read_only(rt, lambda: run(rt, args, budget))
            return run(rt, args, budget)
        finally:
            if outer:
                rt.budget = None

    return Tool(
        name=name,
        description=act.description.strip(),
        input_schema=object_schema(props, required),
        effect=act.effect,
        handler=handler,
        destructive=act.destructive,
        meta={"kind": "action", "action": act.name, "preconditions": [p.code for p in act.preconditions]},
    )


def _read_only(rt: Runtime, run: Any) -> Any:
    """Run a read action called from inside another call under the world's read-only authorizer too."""
    with rt.world.reading():
        return run()


def _format_message(message: str, names: dict[str, Any]) -> str:
    """A precondition's message with its `{param}` / `{today}` fields (checked at load) filled in."""
    try:
        return message.format_map(names)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return message


# --- compile ------------------------------------------------------------------------------------


def generate_tools(spec: DomainSpec, tables: dict[str, Table], source: str) -> list[Tool]:
    """The generated tool surface, in spec order: per-entity tools, relation traversals, custom actions."""
    p = spec.tool_prefix
    tools: list[Tool] = []
    makers = {
        "get": lambda e, t: _get_tool(f"{p}get_{e.name}", t),
        "list": lambda e, t: _list_tool(f"{p}list_{e.plural_name}", t),
        "search": lambda e, t: _search_tool(f"{p}search_{e.plural_name}", t),
        "create": lambda e, t: _create_tool(f"{p}create_{e.name}", t),
        "update": lambda e, t: _update_tool(f"{p}update_{e.name}", t),
        "delete": lambda e, t: _delete_tool(f"{p}delete_{e.name}", t),
    }
    fields: list[str] = []
    for i, e in enumerate(spec.entities):
        for op in ("get", "list", "search", "create", "update", "delete"):
            if op in e.operations:
                tools.append(makers[op](e, tables[e.name]))
                plural = op in ("list", "search") and e.plural
                fields.append(f"entities[{i}].{'plural' if plural else 'name'}")
    for i, rel in enumerate(spec.relations):
        tools.append(
            _relation_tool(f"{p}list_{rel.from_}_{rel.name}", rel, tables[rel.from_], tables[rel.to])
        )
        fields.append(f"relations[{i}].name")
    for i, act in enumerate(spec.actions):
        tools.append(_action_tool(f"{p}{act.name}", act, i, spec, source))
        fields.append(f"actions[{i}].name")
    for tool, where in zip(tools, fields, strict=True):
        if not TOOL_NAME.match(tool.name):
            raise BadInputError(
                f"the tool name {tool.name!r} ({len(tool.name)} characters) is not an MCP tool name "
                "(1-128 of A-Z a-z 0-9 _ . -); shorten it or the tool_prefix",
                source=source,
                field=where,
            )
    names = [t.name for t in tools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise BadInputError(
            f"generated tool names collide: {', '.join(dupes)}", source=source, field="actions"
        )
    return tools


def spec_digest(spec: DomainSpec) -> str:
    return hashlib.sha256(spec.model_dump_json(by_alias=True).encode()).hexdigest()[:16]


def build_template(
    spec: DomainSpec, tables: dict[str, Table], source: str, *, data: DataRows | None = None
) -> sqlite3.Connection:
    """A fresh in-memory database with the schema and the seed rows, or the data source's rows.

    A data-sourced world without `data` gets empty tables (a saved world brings its own state).
    """
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    for stmt in ddl(spec):
        conn.execute(stmt)
    if spec.data is None:
        rows = seed_rows(spec, source)
    else:
        rows = data.rows if data is not None else {}
    conn.execute("BEGIN")
    meta = {
        "format": WORLD_FORMAT,
        "domain": spec.name,
        "seed": str(spec.seed),
        "today": spec.today,
        "spec_digest": spec_digest(spec),
        "spec": spec.model_dump_json(by_alias=True),
    }
    if spec.data is not None:
        meta["data"] = spec.data
        meta["data_sources"] = json.dumps(data.sources if data is not None else {}, sort_keys=True)
    conn.executemany("INSERT INTO _ts_meta VALUES (?, ?)", list(meta.items()))
    conn.executemany(
        "INSERT INTO _ts_sequence VALUES (?, ?)",
        [(e.name, max(e.rows, len(rows.get(e.name, []))) + 1) for e in spec.entities],
    )
    what = "seed rows" if spec.data is None else f"rows of the data source {spec.data!r}"
    for i, e in enumerate(spec.entities):
        t = tables[e.name]
        sql = f"INSERT INTO {quote(e.name)} VALUES ({', '.join('?' for _ in t.columns)})"
        try:
            conn.executemany(sql, [tuple(r.get(c) for c in t.columns) for r in rows.get(e.name, [])])
        except sqlite3.IntegrityError as exc:
            conn.execute("ROLLBACK")
            raise BadInputError(
                f"{what} break a constraint: {exc}", source=source, field=f"entities[{i}]"
            ) from None
    conn.execute("COMMIT")
    conn.execute("PRAGMA foreign_keys = ON")
    bad = conn.execute("PRAGMA foreign_key_check").fetchone()
    if bad is not None:
        raise BadInputError(f"{what} of {bad[0]} reference missing {bad[2]} rows", source=source)
    return conn


def compile_domain(
    spec: DomainSpec, source: str = "<spec>", *, seed: int | None = None, with_data: bool = True
) -> CompiledDomain:
    """Compile a validated spec (optionally re-seeded) into a template database and its tools.

    A world whose rows come from a data source has fixed state: a seed cannot change it.
    """
    if seed is not None and seed != spec.seed:
        if spec.data is not None:
            raise BadInputError(
                f"domain {spec.name!r} takes its state from the data source {spec.data!r}; a seed cannot change it",
                source=source,
                field="--seed",
            )
        spec = spec.model_copy(update={"seed": seed})
    data = None
    if spec.data is not None and with_data:
        data = load_data_rows(spec, source)
        if data.policy is not None:
            spec = spec.model_copy(update={"policy": data.policy})
    tables = build_tables(spec)
    tools = generate_tools(spec, tables, source)
    template = build_template(spec, tables, source, data=data)
    return CompiledDomain(spec=spec, source=source, tables=tables, template=template, tools=tools)
