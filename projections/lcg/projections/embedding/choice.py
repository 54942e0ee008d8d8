"""Which embedder a process makes its vectors with: the `LCG_EMBEDDER` setting (ADR 0061).

`minilm` (the default) is the bundled model; `hashing` is the deterministic stand-in with no
model (tests and demos that are not about meaning); `e5` is the opt-in multilingual-e5-small
of the `e5` extra (ADR 0094). Each has its own contract, so a workspace
switched from one to the other keeps the two vector spaces apart: the embedding cache and the
vector index files are keyed by the contract, and the texts are embedded again under the new
one at the next open (as for any change of model).
"""

from __future__ import annotations

from typing import Literal

from lcg.projections.embedding.e5 import E5Embedder
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import Embedder

EmbedderName = Literal["minilm", "hashing", "e5"]  # LCG_EMBEDDER (lcg.interfaces.config)
EMBEDDERS: tuple[EmbedderName, ...] = ("minilm", "hashing", "e5")


def chosen_embedder(name: EmbedderName, threads: int = 1) -> Embedder:
    """The embedder `name` selects; `threads` are the model's threads (MiniLM's onnxruntime,
    e5's engine)."""
    if name == "hashing":
        return HashingEmbedder()
    if name == "e5":
        return E5Embedder(threads=threads)
    return MiniLmEmbedder(threads=threads)
