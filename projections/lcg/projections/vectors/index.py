"""FAISS indexes derived from the vector catalog: one per (contract, group, kind).

A kind is what the vectors belong to (entity, edge, passage); an entity index holds both of
its embeddings (name and summary).

Exact `IndexIDMap2(IndexFlatIP)` over L2-normalised vectors (inner product = cosine), ids are
the catalog's vec_ids. After every commit the owners an event touched are synced against the
catalog; at start an index file is loaded and fully synced (ids added or removed by diff), so a
stale, missing or corrupt file costs cache reads, never model calls for cached text.
Files are written to a temp name and renamed at checkpoints (docs/adr/0010-vector-projection.md),
with a sha256 verified at load; a damaged file is set aside and rebuilt (`files`, ADR 0020).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from lcg.projections.damage import Repair
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.port import Vectors
from lcg.projections.faults import StorageFailure, VectorReadRefused
from lcg.projections.text.scorer import generation
from lcg.projections.vectors import files
from lcg.projections.vectors.catalog import (
    CONCEPT,
    FACT,
    NAME,
    PASSAGE,
    SUMMARY,
    touched_owners,
)
from lcg.projections.wal.store import RecordedEvent

EMBEDDINGS_OF_KIND = {
    "entity": (NAME, SUMMARY),
    "edge": (FACT,),
    "passage": (PASSAGE,),
    "concept": (CONCEPT,),
}
_EMBED_CHUNK = 256
_faiss_thread = threading.local()


def _one_openmp_thread() -> None:
    """FAISS on one OpenMP thread in the calling thread. `omp_set_num_threads` sets the
    calling thread's count only: every other thread (the socket service's workers, the intent
    processor, MCP's worker threads) starts with one OpenMP thread per core, and two made a
    one-vector query of a 60-vector index take 2.5-8.5 ms instead of 0.05 ms on a busy 2-core
    box (bench/bench_memory.py)."""
    if not getattr(_faiss_thread, "single", False):
        faiss.omp_set_num_threads(1)
        _faiss_thread.single = True


@dataclass
class _Index:
    index: Any  # IndexIDMap2(IndexFlatIP) or, above the threshold, IndexIVFFlat
    owners: dict[str, set[int]] = field(default_factory=dict)
    dirty: bool = False
    # catalog ids left out at open because their texts need the model: the follower adds
    # them (`backfill`) while the service serves (ADR 0047)
    deferred: set[int] = field(default_factory=set)


def _ids_of(index: Any) -> set[int]:
    """Every id an index holds (flat: its id map; IVF: its inverted lists)."""
    if isinstance(index, faiss.IndexIDMap2):
        return set(faiss.vector_to_array(index.id_map).tolist())
    lists = index.invlists
    ids: set[int] = set()
    for number in range(index.nlist):
        size = lists.list_size(number)
        if size:
            ids.update(faiss.rev_swig_ptr(lists.get_ids(number), size).tolist())
    return ids


IVF_NPROBE = 64  # lists probed per query: top-10 overlap with exact 0.98 at 100k (ADR 0016)


def to_ivf(flat: faiss.IndexIDMap2, nprobe: int = IVF_NPROBE) -> Any:
    """The same vectors and ids in a trained, removable IVF-Flat index (hashtable direct map)."""
    count, dim = flat.ntotal, flat.d
    ids = faiss.vector_to_array(flat.id_map).astype(np.int64)
    vectors = flat.index.reconstruct_n(0, count)
    # 4 sqrt(n) lists, but at least 39 training points per list (faiss's minimum)
    nlist = max(16, min(int(4 * count**0.5), count // 39))
    quantizer = faiss.IndexFlatIP(dim)
    ivf = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    ivf.train(vectors)
    ivf.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]
    ivf.add_with_ids(vectors, ids)
    ivf.nprobe = min(nprobe, nlist)
    return ivf


CatalogRow = tuple[int, str, str, str]  # vec_id, embedding, owner_uuid, text


def _owner_rows(conn: sqlite3.Connection, group: str, owners: set[str]) -> list[CatalogRow]:
    """The owners' catalog rows, looked up by the owner index (`+group_id`: never a scan of
    the whole group's rows)."""
    marks = ",".join("?" * len(owners))
    return [
        (int(row[0]), str(row[1]), str(row[2]), str(row[3]))
        for row in conn.execute(
            "SELECT vec_id, embedding, owner_uuid, text FROM vector_catalog WHERE +group_id=?"
            f" AND owner_uuid IN ({marks})",
            [group, *owners],
        )
    ]


