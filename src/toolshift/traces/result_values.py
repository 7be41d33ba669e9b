"""Tool results read as the values they print: JSON, Python literals, YAML and label listings, parsed, never run.

Benchmarks print their tools' results in different ways. τ²-bench and MCP servers return JSON text; BFCL's
tools return JSON and sometimes Python reprs (`{'a': 1}`); AgentDojo's tools print YAML records, Python dicts,
and listings of a label with one name a line (`Hotel Names: Le Marais Boutique\\nGood Night\\n`). A flow binds
a lookup's arguments from the values of earlier results, and the read-only ceiling counts a value found in
one, so a value printed inside text is found only when the text is read as the structure it is. The catalog
names the form (`ToolCatalog.results`, docs/formats.md):

- `json`: JSON text, else the text itself (a JSON string that holds a JSON object or list is read once more);
- `python`: the same, else a Python literal (strings, numbers, booleans, None, lists, tuples, sets, dicts),
  parsed by `ast.parse` and walked node by node: nothing is evaluated, any other expression is text;
- `yaml`: the same, else a YAML mapping or sequence (safe constructors only; no anchors, aliases or tags;
  dates and times stay strings and only `true`/`false` are booleans, as an agent passes them back), else a
  label listing: a first line `Label: item` and further lines of one item each, read as `{"Label": [items]}`.

Each attempt is bounded (characters, nesting depth, YAML events); text beyond a bound, or that no form reads,
stays the text it is (never an error: a result is data the run recorded, not input a user typed).
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any, Final, Literal, get_args

import yaml

from toolshift.errors import BadInputError
from toolshift.fileio import loads_json

ResultForm = Literal["json", "python", "yaml"]
RESULT_FORMS: Final = get_args(ResultForm)
MAX_CHARS = 1_000_000
"""Longest result read as a Python literal or YAML (JSON has `toolshift.fileio`'s own bounds)."""
MAX_DEPTH = 64
MAX_YAML_EVENTS = 200_000
JSON_START = frozenset('{["-0123456789tfn')
LITERAL_START = frozenset("{[('\"TFN")
"""A Python repr that JSON does not read starts so (a number alone is JSON; `- 0` is a YAML list)."""
_LABEL = re.compile(r"^([^\n:]{1,120}):[ \t]*(\S[^\n]*)?$")


def read_result(text: str | None, form: ResultForm = "json") -> Any:
    """A tool result as data, read as `form` says (the module's rules); None for no result."""
    if text is None:
        return None
    stripped = text.strip()
    if not stripped:
        return text
    if form == "json":
        return _json(stripped, text) if stripped[0] in JSON_START else text
    value = _json(stripped, _NOT, nested=True) if stripped[0] in JSON_START or stripped[0] == '"' else _NOT
    if value is not _NOT:
        return value
    if len(stripped) <= MAX_CHARS and stripped[0] in LITERAL_START:
        value = python_literal(stripped)
        if value is not _NOT:
            return value
    if form == "yaml" and len(stripped) <= MAX_CHARS:
        value = _yaml(stripped)
        if value is not _NOT:
            return value
        value = label_listing(stripped)
        if value is not _NOT:
            return value
    return text


class _Not:
    """What an attempt returns when its form does not read the text."""

    def __repr__(self) -> str:
        return "NOT"


_NOT: Final = _Not()


def _json(stripped: str, otherwise: Any, *, nested: bool = False) -> Any:
    """JSON within `toolshift.fileio`'s bounds, else `otherwise`; `nested`: a string holding a JSON object or
    list is read once more."""
    try:
        value = loads_json(stripped)
    except BadInputError:
        return otherwise
    if nested and isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            again = loads_json(value.strip())
        except BadInputError:
            return value
        return again if isinstance(again, dict | list) else value
    return value


# --- Python literals --------------------------------------------------------------------------------------

_SCALARS = (str, int, float, bool, type(None))


def python_literal(text: str) -> Any:
    """A Python literal as data (`_NOT` when `text` is anything else): `ast.parse` builds the tree, which is
    walked without evaluating anything; tuples and sets become lists; beyond `MAX_DEPTH` it is not read."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a repr's `\\e` is a text's backslash, not a mistake to warn of
            tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return _NOT
    try:
        return _node(tree.body, 0)
    except _NotLiteral:
        return _NOT


class _NotLiteral(Exception):
    pass


def _node(node: ast.AST, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _NotLiteral
    if isinstance(node, ast.Constant):
        if isinstance(node.value, _SCALARS):
            return node.value
        raise _NotLiteral
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) in (int, float):
            return -operand.value if isinstance(node.op, ast.USub) else operand.value
        raise _NotLiteral
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_node(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # `{**x}`
                raise _NotLiteral
            k = _node(key, depth + 1)
            if not isinstance(k, _SCALARS):
                raise _NotLiteral
            out[k] = _node(value, depth + 1)
        return out
    raise _NotLiteral


# --- YAML -------------------------------------------------------------------------------------------------

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BOOL = "tag:yaml.org,2002:bool"


class _Loader(yaml.SafeLoader):
    """The safe loader with dates and times left as strings and only `true`/`false` read as booleans."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_TIMESTAMP, _BOOL)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def _yaml(text: str) -> Any:
    """A YAML mapping or sequence (`_NOT` for a scalar document, an error, or past a bound)."""
    try:
        depth = 0
        for events, event in enumerate(yaml.parse(text, Loader=_Loader), start=1):
            if events > MAX_YAML_EVENTS or isinstance(event, yaml.AliasEvent):
                return _NOT
            if getattr(event, "anchor", None) is not None or getattr(event, "tag", None) is not None:
                return _NOT
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return _NOT
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.DocumentStartEvent) and events > 2:
                return _NOT  # a second document
        value = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass; aliases refused above
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return _NOT
    if not isinstance(value, dict | list):
        return _NOT
    return _plain(value)


def _plain(value: Any) -> Any:
    """Mapping keys that are not plain scalars (YAML allows lists as keys) become their text."""
    if isinstance(value, dict):
        return {(k if isinstance(k, _SCALARS) else str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# --- label listings ---------------------------------------------------------------------------------------


def label_listing(text: str) -> Any:
    """`Label: first\\nsecond\\n…` as `{"Label": [first, second, …]}` (`_NOT` unless there are two or more items
    and no later line reads as a label of its own)."""
    lines = [line.strip() for line in text.strip().splitlines()]
    if len(lines) < 2:
        return _NOT
    head = _LABEL.match(lines[0])
    if head is None:
        return _NOT
    items = [head.group(2)] if head.group(2) else []
    for line in lines[1:]:
        if not line:
            continue
        if ": " in line or line.endswith(":"):
            return _NOT
        items.append(line)
    if len(items) < 2:
        return _NOT
    return {head.group(1).strip(): items}
