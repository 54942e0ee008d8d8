"""Which embedder a process makes its vectors with: the `LCG_EMBEDDER` setting (ADR 0061).

`minilm` (the default) is the bundled model; `hashing` is the deterministic stand-in with no
model (tests and demos that are not about meaning). Each has its own contract, so a workspace
switched from one to the other keeps the two vector spaces apart: the embedding cache and the
vector index files are keyed by the contract, and the texts are embedded again under the new
one at the next open (as for any change of model).
"""

from __future__ import annotations

from typing import Literal

from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import Embedder

EmbedderName = Literal["minilm", "hashing"]  # LCG_EMBEDDER (lcg.interfaces.config)


def chosen_embedder(name: EmbedderName, threads: int = 1) -> Embedder:
    """The embedder `name` selects; `threads` are MiniLM's onnxruntime threads."""
    if name == "hashing":
        return HashingEmbedder()
    return MiniLmEmbedder(threads=threads)
