"""The Embedder port: a contract naming the vector space, and a batch embed function."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]  # shape (n, dim), rows L2-normalised


@dataclass(frozen=True, slots=True)
class EmbeddingContract:
    """Which vector space: vectors of two contracts are never compared or stored together."""

    kind: str  # "onnx", "gguf"
    model: str
    dim: int

    @property
    def key(self) -> str:
        """A short stable id of the contract, for file names and cache keys."""
        text = f"{self.kind}:{self.model}:{self.dim}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of `contract.dim` dimensions."""

    @property
    def contract(self) -> EmbeddingContract: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


class EmbedderUnavailable(Exception):
    """The model could not be loaded or run; nothing was embedded."""


class CountingEmbedder:
    """Wraps an embedder and counts model calls and texts (status, tests, benchmarks)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls = 0
        self.texts = 0

    @property
    def contract(self) -> EmbeddingContract:
        return self.inner.contract

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Questions' vectors: the inner embedder's `embed_queries` where it has one (a model
        that embeds a question unlike a stored text, e5), else its `embed`."""
        self.calls += 1
        self.texts += len(texts)
        queries = getattr(self.inner, "embed_queries", None)
        vectors: Vectors = self.inner.embed(texts) if queries is None else queries(texts)
        return vectors


def normalise(vectors: Vectors) -> Vectors:
    """Rows scaled to unit length (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    scaled: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return scaled
