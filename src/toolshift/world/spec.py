"""The YAML domain spec: entities, relations, seed-data rules and custom actions, validated on load.

A spec is the single source of a world. `toolshift.world.compiler` turns it into a SQLite database
and a generated tool surface (get / list / search / create / update / delete per entity, one
traversal per relation, plus the custom actions). Format `toolshift.domain/1`; see docs/formats.md.

Errors name the file and the key path (`entities[2].fields[1].type`) and exit the CLI with code 2.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.errors import BadInputError

SPEC_FORMAT = "toolshift.domain/1"

FieldType = Literal[
    "string", "text", "int", "float", "bool", "date", "datetime", "email", "phone", "enum", "money", "ref"
]
FIELD_TYPES: tuple[str, ...] = FieldType.__args__  # type: ignore[attr-defined]

Operation = Literal["get", "list", "search", "create", "update", "delete"]
ALL_OPERATIONS: tuple[Operation, ...] = ("get", "list", "search", "create", "update", "delete")

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Generator(BaseModel):
    """How seed data for a field is made. `kind` picks the rule; the other keys are its options.

    Kinds (the compiler's `toolshift.world.seeding` implements them):
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
    rows: int = Field(ge=0)
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
    type: FieldType
    description: str = ""
    required: bool = True
    ref: str | None = None
    values: list[str] | None = None
    default: Any = None


class Precondition(_Strict):
    """A policy the agent must respect: a Python expression over the action runtime; false → error."""

    check: str
    code: str
    message: str


class ActionSpec(_Strict):
    """A custom tool with preconditions and effects written in Python.

    `code` is the body of a function run inside the call's transaction, with these names bound:
    `args` (validated arguments), `get(entity, key)`, `find(entity, **where) -> list[dict]`,
    `insert(entity, **values) -> key`, `update(entity, key, **values)`, `delete(entity, key)`,
    `fail(code, message)` (raises a domain error; the transaction rolls back), `today` (the world's
    fixed date, ISO) and `now`. It returns the tool's result (JSON-serialisable).
    """

    name: str
    description: str
    effect: Literal["read", "write"]
    params: list[ParamSpec] = Field(default_factory=list)
    preconditions: list[Precondition] = Field(default_factory=list)
    code: str
    destructive: bool = False


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
    entities: list[EntitySpec]
    relations: list[RelationSpec] = Field(default_factory=list)
    actions: list[ActionSpec] = Field(default_factory=list)

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

    entity_names = [e.name for e in spec.entities]
    if len(set(entity_names)) != len(entity_names):
        raise bad("entities", "entity names repeat")
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
        try:
            ent.id_format.format(1)
        except (ValueError, IndexError, KeyError) as exc:
            raise bad(f"{where}.id_format", f"bad id format {ent.id_format!r}: {exc}") from None
        for j, f in enumerate(ent.fields):
            fw = f"{where}.fields[{j}]"
            if not _NAME.match(f.name):
                raise bad(f"{fw}.name", f"field name {f.name!r} is not snake_case")
            if f.type == "ref" and f.ref not in entity_names:
                raise bad(f"{fw}.ref", f"field {ent.name}.{f.name} refers to unknown entity {f.ref!r}")
            if f.type == "enum" and not f.values:
                raise bad(f"{fw}.values", f"enum field {ent.name}.{f.name} has no values")
    for i, rel in enumerate(spec.relations):
        where = f"relations[{i}]"
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
        for j, p in enumerate(act.params):
            if p.type == "ref" and p.ref not in entity_names:
                raise bad(
                    f"actions[{i}].params[{j}].ref",
                    f"param {act.name}.{p.name} refers to unknown entity {p.ref!r}",
                )
        try:
            compile(action_function_source(act.code), f"{source}:actions[{i}].code", "exec")
            for k, pre in enumerate(act.preconditions):
                compile(pre.check, f"{source}:actions[{i}].preconditions[{k}]", "eval")
        except SyntaxError as exc:
            raise bad(
                f"actions[{i}]",
                f"Python syntax error in action {act.name!r}: {exc.msg} (line {(exc.lineno or 2) - 1})",
            ) from None


def action_function_source(code: str) -> str:
    """An action's `code` as the body of a function `__action__()` (so it may `return`); line 1 is the def."""
    body = textwrap.indent(textwrap.dedent(code).strip("\n") or "pass", "    ")
    return f"def __action__():\n{body}\n"


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
    """Read and validate a YAML domain spec file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInputError(f"cannot read domain spec: {exc.strerror}", source=str(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise BadInputError(f"malformed YAML{at}: {getattr(exc, 'problem', exc)}", source=str(path)) from None
    return parse_spec(data, str(path))
