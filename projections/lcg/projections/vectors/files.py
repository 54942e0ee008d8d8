"""FAISS index files: written with a sha256 and the graph generation, verified when loaded.

A file whose checksum fails (or that FAISS cannot read) is damaged: it is set aside and the
index is rebuilt from the catalog (embeddings come from the cache). A file of another graph
generation was made from a catalog that no longer exists (its vec_ids may mean other rows):
it is stale, rebuilt the same way and overwritten at the next checkpoint. A file written
before checksums is treated as stale too (docs/adr/0020-damaged-derivable-files.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from lcg.projections import checksummed
from lcg.projections.damage import Repair, report, set_aside

log = logging.getLogger(__name__)

REBUILD = "set aside; the index is rebuilt from the vector catalog (vectors from the cache)"


@dataclass(frozen=True, slots=True)
class Loaded:
    """What loading a file gave: an index (None: build it from the catalog), and a repair."""

    index: Any | None
    repair: Repair | None = None


def store(path: Path, generation: str, index: Any) -> None:
    """Serialise the index and write it with its checksum (temp file + fsync + rename)."""
    checksummed.write(path, generation, faiss.serialize_index(index).data)


def load(path: Path, generation: str, dim: int, now: datetime) -> Loaded:
    """The index in `path` if it is whole, of this generation and of the right shape."""
    if not path.exists():
        return Loaded(None)
    try:
        sealed = checksummed.read(path)
    except checksummed.NotChecksummed:
        log.info("vector index %s was written before checksums: rebuilding it", path)
        return Loaded(None)
    except (checksummed.ChecksumMismatch, OSError) as error:
        return _damaged(path, "checksum mismatch" if _is_mismatch(error) else str(error), now)
    if sealed.generation != generation:
        log.info("vector index %s follows another graph database: rebuilding it", path)
        return Loaded(None)
    return _deserialize(path, sealed.payload, dim, now)


def _deserialize(path: Path, payload: bytes, dim: int, now: datetime) -> Loaded:
    try:
        index = faiss.deserialize_index(np.frombuffer(payload, dtype=np.uint8))
    except Exception as error:  # noqa: BLE001 (a file FAISS cannot read is damaged)
        return _damaged(path, f"FAISS cannot read it: {error}", now)
    if not isinstance(index, faiss.IndexIDMap2 | faiss.IndexIVFFlat) or index.d != dim:
        return _damaged(path, "wrong index type or dimension", now)
    return Loaded(index)


def _is_mismatch(error: BaseException) -> bool:
    return isinstance(error, checksummed.ChecksumMismatch)


def _damaged(path: Path, problem: str, now: datetime) -> Loaded:
    aside = set_aside(path, now)
    return Loaded(None, report(path, problem, REBUILD, aside))
