"""Offline retrieval for supply: BM25 (`bm25s`) over skill and tool text, similarity threshold and MMR.

Tokens are lowercase words with identifiers split at underscores, a short English stop list removed
and a plural `s` stripped, so `ap_search_vendors` and "search for a vendor" meet.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "for",
        "from",
        "has",
        "have",
        "help",
        "hi",
        "hello",
        "i",
        "i'd",
        "id",
        "in",
        "is",
        "it",
        "like",
        "me",
        "my",
        "need",
        "of",
        "on",
        "or",
        "please",
        "the",
        "this",
        "to",
        "too",
        "want",
        "with",
        "would",
        "you",
        "your",
        "there",
        "one",
        "more",
        "thing",
        "after",
        "that",
        "all",
        "same",
    ]
)


def tokens(text: str) -> list[str]:
    out = []
    for w in WORD.findall(text.lower().replace("_", " ")):
        if w in STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


class BM25Index:
    """BM25 scores of a query against every document (bm25s, in memory)."""

    def __init__(self, docs: Sequence[str]) -> None:
        import bm25s

        self.size = len(docs)
        self.doc_tokens = [set(tokens(d)) for d in docs]
        self._bm25 = None
        if self.size:
            corpus = [tokens(d) or ["_empty_"] for d in docs]
            self._bm25 = bm25s.BM25()
            self._bm25.index(corpus, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        if self._bm25 is None:
            return np.zeros(0)
        q = tokens(query)
        if not q:
            return np.zeros(self.size)
        return np.asarray(self._bm25.get_scores(q), dtype=float)

    def top(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The `k` best documents with a positive score (`allowed`: a boolean mask of eligible documents)."""
        s = self.scores(query)
        if s.size == 0 or k <= 0:
            return []
        if allowed is not None:
            s = np.where(allowed, s, 0.0)
        k = min(k, s.size)
        idx = np.argpartition(-s, k - 1)[:k]
        ranked = sorted(((int(i), float(s[i])) for i in idx if s[i] > 0), key=lambda p: (-p[1], p[0]))
        return ranked


def mmr(
    ranked: list[tuple[int, float]],
    doc_tokens: Sequence[set[str]],
    *,
    k: int,
    threshold: float = 0.5,
    lam: float = 0.7,
) -> list[int]:
    """Maximal marginal relevance over candidates scoring at least `threshold` × the best score;
    similarity between documents is the Jaccard overlap of their tokens."""
    if not ranked:
        return []
    best = ranked[0][1]
    pool = [(i, s / best) for i, s in ranked if s >= threshold * best]
    chosen: list[int] = []
    while pool and len(chosen) < k:

        def gain(item: tuple[int, float]) -> float:
            i, rel = item
            if not chosen:
                return rel
            sim = max(_jaccard(doc_tokens[i], doc_tokens[j]) for j in chosen)
            return lam * rel - (1 - lam) * sim

        pick = max(pool, key=gain)
        chosen.append(pick[0])
        pool.remove(pick)
    return chosen


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0
