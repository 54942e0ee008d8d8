"""The embedding cache, content-addressed by (contract, sha256 of the text).

A rebuild or replay asks the cache first, so the model runs only for text it has never
embedded under this contract. The cache is derived data (`.lcg/embeddings.sqlite`): deleting
it costs model time, never correctness.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lcg.projections.embedding.port import Embedder, EmbeddingContract, Vectors

_LOOKUP_CHUNK = 500


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """Vectors by (contract, text hash); misses go to the embedder in one batch."""

    def __init__(self, path: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (contract TEXT NOT NULL, text_hash BLOB NOT"
            " NULL, vector BLOB NOT NULL, PRIMARY KEY (contract, text_hash)) WITHOUT ROWID"
        )

    @property
    def contract(self) -> EmbeddingContract:
        return self.embedder.contract

    def close(self) -> None:
        self._conn.close()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, in order: cached vectors, the rest computed and stored."""
        dim = self.contract.dim
        result = np.zeros((len(texts), dim), dtype=np.float32)
        if not texts:
            return result
        hashes = [text_hash(text) for text in texts]
        with self._lock:
            found = self._lookup(list(dict.fromkeys(hashes)))
            missing = {h: text for h, text in zip(hashes, texts, strict=True) if h not in found}
            if missing:
                computed = self.embedder.embed(list(missing.values()))
                rows = []
                for (digest, _), vector in zip(missing.items(), computed, strict=True):
                    found[digest] = vector
                    rows.append((self.contract.key, digest, vector.astype(np.float32).tobytes()))
                self._conn.execute("BEGIN")
                self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?)", rows)
                self._conn.execute("COMMIT")
        for index, digest in enumerate(hashes):
            result[index] = found[digest]
        return result

    def _lookup(self, hashes: list[bytes]) -> dict[bytes, Vectors]:
        found: dict[bytes, Vectors] = {}
        for start in range(0, len(hashes), _LOOKUP_CHUNK):
            chunk = hashes[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            for digest, blob in self._conn.execute(
                f"SELECT text_hash, vector FROM embeddings WHERE contract=? AND text_hash IN"
                f" ({marks})",
                [self.contract.key, *chunk],
            ):
                found[digest] = np.frombuffer(blob, dtype=np.float32)
        return found
