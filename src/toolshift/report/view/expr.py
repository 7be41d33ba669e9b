"""The viewer's filter expressions: `outcome == "failure" and turns > 5 and harness ~ "codex"`, over the index.

A small language, parsed here and never evaluated as code (the same grammar is read by the static export's
`expr.js`):

    expr    := and ("or" and)*
    and     := unary ("and" unary)*
    unary   := "not" unary | "(" expr ")" | test
    test    := FIELD OP VALUE | FIELD "in" "[" VALUE ("," VALUE)* "]" | FIELD      (a flag alone)
    OP      := == != < <= > >= ~            (~: contains, case-insensitive)
    VALUE   := "text" | 'text' | number | word

Fields (`FIELDS`): the episode's metadata (categories: run, condition, harness, kind, agent, model, domain, task,
version, outcome, strict, termination, file, id), its counts (numbers: turns, calls, failed, tokens, collateral,
missing, trial, v, the ecosystem version's number) and its verdict as flags (success, strict_success, judged,
recording). Words and numbers compare as the field's kind says; a category compared with < or > compares
text. An expression is at most `MAX_LENGTH` characters and `MAX_DEPTH` deep; anything else is bad input naming
where (exit 2 on the command line, HTTP 400 in the viewer). Evaluation is a NumPy mask over the run set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolshift.errors import BadInputError
from toolshift.report.episode_index import RunSet

MAX_LENGTH = 2000
MAX_DEPTH = 32
CATEGORIES = {"run": "run", "condition": "condition", "harness": "harness", "kind": "kind", "agent": "agent",
              "model": "model", "domain": "domain", "task": "task_id", "version": "version", "outcome": "outcome",
              "strict": "strict", "termination": "termination", "file": "file", "shared": "shared"}  # fmt: skip
NUMBERS = ("turns", "calls", "failed", "tokens", "collateral", "missing", "trial", "v")
FLAGS = ("success", "strict_success", "judged", "recording")
FIELDS = (*CATEGORIES, "id", *NUMBERS, *FLAGS)
OPS = ("==", "!=", "<=", ">=", "<", ">", "~")
TOKEN = re.compile(
    r"""\s*(?:(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<num>-?\d+(?:\.\d+)?)(?![\w.])|(?P<op>==|!=|<=|>=|<|>|~)"""
    r"""|(?P<punct>[()\[\],])|(?P<word>[A-Za-z_][\w.:/@+-]*))"""
)
VERSION_NUMBER = re.compile(r"(?:^|/)v(\d+)$")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    at: int


def tokens(text: str) -> list[Token]:
    """The tokens of an expression; a character no token starts with is named with its position."""
    if len(text) > MAX_LENGTH:
        raise BadInputError(f"a filter expression is at most {MAX_LENGTH} characters", field="expr")
    out, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        m = TOKEN.match(text, at)
        if m is None or m.end() == at:
            raise BadInputError(f"cannot read {text[at:].strip()[:20]!r} at character {at + 1}", field="expr")
        kind = m.lastgroup or "word"
        value = m.group(kind)
        start = m.start(kind)
        if kind == "str":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        out.append(Token(kind, value, start))
        at = m.end()
    return out


@dataclass
class Node:
    """A parsed expression: `and` / `or` / `not` over children, or a test of one field."""

    op: str
    children: tuple[Node, ...] = ()
    field: str = ""
    values: tuple[str | float, ...] = ()


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = tokens(text)
        self.k = 0

    def peek(self) -> Token | None:
        return self.toks[self.k] if self.k < len(self.toks) else None

    def take(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise BadInputError("the expression ends too early", field="expr")
        self.k += 1
        return tok

    def word(self, *words: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind == "word" and tok.text in words:
            self.k += 1
            return True
        return False

    def parse(self) -> Node:
        node = self.expr(0)
        extra = self.peek()
        if extra is not None:
            raise BadInputError(f"unexpected {extra.text!r} at character {extra.at + 1}", field="expr")
        return node

    def expr(self, depth: int) -> Node:
        parts = [self.conj(depth)]
        while self.word("or"):
            parts.append(self.conj(depth))
        return parts[0] if len(parts) == 1 else Node("or", tuple(parts))

    def conj(self, depth: int) -> Node:
        parts = [self.unary(depth)]
        while self.word("and"):
            parts.append(self.unary(depth))
        return parts[0] if len(parts) == 1 else Node("and", tuple(parts))

    def unary(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise BadInputError(f"a filter expression nests at most {MAX_DEPTH} deep", field="expr")
        if self.word("not"):
            return Node("not", (self.unary(depth + 1),))
        tok = self.peek()
        if tok is not None and tok.kind == "punct" and tok.text == "(":
            self.k += 1
            node = self.expr(depth + 1)
            close = self.take()
            if close.text != ")":
                raise BadInputError(f"expected ')' at character {close.at + 1}", field="expr")
            return node
        return self.test()

    def test(self) -> Node:
        tok = self.take()
        if tok.kind != "word" or tok.text not in FIELDS:
            raise BadInputError(f"unknown field {tok.text!r} at character {tok.at + 1} (fields: {', '.join(FIELDS)})",
                                field="expr")  # fmt: skip
        name = tok.text
        nxt = self.peek()
        if nxt is None or (nxt.kind, nxt.text) in (("punct", ")"), ("word", "and"), ("word", "or")):
            if name not in FLAGS:
                raise BadInputError(f"{name} needs a comparison (`{name} == …`); flags alone: {', '.join(FLAGS)}",
                                    field="expr")  # fmt: skip
            return Node("flag", field=name)
        if self.word("in"):
            values = self.value_list()
            return Node("in", field=name, values=values)
        op = self.take()
        if op.kind != "op":
            raise BadInputError(
                f"expected one of {' '.join(OPS)} after {name} at character {op.at + 1}", field="expr"
            )
        return Node(op.text, field=name, values=(self.value(),))

    def value(self) -> str | float:
        tok = self.take()
        if tok.kind == "num":
            return float(tok.text)
        if tok.kind in ("str", "word"):
            return tok.text
        raise BadInputError(f"expected a value at character {tok.at + 1}", field="expr")

    def value_list(self) -> tuple[str | float, ...]:
        tok = self.take()
        if tok.text != "[":
            raise BadInputError(f"expected '[' at character {tok.at + 1}", field="expr")
        values = [self.value()]
        while (tok := self.take()).text == ",":
            values.append(self.value())
        if tok.text != "]":
            raise BadInputError(f"expected ']' at character {tok.at + 1}", field="expr")
        return tuple(values)


def parse(text: str) -> Node | None:
    """The expression's tree, or None for an empty one."""
    return _Parser(text).parse() if text.strip() else None


