"""The bundled MiniLM embedder: shape, normalisation, and batch order (ADR 0011)."""

from __future__ import annotations

import numpy as np

from lcg.projections.embedding.minilm import MiniLmEmbedder

TEXTS = [
    "A long message about the trip to Lisbon, the museum, the river and the bakery by the bridge.",
    "yes!",
    "My dog chased the postman down the street this morning.",
    "ok",
    "The quarterly revenue report is due on Friday.",
]


def test_batches_sorted_by_length_return_rows_in_the_callers_order(minilm: MiniLmEmbedder) -> None:
    together = minilm.embed(TEXTS)
    alone = np.vstack([minilm.embed([text]) for text in TEXTS])
    assert together.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    cosines = (together * alone).sum(axis=1)
    assert cosines.min() > 0.999  # int8 quantisation scales depend a little on the batch
    assert minilm.embed([]).shape == (0, 384)
