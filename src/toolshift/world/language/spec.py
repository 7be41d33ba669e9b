"""The YAML domain spec: entities, relations, seed-data rules and custom actions, validated on load.

A spec is the single source of a world. `toolshift.world.state.compiler` turns it into a SQLite database
and a generated tool surface (get / list / search / create / update / delete per entity, one
traversal per relation, plus the custom actions). Format `toolshift.domain/1`; see docs/formats.md.

Errors name the file and the key path (`entities[2].fields[1].type`) and exit the CLI with code 2.
"""

from __future__ import annotations

import re
import string
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from toolshift.errors import BadInputError
from toolshift.world.language.yamlfile import load_yaml

SPEC_FORMAT = "toolshift.domain/1"

FieldType = Literal[
    "string", "text", "int", "float", "bool", "date", "datetime", "email", "phone", "enum", "money", "ref"
]
FIELD_TYPES: tuple[str, ...] = FieldType.__args__  # type: ignore[attr-defined]
ParamType = Literal[
    "string",
    "text",
    "int",
    "float",
    "bool",
    "date",
    "datetime",
    "email",
    "phone",
    "enum",
    "money",
    "ref",
    "json",
]
"""A parameter's type: a field type, or `json` (a list or object described by the parameter's `schema`)."""
MAX_PARAM_SCHEMA_CHARS = 20_000
"""Characters of one parameter's JSON Schema (as compact JSON)."""
MAX_PARAM_SCHEMA_DEPTH = 16
"""Nesting of one parameter's JSON Schema."""

Operation = Literal["get", "list", "search", "create", "update", "delete"]
ALL_OPERATIONS: tuple[Operation, ...] = ("get", "list", "search", "create", "update", "delete")

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
"""What MCP allows as a tool name; every generated name must match."""
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]{0,64}$")
MAX_ROWS = 100_000
"""Seed rows of one entity."""
MAX_TOTAL_ROWS = 500_000
"""Seed rows of all entities together."""
MAX_KEY_CHARS = 64
"""Characters of a key made from `id_format` (and of the format itself)."""
_FORMAT_SPEC = re.compile(r"(?:[^{}]?[<>=^])?[-+ ]?#?0?(\d{0,2})[,_]?(?:\.\d{1,2})?[bdnoxXs]?\Z")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Generator(BaseModel):
    """How seed data for a field is made. `kind` picks the rule; the other keys are its options.

    Kinds (the compiler's `toolshift.world.state.seeding` implements them):
    `person_name`, `first_name`, `last_name`, `company`, `email` (`from`: a name field),
    `phone`, `word` / `choice` (`values`, optional `weights`), `range` (`min`, `max`, ints or
    floats), `money` (`min`, `max`), `date` / `datetime` (`start`, `end`, ISO), `bool` (`p`),
    `pattern` (`format` with `{n}` the row number, e.g. `SKU-{n:05d}`), `sentence` (`words`:
    a list to draw from, `min`, `max`), `ref` (a random existing key of the referenced entity),
    `const` (`value`), `null_or` (`p`: chance of NULL, `of`: another generator).
    Also: `date_offset` (`from`: a date field of the row, `min`, `max` days after it, `until`: a latest date), and on any
    kind `when: {field: value or [values]}` (generate only when the row's fields match, else
    the `else` value, default NULL).
    """

    model_config = ConfigDict(extra="allow")

    kind: str


class FieldSpec(_Strict):
    name: str
    type: FieldType
    description: str = ""
    ref: str | None = None
    """For `type: ref`: the entity whose key this field holds."""
    values: list[str] | None = None
    """For `type: enum`: the allowed values."""
    required: bool = True
    """Must be given on create (the key and fields with defaults never are)."""
    unique: bool = False
    default: Any = None
    gen: Generator | None = None
    searchable: bool | None = None
    """Offered as a filter of the entity's search tool (default: strings, emails, enums, refs, dates)."""


class EntitySpec(_Strict):
    name: str
    """Singular snake_case; the table name and the noun in generated tool names."""
    plural: str | None = None
    description: str = ""
    key: str
    """The primary-key field: a string id made from `id_format`."""
    id_format: str
    """A Python format string applied to the row number (1-based), e.g. `PAT-{:05d}`."""
    rows: int = Field(ge=0, le=MAX_ROWS)
    """How many rows seeding makes."""
    lookup: list[str] = Field(default_factory=list)
    """Fields a user would know and quote (a name, an email, an order number): query-type starts."""
    label: str | None = None
    """The field that names a row to a person (defaults to the first lookup field)."""
    fields: list[FieldSpec]
    operations: list[Operation] = Field(default_factory=lambda: list(ALL_OPERATIONS))

    @property
    def plural_name(self) -> str:
        return self.plural or (self.name[:-1] + "ies" if self.name.endswith("y") else self.name + "s")

    def field(self, name: str) -> FieldSpec | None:
        return next((f for f in self.fields if f.name == name), None)


