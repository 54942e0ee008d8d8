"""Stored vectors in the vector catalog (ADR 0095): an image concept's vector came with its
write (a client's) and is kept in the log, so neither a replay nor a rebuilt index may compute
it from text.

The catalog row of such a concept holds the vector itself as its text, in a form no memory
text can take (it starts with a NUL, which every memory string refuses): `stored_text`
writes it, and the embedding cache answers such a text with the vector it holds
(`stored_vector`), never asking the model nor keeping it.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence

import numpy as np

log = logging.getLogger(__name__)

PREFIX = "\x00vector:"


def stored_text(values: Sequence[float]) -> str:
    """The catalog text of a stored vector: its float32 values, little-endian, base64."""
    raw = np.asarray(values, dtype="<f4").tobytes()
    return PREFIX + base64.b64encode(raw).decode("ascii")


def is_stored(text: str) -> bool:
    return text.startswith(PREFIX)


def stored_vector(text: str, dim: int) -> np.ndarray:
    """The vector a stored text holds, as the index takes it. One of another width (a session
    written under another embedder, then opened under this one) cannot be searched in this
    space: it is indexed as zeros, which no query is close to, and logged."""
    raw = base64.b64decode(text[len(PREFIX) :])
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if vector.shape[0] != dim:
        log.warning(
            "a stored %d-d image vector cannot be searched in this %d-d space", len(vector), dim
        )
        return np.zeros(dim, dtype=np.float32)
    return vector