@dataclass(frozen=True, slots=True)
class Hit:
    """A vector hit: catalog id and cosine similarity."""

    vec_id: int
    score: float


class VectorIndex:
    """All FAISS indexes of one workspace for the embedder's contract."""

    def __init__(
        self,
        directory: Path,
        cache: EmbeddingCache,
        checkpoint_every: int = 10_000,
        ivf_threshold: int = 20_000,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        faiss.omp_set_num_threads(1)  # two OpenMP threads made single queries 2.5-130x slower
        self.cache = cache
        self.directory = directory / cache.contract.key
        self.directory.mkdir(parents=True, exist_ok=True)
        self._indexes: dict[tuple[str, str], _Index] = {}
        self._lock = threading.RLock()
        self.failure: str | None = None
        self.loaded_from_files = 0
        self.checkpoint_every = checkpoint_every
        self.ivf_threshold = ivf_threshold  # above this many vectors an index becomes IVF
        self._changes = 0  # vectors added or removed since the last checkpoint
        self.clock = clock
        self.generation = ""  # of the graph database the catalog lives in
        self.repairs: list[Repair] = []  # damaged files found at open, set aside and rebuilt

    # -- lifecycle ------------------------------------------------------------------------

    def open(self, conn: sqlite3.Connection) -> dict[str, list[CatalogRow]]:
        """Load every group's files and sync them with the catalog, as far as the embedding
        cache holds the vectors; returns, per group, the rows whose texts need the model,
        left for `backfill` (a restart with a backlog serves at once, ADR 0047)."""
        backlog: dict[str, list[CatalogRow]] = {}
        with self._lock:
            self._indexes.clear()
            self.generation = generation(conn)
            for (group,) in conn.execute("SELECT DISTINCT group_id FROM vector_catalog"):
                for kind in EMBEDDINGS_OF_KIND:
                    loaded = self._load(group, kind)
                    if loaded is not None:
                        self._indexes[(group, kind)] = loaded
                        self.loaded_from_files += 1
                deferred = self.sync_group(conn, group, defer=True)
                if deferred:
                    backlog[group] = deferred
        return backlog

    def checkpoint(self) -> int:
        """Write every changed index to its file (temp file + rename); returns how many."""
        written = 0
        with self._lock:
            for (group, kind), entry in self._indexes.items():
                if not entry.dirty:
                    continue
                path = self._path(group, kind)
                try:
                    if entry.index.ntotal == 0:
                        path.unlink(missing_ok=True)
                    else:
                        files.store(path, self.generation, entry.index)
                except OSError as error:  # a read-only or full disk: named, never "internal"
                    raise StorageFailure(path, "write the vector index", error) from error
                entry.dirty = False
                written += 1
            self._changes = 0
        return written

    def drop_all(self) -> None:
        with self._lock:
            self._indexes.clear()
            for path in self.directory.glob("*.faiss"):
                path.unlink()

    # -- keeping up with the catalog --------------------------------------------------------

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None:
        """Bring the indexes of the touched owners in line with the just-committed catalog."""
        whole: set[str] = set()
        owners: dict[str, set[str]] = {}
        for item in recorded:
            touched = touched_owners(item.event)
            if touched is None:
                whole.add(item.group_id)
            elif touched:
                owners.setdefault(item.group_id, set()).update(touched)
        # Read the owners' catalog rows once and run the model on their texts before taking
        # the index lock, so that searches never wait for it (ADR 0022).
        fetched = {
            group: _owner_rows(conn, group, members)
            for group, members in owners.items()
            if group not in whole
        }
        ahead = self._embed_texts([row[3] for rows in fetched.values() for row in rows])
        with self._lock:
            for group in whole:
                self.sync_group(conn, group)
            for group, rows in fetched.items():
                self._sync_owners(group, owners[group], rows, ahead)
            if self._changes >= self.checkpoint_every:
                self.checkpoint()

    def _embed_texts(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """text -> vector, through the cache, in chunks."""
        vectors: dict[str, np.ndarray] = {}
        for start in range(0, len(texts), _EMBED_CHUNK):
            chunk = texts[start : start + _EMBED_CHUNK]
            vectors.update(zip(chunk, self.cache.embed(chunk), strict=True))
        return vectors

    def rebuilt(self, conn: sqlite3.Connection, groups: Iterable[str] | None) -> None:
        """After a projection rebuild (or a clear): full sync of the groups (None: all)."""
        with self._lock:
            if groups is None:
                known = {group for group, _ in self._indexes}
                groups = known | {
                    row[0] for row in conn.execute("SELECT DISTINCT group_id FROM vector_catalog")
                }
            for group in groups:
                self.sync_group(conn, group)

    def sync_group(
        self, conn: sqlite3.Connection, group: str, *, defer: bool = False
    ) -> list[CatalogRow]:
        """Bring the group's indexes in line with its catalog rows. With `defer`, rows whose
        vectors the cache does not hold are left out (`deferred`) and returned."""
        rows = conn.execute(
            "SELECT vec_id, embedding, owner_uuid, text FROM vector_catalog WHERE group_id=?",
            (group,),
        ).fetchall()
        left: list[CatalogRow] = []
        for kind, embeddings in EMBEDDINGS_OF_KIND.items():
            wanted = [row for row in rows if row[1] in embeddings]
            entry = self._indexes.get((group, kind))
            if entry is None and not wanted:
                continue
            entry = entry or self._new_entry(group, kind)
            present = _ids_of(entry.index)
            self._remove(entry, present - {row[0] for row in wanted})
            missing = [row for row in wanted if row[0] not in present]
            known: Mapping[str, np.ndarray] | None = None
            entry.deferred = set()
            if defer and missing:
                known = self.cache.cached([row[3] for row in missing])
                later = [row for row in missing if row[3] not in known]
                missing = [row for row in missing if row[3] in known]
                entry.deferred = {row[0] for row in later}
                left.extend(later)
            self._add(entry, missing, known)
            entry.owners = {}
            for vec_id, _, owner, _ in wanted:
                entry.owners.setdefault(owner, set()).add(vec_id)
        return left

    def backfill(self, conn: sqlite3.Connection, group: str, rows: Sequence[CatalogRow]) -> None:
        """Add rows `open` deferred: embedded before taking the lock (searches never wait for
        the model); a row a later commit removed or re-synced meanwhile is no longer deferred
        and is skipped."""
        vectors = self._embed_texts([row[3] for row in rows])
        with self._lock:
            for kind, embeddings in EMBEDDINGS_OF_KIND.items():
                entry = self._indexes.get((group, kind))
                if entry is None:
                    continue
                due = [row for row in rows if row[1] in embeddings and row[0] in entry.deferred]
                entry.deferred.difference_update(row[0] for row in due)
                self._add(entry, due, vectors)

    def deferred(self) -> int:
        """Catalog rows not in the indexes yet because their texts wait for the model."""
        with self._lock:
            return sum(len(entry.deferred) for entry in self._indexes.values())

    def _sync_owners(
        self,
        group: str,
        owners: set[str],
        rows: Sequence[CatalogRow],
        vectors: Mapping[str, np.ndarray],
    ) -> None:
        for kind, embeddings in EMBEDDINGS_OF_KIND.items():
            wanted = [row for row in rows if row[1] in embeddings]
            entry = self._indexes.get((group, kind))
            if entry is None and not wanted:
                continue
            entry = entry or self._new_entry(group, kind)
            old = set().union(*(entry.owners.get(o, set()) for o in owners))
            self._remove(entry, old - {row[0] for row in wanted})
            self._add(entry, [row for row in wanted if row[0] not in old], vectors)
            for owner in owners:
                entry.owners.pop(owner, None)
            for vec_id, _, owner, _ in wanted:
                entry.owners.setdefault(owner, set()).add(vec_id)

    # -- search ---------------------------------------------------------------------------

    def search(self, kind: str, groups: Sequence[str] | None, query: Vectors, k: int) -> list[Hit]:
        """Top-k by cosine over the kind's indexes of the groups (None: every group).

        Equal scores rank by vec_id, and each index is asked for a margin beyond k, so that
        which of several tied vectors make the cut does not depend on the order FAISS holds
        them in (which differs between a rebuilt and an incrementally built index).

        A query whose width is not the index's is refused (VectorReadRefused) before any index
        is read: the contract changed under the query (M-ERR-023)."""
        _one_openmp_thread()
        hits: list[Hit] = []
        wanted = 2 * k + 16
        width = int(query.shape[-1])
        if width != self.cache.contract.dim:
            raise VectorReadRefused(kind, width, self.cache.contract.dim)
        with self._lock:
            for (group, index_kind), entry in self._indexes.items():
                if index_kind != kind or entry.index.ntotal == 0:
                    continue
                if groups is not None and group not in groups:
                    continue
                if entry.index.d != width:
                    raise VectorReadRefused(kind, width, entry.index.d)
                found = min(wanted, entry.index.ntotal)
                scores, ids = entry.index.search(query.reshape(1, -1), found)
                hits.extend(
                    Hit(int(i), float(s)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0
                )
        hits.sort(key=lambda hit: (-hit.score, hit.vec_id))
        return hits[:k]

    def count(self) -> int:
        with self._lock:
            return sum(entry.index.ntotal for entry in self._indexes.values())

    # -- internals ------------------------------------------------------------------------

    def _new_entry(self, group: str, kind: str) -> _Index:
        entry = _Index(faiss.IndexIDMap2(faiss.IndexFlatIP(self.cache.contract.dim)))
        self._indexes[(group, kind)] = entry
        return entry

    def _add(
        self,
        entry: _Index,
        rows: Sequence[CatalogRow],
        known: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """Add the rows' vectors: from `known` (embedded ahead) or through the cache."""
        if known is None and len(rows) > _EMBED_CHUNK:
            # a whole group (a rebuild, an open): what the cache holds in one pass in key
            # order; the model then runs chunk by chunk on the rest only
            known = self.cache.cached([row[3] for row in rows])
        for start in range(0, len(rows), _EMBED_CHUNK):
            chunk = rows[start : start + _EMBED_CHUNK]
            texts = [row[3] for row in chunk]
            if known is not None and all(text in known for text in texts):
                vectors = np.stack([known[text] for text in texts])
            else:
                vectors = self.cache.embed(texts)
            ids = np.array([row[0] for row in chunk], dtype=np.int64)
            entry.index.add_with_ids(np.ascontiguousarray(vectors), ids)
            entry.dirty = True
            self._changes += len(chunk)
        if isinstance(entry.index, faiss.IndexIDMap2) and entry.index.ntotal > self.ivf_threshold:
            # Exact search grows linearly (16 ms per query at 100k here); IVF stays removable.
            entry.index = to_ivf(entry.index)

    def _remove(self, entry: _Index, ids: set[int]) -> None:
        entry.deferred.difference_update(ids)
        if ids:
            entry.index.remove_ids(np.array(sorted(ids), dtype=np.int64))
            entry.dirty = True
            self._changes += len(ids)

    def _path(self, group: str, kind: str) -> Path:
        digest = hashlib.sha256(group.encode()).hexdigest()[:24]
        return self.directory / f"{digest}-{kind}.faiss"

    def _load(self, group: str, kind: str) -> _Index | None:
        dim = self.cache.contract.dim
        loaded = files.load(self._path(group, kind), self.generation, dim, self.clock())
        if loaded.repair is not None:
            self.repairs.append(loaded.repair)
        index = loaded.index
        if index is None:
            return None
        if isinstance(index, faiss.IndexIVFFlat):
            index.nprobe = min(IVF_NPROBE, index.nlist)
        elif index.ntotal > self.ivf_threshold:  # written under a higher threshold
            return _Index(to_ivf(index), dirty=True)
        return _Index(index)
