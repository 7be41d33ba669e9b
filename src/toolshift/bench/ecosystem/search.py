"""Tool retrieval over a version's whole catalog: BM25 over each tool's name, description, parameters and department.

The standard setting's agent finds its tools with `search_tools(query, k)`; what the search returns
is what gets exposed to it, and that exposed set is what tool retrieval P/R/F1 measures. BM25 is a
plain, deterministic lexical ranker (no model, no network); a query that is exactly a tool's name
ranks that tool first, so an agent that knows the name can fetch exactly that tool.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9]+")
K1, B = 1.2, 0.75
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "give",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "the",
        "their",
        "this",
        "to",
        "want",
        "with",
        "you",
        "your",
        "can",
        "could",
        "help",
        "need",
    ]
)


def tokens(text: str) -> list[str]:
    """Lower-case words of a text (snake_case and camelCase split), stop words out, a plural 's' folded."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).replace("_", " ").lower()
    out = []
    for w in _WORD.findall(spaced):
        if w in _STOP:
            continue
        out.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


@dataclass(frozen=True)
class ToolDoc:
    """What the search indexes of one tool."""

    name: str
    domain: str
    text: str


class ToolSearch:
    """A BM25 index over tool documents."""

    def __init__(self, docs: Iterable[ToolDoc]) -> None:
        self.docs = sorted(docs, key=lambda d: d.name)
        self.by_name = {d.name: d for d in self.docs}
        self._tf = [Counter(tokens(f"{d.name} {d.text}")) for d in self.docs]
        self._len = [sum(tf.values()) for tf in self._tf]
        self._avg = (sum(self._len) / len(self._len)) if self._len else 0.0
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        n = len(self.docs)
        self._idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def search(self, query: str, k: int, among: set[str] | None = None) -> list[str]:
        """The names of the `k` best tools for `query` (ties by name), optionally only `among` these."""
        exact = query.strip()
        q = tokens(query)
        scored: list[tuple[float, str]] = []
        for doc, tf, length in zip(self.docs, self._tf, self._len, strict=True):
            if among is not None and doc.name not in among:
                continue
            if doc.name == exact:
                scored.append((math.inf, doc.name))
                continue
            s = 0.0
            for w in q:
                f = tf.get(w)
                if f:
                    s += self._idf[w] * f * (K1 + 1) / (f + K1 * (1 - B + B * length / (self._avg or 1)))
            if s > 0:
                scored.append((s, doc.name))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [name for _, name in scored[:k]]