class RelationSpec(_Strict):
    """A one-to-many traversal: the rows of `to` whose `via` field holds a `from` key."""

    name: str
    """Noun of the traversal tool: `list_<from>_<name>`."""
    from_: str = Field(alias="from")
    to: str
    via: str
    description: str = ""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ParamSpec(_Strict):
    name: str
    type: ParamType
    description: str = ""
    required: bool = True
    ref: str | None = None
    values: list[str] | None = None
    default: Any = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    """For `type: json`: the JSON Schema of the value (self-contained: no `$ref`, `$id` or `$schema`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        for key in ("schema", "schema_"):
            if out.get(key) is None:
                out.pop(key, None)  # scalar parameters dump as before, so spec digests do not change
        return out


class Precondition(_Strict):
    """A policy the agent must respect: an expression of the action language over the arguments; false → error."""

    check: str
    code: str
    message: str


class ActionSpec(_Strict):
    """A custom tool: preconditions, then its effect as `code` in the action language or as a registered `impl`.

    `code` is a function body in the safe interpreter's subset of Python (`toolshift.world.language.interpreter`),
    run inside the call's transaction, with these names: `args` (validated arguments) and each
    parameter, `today` (the world's fixed date, ISO) and `now`, and the calls `get(entity, key)`,
    `require`, `find(entity, **where) -> list[dict]`, `count`, `insert(entity, **values) -> key`,
    `update(entity, key, **values)`, `delete(entity, key)`, `fail(code, message)` (a domain error;
    the transaction rolls back), `call(tool, args)`, `add_days`, `days_between`. It returns the
    tool's result. `impl` instead names a Python implementation an installed package registers
    (`toolshift.world.language.actions`); exactly one of the two is given.
    """

    name: str
    description: str
    effect: Literal["read", "write"]
    params: list[ParamSpec] = Field(default_factory=list)
    preconditions: list[Precondition] = Field(default_factory=list)
    code: str = ""
    impl: str | None = None
    destructive: bool = False

    @model_validator(mode="after")
    def _code_or_impl(self) -> ActionSpec:
        has_code = "code" in self.model_fields_set
        if self.impl is None and not has_code:
            raise ValueError(
                "an action needs `code` (the action language) or `impl` (a registered implementation)"
            )
        if self.impl is not None and has_code:
            raise ValueError("an action has either `code` or `impl`, not both")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        if out.get("impl") is None:
            out.pop("impl", None)  # code actions dump as before, so their spec digests do not change
        elif not out.get("code"):
            out.pop("code", None)
        return out


class DomainSpec(_Strict):
    format: Literal["toolshift.domain/1"] = SPEC_FORMAT
    name: str
    title: str
    description: str = ""
    policy: str = ""
    """Markdown policy the agent's system prompt carries."""
    tool_prefix: str = ""
    """Prepended to every generated tool name, to keep names unique across a catalog."""
    seed: int = 0
    today: str = "2026-06-01"

    data: str | None = None
    """The name of a registered data source (`toolshift.world.language.datasets`) whose rows replace seed generation."""

    entities: list[EntitySpec]
    relations: list[RelationSpec] = Field(default_factory=list)
    actions: list[ActionSpec] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        if out.get("data") is None:
            out.pop("data", None)  # generated worlds dump as before, so their spec digests do not change
        return out

    @field_validator("today")
    @classmethod
    def _iso_date(cls, value: str) -> str:
        try:
            ok = len(value) == 10 and date.fromisoformat(value).isoformat() == value
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{value!r} is not an ISO date (YYYY-MM-DD)")
        return value

    def entity(self, name: str) -> EntitySpec:
        for e in self.entities:
            if e.name == name:
                return e
        raise KeyError(name)


def _key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate_references(spec: DomainSpec, source: str) -> None:
    """Check what pydantic cannot: names, dangling refs and relations, lookup fields, enum values."""

    def bad(key: str, msg: str) -> BadInputError:
        return BadInputError(msg, source=source, field=key)

    if not _NAME.match(spec.name) or len(spec.name) > 64:
        raise bad("name", f"domain name {spec.name!r} is not snake_case (up to 64 characters)")
    entity_names = [e.name for e in spec.entities]
    if len(set(entity_names)) != len(entity_names):
        raise bad("entities", "entity names repeat")
    if not _PREFIX.match(spec.tool_prefix):
        raise bad(
            "tool_prefix",
            "a tool prefix is up to 64 of the characters MCP allows in tool names: A-Z a-z 0-9 _ . -",
        )
    total = sum(e.rows for e in spec.entities)
    if total > MAX_TOTAL_ROWS:
        raise bad(
            "entities", f"the entities ask for {total:,} seed rows in all (the limit is {MAX_TOTAL_ROWS:,})"
        )
    for i, ent in enumerate(spec.entities):
        where = f"entities[{i}]"
        if not _NAME.match(ent.name):
            raise bad(f"{where}.name", f"entity name {ent.name!r} is not snake_case")
        names = [f.name for f in ent.fields]
        if len(set(names)) != len(names):
            raise bad(f"{where}.fields", f"field names repeat in entity {ent.name!r}")
        if ent.key not in names:
            raise bad(f"{where}.key", f"key {ent.key!r} is not a field of {ent.name!r}")
        for name in ent.lookup + ([ent.label] if ent.label else []):
            if name not in names:
                raise bad(f"{where}.lookup", f"{name!r} is not a field of {ent.name!r}")
        if ent.plural is not None and not _NAME.match(ent.plural):
            raise bad(f"{where}.plural", f"plural {ent.plural!r} is not snake_case")
        why = row_format_problem(ent.id_format, "")
        if why is None and len(ent.id_format.format(max(ent.rows, 1) * 10)) > MAX_KEY_CHARS:
            why = f"its keys would be longer than {MAX_KEY_CHARS} characters"
        if why is not None:
            raise bad(f"{where}.id_format", f"bad id format {ent.id_format!r}: {why}")
        for j, f in enumerate(ent.fields):
            fw = f"{where}.fields[{j}]"
            if not _NAME.match(f.name):
                raise bad(f"{fw}.name", f"field name {f.name!r} is not snake_case")
            if f.type == "ref" and f.ref not in entity_names:
                raise bad(f"{fw}.ref", f"field {ent.name}.{f.name} refers to unknown entity {f.ref!r}")
            if f.type == "enum" and not f.values:
                raise bad(f"{fw}.values", f"enum field {ent.name}.{f.name} has no values")
            if f.default is not None:
                why = default_problem(f)
                if why is not None:
                    raise bad(f"{fw}.default", f"default of {ent.name}.{f.name}: {why}")
        if spec.data is not None and (ent.rows or any(f.gen is not None for f in ent.fields)):
            raise bad(
                f"{where}.rows",
                f"entity {ent.name!r} takes its rows from the data source {spec.data!r}: "
                "give rows: 0 and no gen rules",
            )
    for i, rel in enumerate(spec.relations):
        where = f"relations[{i}]"
        if not _NAME.match(rel.name):
            raise bad(f"{where}.name", f"relation name {rel.name!r} is not snake_case")
        if rel.from_ not in entity_names:
            raise bad(f"{where}.from", f"relation {rel.name!r} starts at unknown entity {rel.from_!r}")
        if rel.to not in entity_names:
            raise bad(f"{where}.to", f"relation {rel.name!r} ends at unknown entity {rel.to!r}")
        via = spec.entity(rel.to).field(rel.via)
        if via is None or via.type != "ref" or via.ref != rel.from_:
            raise bad(f"{where}.via", f"{rel.to}.{rel.via} is not a ref field to {rel.from_!r}")
    action_names = [a.name for a in spec.actions]
    if len(set(action_names)) != len(action_names):
        raise bad("actions", "action names repeat")
    for i, act in enumerate(spec.actions):
        if not _NAME.match(act.name):
            raise bad(f"actions[{i}].name", f"action name {act.name!r} is not snake_case")
        for j, p in enumerate(act.params):
            pw = f"actions[{i}].params[{j}]"
            if not _NAME.match(p.name):
                raise bad(f"{pw}.name", f"parameter name {p.name!r} is not snake_case")
            if p.type == "ref" and p.ref not in entity_names:
                raise bad(f"{pw}.ref", f"param {act.name}.{p.name} refers to unknown entity {p.ref!r}")
            if p.default is not None:
                why = default_problem(p)
                if why is not None:
                    raise bad(f"{pw}.default", f"default of {act.name}.{p.name}: {why}")
            why = param_schema_problem(p)
            if why is not None:
                raise bad(f"{pw}.schema", f"param {act.name}.{p.name}: {why}")
        names = [p.name for p in act.params]
        if len(set(names)) != len(names):
            raise bad(f"actions[{i}].params", f"parameter names repeat in action {act.name!r}")
    from toolshift.world.language.actions import check_actions

    check_actions(spec, source)
    if spec.data is not None:
        from toolshift.world.language.datasets import check_data_source

        check_data_source(spec, source)


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$")


def param_schema_problem(p: ParamSpec) -> str | None:
    """Why a parameter's `schema` is unusable (None when it is fine, or the parameter has none).

    A `json` parameter needs one; no other parameter may have one. The schema must be valid JSON
    Schema, small, and self-contained: a `$ref`, `$id` or `$schema` could make the validator fetch
    or resolve something the spec does not carry.
    """
    if p.type != "json":
        return None if p.schema_ is None else "only a parameter of type json has a schema"
    if p.schema_ is None:
        return "a parameter of type json needs a schema (the JSON Schema of its value)"
    import json

    import jsonschema

    try:
        text = json.dumps(p.schema_, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"the schema is not plain JSON: {exc}"
    if len(text) > MAX_PARAM_SCHEMA_CHARS:
        return f"the schema is longer than {MAX_PARAM_SCHEMA_CHARS:,} characters"
    stack: list[tuple[Any, int]] = [(p.schema_, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_PARAM_SCHEMA_DEPTH:
            return f"the schema is nested deeper than {MAX_PARAM_SCHEMA_DEPTH} levels"
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("$ref", "$dynamicRef", "$id", "$schema", "$anchor", "$dynamicAnchor"):
                    return f"the schema uses {key!r}; it must be self-contained"
                stack.append((value, depth + 1))
        elif isinstance(node, list):
            stack.extend((value, depth + 1) for value in node)
    try:
        jsonschema.Draft202012Validator.check_schema(p.schema_)
    except jsonschema.SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message}"
    if p.default is not None:
        errors = list(jsonschema.Draft202012Validator(p.schema_).iter_errors(p.default))
        if errors:
            return f"the default does not match the schema: {errors[0].message}"
    return None


def default_problem(f: FieldSpec | ParamSpec) -> str | None:
    """Why a field's or parameter's `default` is not a value of its type (None when it is)."""
    v = f.default
    if f.type == "json":
        return None  # checked against the parameter's schema by param_schema_problem
    if f.type == "int":
        ok = type(v) is int
    elif f.type in ("float", "money"):
        ok = type(v) in (int, float)
    elif f.type == "bool":
        ok = type(v) is bool
    else:
        ok = type(v) is str
    if not ok:
        return f"{v!r} is not a {f.type} value"
    if f.type == "enum" and v not in (f.values or []):
        return f"{v!r} is not one of {f.values}"
    if f.type == "date" and not _is_date(v):
        return f"{v!r} is not an ISO date"
    if f.type == "datetime" and not (_DATETIME.match(v) and _is_date(v[:10])):
        return f"{v!r} is not YYYY-MM-DDTHH:MM"
    return None


def _is_date(text: str) -> bool:
    try:
        return bool(_DATE.match(text)) and date.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def row_format_problem(fmt: str, field: str) -> str | None:
    """Why `fmt` is not a safe format of a row number (`{}` / `{0}` for keys, `{n}` for patterns); None if it is.

    Only the row number may be formatted, with a plain spec of width up to 99: no attribute or
    index access, no nested fields, nothing that could make a huge string.
    """
    if len(fmt) > MAX_KEY_CHARS * 4:
        return f"it is longer than {MAX_KEY_CHARS * 4} characters"
    try:
        parts = list(string.Formatter().parse(fmt))
    except ValueError as exc:
        return str(exc)
    fields = [(name, spec, conv) for _, name, spec, conv in parts if name is not None]
    if not fields:
        return "it has no {} field for the row number"
    allowed = ("", "0") if field == "" else (field,)
    for name, spec, conv in fields:
        if name not in allowed:
            shown = " or ".join("{" + a + "}" for a in allowed)
            return f"the field {{{name}}} is not the row number ({shown})"
        if conv or not _FORMAT_SPEC.match(spec or ""):
            return f"the format spec {spec!r} is not a plain number format of width up to 99"
    try:
        fmt.format(1) if field == "" else fmt.format(**{field: 1})
    except (ValueError, IndexError, KeyError) as exc:
        return str(exc)
    return None


def parse_spec(data: Any, source: str) -> DomainSpec:
    """Validate a decoded spec document; errors name `source` and the key path."""
    if not isinstance(data, dict):
        raise BadInputError("a domain spec must be a mapping at the top level", source=source)
    fmt = data.get("format", SPEC_FORMAT)
    if fmt != SPEC_FORMAT:
        raise BadInputError(
            f"unknown spec format {fmt!r} (this build reads {SPEC_FORMAT!r})", source=source, field="format"
        )
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BadInputError(err["msg"], source=source, field=_key_path(err["loc"])) from None
    validate_references(spec, source)
    return spec


def load_spec(path: str | Path) -> DomainSpec:
    """Read and validate a YAML domain spec file (strictly: see `toolshift.world.language.yamlfile`)."""
    return parse_spec(load_yaml(path, what="domain spec"), str(path))
