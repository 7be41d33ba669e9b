"""Spans of what a conversation said: the values an argument could copy from the user's words or a result.

A model that must name a record (an id, an email, a date, a name) should copy it, not invent it. This module
finds the candidates: word spans of the user's messages (one to six words, within a clause), and values of
a known shape (keys, emails, dates, date-times, numbers) in the user's words and in tool results, each
with the position it was last seen at, so "the most recent span of the right shape" is a rule one can
state. It reads text and decoded JSON only; agents (decoding that copies) and flows (reading the request)
both use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

Shape = Literal["key", "email", "date", "datetime", "number", "words"]
SHAPES: tuple[Shape, ...] = ("key", "email", "date", "datetime", "number", "words")

MAX_SPAN_WORDS = 6
"""The seed's spans of the user's words: one to six words long."""
MAX_VALUE_CHARS = 120
"""Longer strings (descriptions, notes) are not offered as values to copy."""

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?(Z|[+-]\d{2}:?\d{2})?$")
_EMAIL = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-./#:]{0,39}$")
_KEY_PREFIX = re.compile(r"^([A-Za-z]+[-_]?)\d")
# A clause ends at sentence punctuation followed by a space or the end, or at an opening bracket or a dash.
_CLAUSE = re.compile(r"[.;!?,:)\]\"”]+(?:\s+|$)|\s+[(\[\"“]+|\s+[-–—]+\s+|\n+")
_STRIP = "'\"“”‘’.,;:!?()[]{}<>*"
_STOPWORD_TEXT = (
    "a an the i i'm im me my mine we our you your yours he she it its they them their is are was were be been "
    "am do does did to of in on at for from with by and or but so if as that this these those there here "
    "can could would should will shall may might must please hi hello hey thanks thank yes no not "
    "need want like help just also about what which who whom when where how"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def shape_of(value: str) -> Shape:
    """The shape of one string value: what kind of identifier it looks like ("words" if none)."""
    text = value.strip()
    if _DATE.match(text):
        return "date"
    if _DATETIME.match(text):
        return "datetime"
    if _EMAIL.match(text):
        return "email"
    if _NUMBER.match(text):
        return "number"
    if _KEY.match(text) and any(c.isdigit() for c in text):
        return "key"
    return "words"


def key_prefix(value: str) -> str | None:
    """The letters (and separator) an id starts with: `LE-` of `LE-0150`; None without one."""
    m = _KEY_PREFIX.match(value)
    return m.group(1) if m else None


def clauses(text: str) -> list[list[str]]:
    """The text's clauses as lists of words, punctuation at their edges stripped."""
    out = []
    for part in _CLAUSE.split(text):
        words = [w.strip(_STRIP) for w in part.split()]
        words = [w for w in words if w]
        if words:
            out.append(words)
    return out


def word_spans(text: str, max_words: int = MAX_SPAN_WORDS) -> Iterator[str]:
    """Every span of one to `max_words` words inside a clause, in reading order (by where each ends)."""
    for words in clauses(text):
        for end in range(1, len(words) + 1):
            for start in range(max(0, end - max_words), end):
                yield " ".join(words[start:end])


def is_content_span(span: str) -> bool:
    """A span that neither starts nor ends with a function word ("the", "my", "please"): a value, maybe."""
    words = span.lower().split()
    return bool(words) and words[0] not in _STOPWORDS and words[-1] not in _STOPWORDS


def capitalised_runs(text: str) -> Iterator[str]:
    """Runs of capitalised words or words with digits inside a clause: the proper-noun pattern ("Aisha Patel",
    "Redwood Partners", "2026-06-11"). A clause's capitalised first word counts only when the next is too."""
    for words in clauses(text):
        run: list[str] = []
        for i, w in enumerate([*words, ""]):
            digits = any(c.isdigit() for c in w)
            capital = bool(w) and w[0].isupper() and w.lower() not in _STOPWORDS
            opening = i == 0 and not (len(words) > 1 and words[1][:1].isupper())
            if digits or (capital and not opening):
                run.append(w)
                continue
            if run:
                yield " ".join(run)
            run = []


