"""A deterministic hashing embedder: the stand-in for MiniLM where a test is not about the model.

The hashing trick: each word, and each character trigram of a word, is hashed (blake2b, never
Python's salted `hash()`) to a signed slot of a fixed-size vector; the counts are
L2-normalised. Texts that share words share slots, so search by words still finds things, and
the same text gives the same vector in every process. It knows no meaning: a paraphrase that
shares no words is not near its original. No model, no file, microseconds per text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from lcg.projections.embedding.port import EmbeddingContract, Vectors, normalise

MODEL_NAME = "lcg-hashing-v1"
DIM = 256
MAX_TOKENS = 256  # words read per text, like MiniLM's window: the rest is ignored
TRIGRAM_WEIGHT = 0.5  # trigrams let "adopt" and "adopted" meet, but words count more
TRIGRAM_CHARS = 32  # trigrams of a word's first characters only: a 1 MB "word" stays cheap
EMPTY_TEXT_WORD = "\x00empty"  # a text without words still gets a unit vector, as MiniLM's does
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased word tokens, at most MAX_TOKENS of them."""
    return _WORD.findall(text.lower())[:MAX_TOKENS]


def _slot(token: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 63) & 1 else -1.0)


class HashingEmbedder:
    """Implements the `Embedder` port with the hashing trick (see the module docstring)."""

    def __init__(self, dim: int = DIM) -> None:
        self._contract = EmbeddingContract(kind="hashing", model=MODEL_NAME, dim=dim)

    @property
    def contract(self) -> EmbeddingContract:
        return self._contract

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text, in the order of `texts`."""
        out = np.zeros((len(texts), self._contract.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            self._accumulate(out[row], text)
        return normalise(out)

    def _accumulate(self, row: Vectors, text: str) -> None:
        tokens = words(text) or [EMPTY_TEXT_WORD]
        dim = self._contract.dim
        for token in tokens:
            index, sign = _slot("w:" + token, dim)
            row[index] += sign
            padded = f"<{token[:TRIGRAM_CHARS]}>"
            for start in range(len(padded) - 2):
                index, sign = _slot("t:" + padded[start : start + 3], dim)
                row[index] += sign * TRIGRAM_WEIGHT
