"""The embedding cache, content-addressed by (contract, sha256 of the text).

A rebuild or replay asks the cache first, so the model runs only for text it has never
embedded under this contract. The cache is derived data (`.lcg/embeddings.sqlite`): deleting
it costs model time, never correctness. So it never trusts itself: each row carries a checksum
of its key and vector, verified on every read (a bad row is dropped and embedded again), and a
file SQLite finds damaged (at open, by `PRAGMA quick_check`, or by any later statement) is set
aside and started afresh (docs/adr/0020-damaged-derivable-files.md).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from lcg.projections.damage import Repair, is_corruption, report, set_aside, sqlite_problem
from lcg.projections.embedding import stored as kept_vectors
from lcg.projections.embedding.port import Embedder, EmbeddingContract, Vectors
from lcg.projections.faults import StorageFailure
from lcg.projections.own_files import refuse_foreign_sqlite

log = logging.getLogger(__name__)

_LOOKUP_CHUNK = 500
FRESH = "set aside; a new cache is started (texts are embedded again when next needed)"


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def row_checksum(contract: str, digest: bytes, vector: bytes) -> bytes:
    """What a row must carry: a hash of its key and its vector bytes."""
    return checksummer(contract)(digest, vector)


def checksummer(contract: str) -> Callable[[bytes, bytes], bytes]:
    """`row_checksum` of one contract, whose part is hashed once: a replay's read checks
    thousands of rows (8,000 in half the time)."""
    head = hashlib.blake2b(digest_size=16)
    _feed(head, contract.encode("utf-8"))

    def checksum(digest: bytes, vector: bytes) -> bytes:
        hasher = head.copy()
        _feed(hasher, digest)
        _feed(hasher, vector)
        return hasher.digest()

    return checksum


def _feed(hasher: hashlib.blake2b, part: bytes) -> None:
    hasher.update(len(part).to_bytes(4, "little"))
    hasher.update(part)


class EmbeddingCache:
    """Vectors by (contract, text hash); misses go to the embedder in one batch."""

    def __init__(
        self,
        path: Path,
        embedder: Embedder,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.path = path
        self.embedder = embedder
        self.clock = clock
        self.repairs: list[Repair] = []  # damaged files and rows found, with what was done
        self._lock = threading.Lock()
        refuse_foreign_sqlite(path, "open the embedding cache")  # before SQLite follows a link
        problem = sqlite_problem(path)
        if problem is not None:
            self._set_aside(problem)
        try:
            self._conn = self._connect()
        except sqlite3.DatabaseError as error:
            if not is_corruption(error):  # a full disk, I/O: named, never taken for damage
                raise StorageFailure(path, "open the embedding cache", error) from error
            self._set_aside(str(error))
            self._conn = self._connect()

    @property
    def contract(self) -> EmbeddingContract:
        return self.embedder.contract

    def close(self) -> None:
        self._conn.close()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, in order: cached vectors, the rest computed and stored.

        The model runs outside the cache's lock, so that one thread's long batch (the vector
        follower's) never holds up another's few texts (the intent processor's, ADR 0047)."""
        dim = self.contract.dim
        result = np.zeros((len(texts), dim), dtype=np.float32)
        if not texts:
            return result
        if any(kept_vectors.is_stored(text) for text in texts):  # a vector kept in the log (0095)
            rest = [text for text in texts if not kept_vectors.is_stored(text)]
            computed = iter(self.embed(rest))
            for index, text in enumerate(texts):
                is_kept = kept_vectors.is_stored(text)
                result[index] = kept_vectors.stored_vector(text, dim) if is_kept else next(computed)
            return result
        hashes = [text_hash(text) for text in texts]
        found = self._found(hashes)
        missing = {h: text for h, text in zip(hashes, texts, strict=True) if h not in found}
        if missing:
            self._compute(missing, found)
        for index, digest in enumerate(hashes):
            result[index] = found[digest]
        return result

    def cached(self, texts: Sequence[str]) -> dict[str, Vectors]:
        """The vectors the cache holds for these texts (a stored vector's text holds its
        own); the model never runs."""
        dim = self.contract.dim
        kept = {
            text: kept_vectors.stored_vector(text, dim)
            for text in texts
            if kept_vectors.is_stored(text)
        }
        hashes = {text_hash(text): text for text in texts if text not in kept}
        found = self._found(list(hashes)) if hashes else {}
        return {**kept, **{hashes[digest]: vector for digest, vector in found.items()}}

    def _found(self, hashes: list[bytes]) -> dict[bytes, Vectors]:
        # In key order: each chunk of the IN list then reads neighbouring pages of the
        # WITHOUT ROWID table, instead of pages all over the file (half the time for 8,000)
        with self._lock:
            try:
                return self._lookup(sorted(set(hashes)))
            except sqlite3.DatabaseError as error:
                if not is_corruption(error):
                    raise StorageFailure(self.path, "read the embedding cache", error) from error
                self._start_afresh(str(error))
                return {}

    def _compute(self, missing: dict[bytes, str], found: dict[bytes, Vectors]) -> None:
        computed = self.embedder.embed(list(missing.values()))
        key = self.contract.key
        rows = []
        for digest, vector in zip(missing, computed, strict=True):
            found[digest] = vector
            blob = vector.astype(np.float32).tobytes()
            rows.append((key, digest, blob, row_checksum(key, digest, blob)))
        with self._lock:
            try:
                self._store(rows)
            except sqlite3.DatabaseError as error:
                if not is_corruption(error):  # a full disk: named, never taken for damage
                    raise StorageFailure(
                        self.path, "write to the embedding cache", error
                    ) from error
                self._start_afresh(str(error))
                self._store(rows)

    def _store(self, rows: list[tuple[str, bytes, bytes, bytes]]) -> None:
        self._conn.execute("BEGIN")
        try:
            self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?,?)", rows)
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _lookup(self, hashes: list[bytes]) -> dict[bytes, Vectors]:
        found: dict[bytes, Vectors] = {}
        key, size = self.contract.key, 4 * self.contract.dim
        checksum = checksummer(key)
        bad: list[bytes] = []
        for start in range(0, len(hashes), _LOOKUP_CHUNK):
            chunk = hashes[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            for digest, blob, stored in self._conn.execute(
                f"SELECT text_hash, vector, checksum FROM embeddings WHERE contract=? AND"
                f" text_hash IN ({marks})",
                [key, *chunk],
            ):
                if stored != checksum(digest, blob) or len(blob) != size:
                    bad.append(digest)
                    continue
                found[digest] = np.frombuffer(blob, dtype=np.float32)
        if bad:
            self._drop_rows(bad)
        return found

    def _drop_rows(self, bad: list[bytes]) -> None:
        """Rows whose bytes changed: delete them; their texts are embedded again."""
        key = self.contract.key
        self._conn.executemany(
            "DELETE FROM embeddings WHERE contract=? AND text_hash=?", [(key, d) for d in bad]
        )
        self.repairs.append(
            report(
                self.path,
                f"{len(bad)} cached vector(s) failed their checksum",
                "rows dropped; their texts are embedded again",
                None,
            )
        )

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (contract TEXT NOT NULL, text_hash BLOB NOT"
                " NULL, vector BLOB NOT NULL, checksum BLOB, PRIMARY KEY (contract, text_hash))"
                " WITHOUT ROWID"
            )
            _add_checksums(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _start_afresh(self, problem: str) -> None:
        """A statement met corruption: set the file aside and continue on a new one."""
        self._conn.close()
        self._set_aside(problem)
        self._conn = self._connect()

    def _set_aside(self, problem: str) -> None:
        aside = set_aside(self.path, self.clock(), sqlite=True)
        self.repairs.append(report(self.path, problem, FRESH, aside))


def _add_checksums(conn: sqlite3.Connection) -> None:
    """A cache written before row checksums: add the column and checksum the rows (once)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(embeddings)")}
    if "checksum" in columns:
        return
    conn.execute("BEGIN")
    conn.execute("ALTER TABLE embeddings ADD COLUMN checksum BLOB")
    rows = conn.execute("SELECT contract, text_hash, vector FROM embeddings").fetchall()
    conn.executemany(
        "UPDATE embeddings SET checksum=? WHERE contract=? AND text_hash=?",
        [(row_checksum(c, d, v), c, d) for c, d, v in rows if np.isfinite(_floats(v)).all()],
    )
    conn.execute("COMMIT")
    log.info("embedding cache: %d rows given checksums", len(rows))


def _floats(blob: bytes) -> Vectors:
    if len(blob) % 4:
        return np.array([np.nan], dtype=np.float32)
    return np.frombuffer(blob, dtype=np.float32)
