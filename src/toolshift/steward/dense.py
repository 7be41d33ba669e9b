"""Dense retrieval for supply: the packaged all-MiniLM-L6-v2 (`toolshift.embeddings`), and the BM25 + dense
hybrid.

`DenseIndex` ranks documents by cosine similarity of their MiniLM embeddings; `HybridIndex` fuses BM25 and
dense ranks by reciprocal rank fusion (k = 60; BM25 ranks only documents sharing a word with the query).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolshift.embeddings import MiniLM, available, model_dir
from toolshift.steward.retrieval import BM25Index

RRF_K = 60


def _top(s: np.ndarray, k: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
    if s.size == 0 or k <= 0:
        return []
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    order = sorted(range(s.size), key=lambda i: (-s[i], i))[:k]
    return [(int(i), float(s[i])) for i in order if np.isfinite(s[i])]


class DenseIndex:
    """Cosine similarity of a query's embedding to every document's."""

    def __init__(self, docs: Sequence[str], model: MiniLM) -> None:
        self.model = model
        self.vectors = model.encode(list(docs)) if docs else np.zeros((0, 1))

    def scores(self, query: str) -> np.ndarray:
        if not len(self.vectors):
            return np.zeros(0)
        return self.vectors @ self.model.encode([query])[0]

    def top(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        return _top(self.scores(query), k, allowed)


class HybridIndex:
    """BM25 and dense ranks fused by reciprocal rank fusion: score = Σ 1 / (60 + rank)."""

    def __init__(self, docs: Sequence[str], model: MiniLM) -> None:
        self.bm25 = BM25Index(docs)
        self.dense = DenseIndex(docs, model)

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.bm25.size)
        for s, lexical in ((self.bm25.scores(query), True), (self.dense.scores(query), False)):
            if s.size:
                rank = np.empty(s.size)
                rank[np.argsort(-s, kind="stable")] = np.arange(1, s.size + 1)
                # a document BM25 finds no query word in has no lexical rank
                out += np.where(s > 0, 1.0 / (RRF_K + rank), 0.0) if lexical else 1.0 / (RRF_K + rank)
        return out

    def top(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        return _top(self.scores(query), k, allowed)


__all__ = ["BM25Index", "DenseIndex", "HybridIndex", "MiniLM", "available", "model_dir"]