def _number(value: str | float, field: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise BadInputError(f"{field} is a number, not {value!r}", field="expr") from None


def _compare(left: np.ndarray, op: str, right: Any) -> np.ndarray:
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _text_hit(values: list[str], op: str, wanted: tuple[str | float, ...]) -> np.ndarray:
    """For each distinct value of a category, whether it passes the test."""
    texts = np.asarray(values, dtype=object)
    if op == "in":
        return np.isin(texts, [_as_text(w) for w in wanted]) if len(texts) else np.zeros(0, bool)
    want = _as_text(wanted[0])
    if op == "~":
        return np.array([want.lower() in v.lower() for v in values], dtype=bool)
    return np.array([bool(_compare(np.asarray(v, dtype=object), op, want)) for v in values], dtype=bool)


def _as_text(value: str | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def version_numbers(rs: RunSet) -> np.ndarray:
    """The ecosystem version's number of every row (`…/v3` → 3), -1 where there is none."""
    per_value = np.array([int(m.group(1)) if (m := VERSION_NUMBER.search(v)) else -1
                          for v in rs.values["version"]] or [-1], dtype=np.int64)  # fmt: skip
    return per_value[rs.codes["version"]] if rs.size else np.zeros(0, np.int64)


def evaluate(node: Node, rs: RunSet) -> np.ndarray:
    """The rows of `rs` the expression keeps."""
    if node.op == "and":
        out = np.ones(rs.size, dtype=bool)
        for child in node.children:
            out &= evaluate(child, rs)
        return out
    if node.op == "or":
        out = np.zeros(rs.size, dtype=bool)
        for child in node.children:
            out |= evaluate(child, rs)
        return out
    if node.op == "not":
        return ~evaluate(node.children[0], rs)
    name = node.field
    if node.op == "flag":
        column, wanted = {"success": ("outcome", "success"), "strict_success": ("strict", "strict"),
                          "recording": ("kind", "recording"), "judged": ("outcome", "unjudged")}[name]  # fmt: skip
        hit = np.asarray([v == wanted for v in rs.values[column]] or [False], dtype=bool)[rs.codes[column]]
        return ~hit if name == "judged" else hit
    if name in CATEGORIES:
        column = CATEGORIES[name]
        hit = _text_hit(rs.values[column], node.op, node.values)
        return hit[rs.codes[column]] if hit.size else np.zeros(rs.size, dtype=bool)
    if name == "id":
        return _text_hit([rs._id(r) for r in range(rs.size)], node.op, node.values)
    if name in FLAGS:
        raise BadInputError(f"{name} is a flag: write `{name}` or `not {name}`", field="expr")
    column = version_numbers(rs) if name == "v" else rs.numeric(name)
    if node.op == "in":
        return np.isin(column, [_number(v, name) for v in node.values])
    if node.op == "~":
        raise BadInputError(f"{name} is a number: ~ (contains) is for text", field="expr")
    return _compare(column, node.op, _number(node.values[0], name))


def mask(text: str, rs: RunSet) -> np.ndarray:
    """The rows an expression keeps (every row for an empty one)."""
    node = parse(text)
    return np.ones(rs.size, dtype=bool) if node is None else evaluate(node, rs)


def vocabulary(rs: RunSet, limit: int = 200) -> dict[str, Any]:
    """What the page completes: every field with its kind, and each category's values (the most frequent)."""
    fields: dict[str, Any] = {}
    for name, column in CATEGORIES.items():
        counts = np.bincount(rs.codes[column], minlength=len(rs.values[column])) if rs.size else []
        order = np.argsort(-np.asarray(counts), kind="stable")[:limit] if len(counts) else []
        fields[name] = {"kind": "text", "values": [rs.values[column][i] for i in order if counts[i]]}
    fields["id"] = {"kind": "text", "values": []}
    for name in NUMBERS:
        fields[name] = {"kind": "number", "values": []}
    for name in FLAGS:
        fields[name] = {"kind": "flag", "values": []}
    return {"fields": fields, "ops": list(OPS), "words": ["and", "or", "not", "in"]}
