"""The Embedder port's contract: every implementation passes the same suite.

MiniLM (the default), the hashing embedder (the stand-in where a test is not about the
model), and the embedding cache in front of the hashing embedder (it serves the port too).
MiniLM's int8 scales depend a little on the batch, so "the same vector" means cosine > 0.999.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.embedding.port import Embedder, Vectors

SAME = 0.999  # cosine above which two rows are the same vector
TEXTS = [
    "A long message about the trip to Lisbon, the museum, the river and the bakery by the bridge.",
    "yes!",
    "My dog chased the postman down the street this morning.",
    "ok",
    "The quarterly revenue report is due on Friday.",
    "Zoë's café in Łódź, 東京 and naïve façades.",
]


@pytest.fixture(params=["minilm", "hashing", "cached-hashing"])
def implementation(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Embedder]:
    if request.param == "cached-hashing":
        cache = EmbeddingCache(tmp_path / "embeddings.sqlite", HashingEmbedder())
        yield cache
        cache.close()
    else:
        embedder: Embedder = request.getfixturevalue(request.param)
        yield embedder


def cosines(a: Vectors, b: Vectors) -> Vectors:
    result: Vectors = (a * b).sum(axis=1)
    return result


def test_rows_are_float32_of_the_contract_dimension(implementation: Embedder) -> None:
    vectors = implementation.embed(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), implementation.contract.dim)


def test_no_texts_give_no_rows(implementation: Embedder) -> None:
    assert implementation.embed([]).shape == (0, implementation.contract.dim)


def test_every_row_is_unit_length_even_for_empty_or_wordless_text(
    implementation: Embedder,
) -> None:
    vectors = implementation.embed([*TEXTS, "", "   ", "?!", "\n\t"])
    assert np.isfinite(vectors).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_same_text_gives_the_same_vector_every_time(implementation: Embedder) -> None:
    first = implementation.embed(TEXTS)
    second = implementation.embed(TEXTS)
    assert cosines(first, second).min() > SAME


def test_a_batch_equals_the_texts_embedded_one_by_one(implementation: Embedder) -> None:
    together = implementation.embed(TEXTS)
    alone = np.vstack([implementation.embed([text]) for text in TEXTS])
    assert cosines(together, alone).min() > SAME


def test_rows_come_back_in_the_callers_order(implementation: Embedder) -> None:
    forward = implementation.embed(TEXTS)
    backward = implementation.embed(TEXTS[::-1])
    assert cosines(forward, backward[::-1]).min() > SAME


def test_a_text_repeated_in_one_batch_gets_equal_rows(implementation: Embedder) -> None:
    vectors = implementation.embed([TEXTS[2], TEXTS[4], TEXTS[2]])
    assert float(vectors[0] @ vectors[2]) > SAME


def test_a_text_far_longer_than_any_window_embeds_to_a_unit_vector(
    implementation: Embedder,
) -> None:
    long_text = " ".join(f"word{n} about the harbour" for n in range(5_000))
    [vector] = implementation.embed([long_text])
    assert np.isfinite(vector).all()
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)


def test_different_texts_get_different_vectors(implementation: Embedder) -> None:
    vectors = implementation.embed(TEXTS)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, 0.0)
    assert similarity.max() < SAME


def test_a_text_sharing_words_is_nearer_than_an_unrelated_one(implementation: Embedder) -> None:
    """What the search tests that run on the hashing embedder rely on."""
    dog, same_words, unrelated = implementation.embed(
        [
            "My dog chased the postman down the street.",
            "The postman was chased by my dog.",
            "The quarterly revenue report is due on Friday.",
        ]
    )
    assert float(dog @ same_words) > float(dog @ unrelated)


def test_the_contract_names_a_vector_space_with_a_stable_key(implementation: Embedder) -> None:
    contract = implementation.contract
    assert contract.kind
    assert contract.model
    assert contract.dim > 0
    assert len(contract.key) == 16
    assert contract.key == implementation.contract.key