def string_leaves(data: Any, *, depth: int = 0) -> Iterator[tuple[str | None, Any]]:
    """(field name, scalar) for every scalar leaf of decoded JSON, in document order."""
    if depth > 32:
        return
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, dict | list):
                yield from string_leaves(value, depth=depth + 1)
            elif value is not None:
                yield str(key), value
    elif isinstance(data, list):
        for value in data:
            yield from string_leaves(value, depth=depth + 1)
    elif data is not None:
        yield None, data


@dataclass
class Candidate:
    """A value one could copy, where it was last seen (a growing position), and the fields it was under."""

    value: Any
    shape: Shape
    seen: int
    from_user: bool = False
    fields: set[str] = field(default_factory=set)


@dataclass
class ConversationSpans:
    """The copyable values of a conversation so far, fed message by message (user text, tool results)."""

    max_words: int = MAX_SPAN_WORDS
    position: int = 0
    values: dict[tuple[Shape, str], Candidate] = field(default_factory=dict)
    user_text: list[str] = field(default_factory=list)

    def _note(self, value: Any, shape: Shape, *, from_user: bool, field_name: str | None = None) -> None:
        self.position += 1
        token = json.dumps(value) if not isinstance(value, str) else value
        key = (shape, token)
        found = self.values.get(key)
        if found is None:
            found = self.values[key] = Candidate(value, shape, self.position, from_user)
        found.seen = self.position
        found.from_user = found.from_user or from_user
        if field_name:
            found.fields.add(field_name)

    def add_user(self, text: str) -> None:
        """A user message: its word spans, and its tokens of an identifier's shape."""
        self.user_text.append(text)
        for words in clauses(text):
            for w in words:
                shape = shape_of(w)
                if shape == "number":
                    self._note(_number(w), "number", from_user=True)
                    if len(w) >= 3 and "." not in w:
                        self._note(w, "key", from_user=True)  # an id written as digits
                elif shape != "words":
                    self._note(w, shape, from_user=True)
            joined = " ".join(words)
            for m in re.finditer(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?", joined):
                self._note(m.group(0), "datetime", from_user=True)
        for span in word_spans(text, self.max_words):
            self._note(span, "words", from_user=True)

    def add_result(self, data: Any) -> None:
        """A tool result (decoded JSON, or text): its scalar values by shape, and the fields they sat under."""
        if isinstance(data, str):
            for words in clauses(data):
                for w in words:
                    shape = shape_of(w)
                    if shape == "number":
                        self._note(_number(w), "number", from_user=False)
                    elif shape != "words":
                        self._note(w, shape, from_user=False)
            return
        for name, value in string_leaves(data):
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float):
                self._note(value, "number", from_user=False, field_name=name)
                continue
            text = str(value).strip()
            if not text or len(text) > MAX_VALUE_CHARS:
                continue
            shape = shape_of(text)
            if shape == "number":
                self._note(text, "key", from_user=False, field_name=name)  # a numeric string id
                self._note(_number(text), "number", from_user=False, field_name=name)
                continue
            if shape == "words" and len(text.split()) > self.max_words:
                continue
            self._note(text, shape, from_user=False, field_name=name)

    def of_shape(self, shape: Shape, *, user_only: bool = False) -> list[Candidate]:
        """Candidates of one shape, oldest first (the last is the most recent)."""
        found = [c for (s, _), c in self.values.items() if s == shape and (c.from_user or not user_only)]
        return sorted(found, key=lambda c: c.seen)


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


def spans_of(messages: Iterable[dict[str, Any]], *, decode: Any = None) -> ConversationSpans:
    """The spans of OpenAI-style wire messages: user messages' words and tool results' values."""
    spans = ConversationSpans()
    for m in messages:
        role, content = m.get("role"), m.get("content") or ""
        if role == "user":
            spans.add_user(content)
        elif role == "tool":
            spans.add_result(decode(content) if decode is not None else _decode(content))
    return spans


def _decode(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text
