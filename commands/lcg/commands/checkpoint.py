"""knowledge_prepare_checkpoint (P-134): make the workspace's files a consistent file-level
backup. ADR 0036.

Every write of lcg lands in three SQLite databases in WAL journal mode (wal.sqlite, the log;
graph.sqlite, the projections; embeddings.sqlite, the embedding cache) and, derivably, in the
FAISS and BM25 scorer files. A copy of `.lcg/` taken while a database's `-wal` sidecar holds
frames the main file lacks is only consistent if the sidecar is copied with it at the same
instant. Holding off every writer batch, this folds each sidecar into its main file and
truncates it (`PRAGMA wal_checkpoint(TRUNCATE)`), and writes the index files, so that the main
files alone are the whole state until the next write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from lcg.projections.faults import StorageFailure

if TYPE_CHECKING:
    from lcg.commands.writer import Writer
    from lcg.projections.layout import WorkspaceFiles
    from lcg.projections.text.scorer import TextScorer
    from lcg.projections.vectors.index import VectorIndex

BUSY_TIMEOUT_MS = 5_000  # how long a checkpoint waits for a reader or the cache's writer
SETTLE_TIMEOUT_S = 30.0  # how long the vector follower gets to catch up first


class CheckpointedFile(TypedDict):
    file: str  # relative to the workspace's .lcg/
    flushed: bool
    detail: str


class CheckpointResult(TypedDict):
    success: bool
    files_flushed: int
    files_total: int
    files: list[CheckpointedFile]


def sqlite_checkpoint(path: Path) -> CheckpointedFile:
    """Fold `path`'s -wal sidecar into it and truncate the sidecar to zero bytes."""
    name = path.name
    if not path.exists():
        return CheckpointedFile(file=name, flushed=True, detail="absent: nothing to flush")
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            busy, frames, moved = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as error:
        if "readonly" in str(error).lower() or "read-only" in str(error).lower():
            raise StorageFailure(path, "checkpoint", error) from error
        return CheckpointedFile(file=name, flushed=False, detail=f"not flushed: {error}")
    if busy:
        return CheckpointedFile(
            file=name,
            flushed=False,
            detail=f"busy: {moved} of {frames} frames moved; a reader held the rest, try again",
        )
    return CheckpointedFile(file=name, flushed=True, detail="-wal folded into the file, truncated")


def prepare_checkpoint(
    paths: WorkspaceFiles,
    writer: Writer,
    vectors: VectorIndex,
    text_scorer: TextScorer,
    settle: Callable[[float], bool],
) -> CheckpointResult:
    """Checkpoint every database and write every index file, with writes held off. `settle`
    waits, at most the seconds given, for the vector indexes to hold every acknowledged write
    (the FAISS files then hold them all)."""
    settled = settle(SETTLE_TIMEOUT_S)
    files: list[CheckpointedFile] = []
    with writer.exclusive():
        vectors.checkpoint()
        files.append(
            CheckpointedFile(
                file=paths.vectors_dir.name,
                flushed=settled,
                detail=(
                    "changed index files written"
                    if settled
                    else "the vector follower is still behind; the index files are rebuilt "
                    "from graph.sqlite at open, so a backup stays consistent"
                ),
            )
        )
        # The scorer's checkpoint prunes its change log in graph.sqlite: before that file's.
        try:
            text_scorer.checkpoint(writer.runner.conn)
        except OSError as error:  # a read-only or full disk: named, never "internal"
            raise StorageFailure(paths.text_scorer_path, "write", error) from error
        files.append(
            CheckpointedFile(
                file=paths.text_scorer_path.name, flushed=True, detail="scorer file written"
            )
        )
        if paths.store_url:  # the log is the server's: each append committed there (ADR 0073)
            files.append(
                CheckpointedFile(
                    file=paths.log_where,
                    flushed=True,
                    detail="the log is in PostgreSQL: every append is committed on the server;"
                    " back it up there (pg_dump), or `lcg store copy` it to a file",
                )
            )
        else:
            files.append(sqlite_checkpoint(paths.wal_path))
        for path in (paths.graph_path, paths.embeddings_path):
            files.append(sqlite_checkpoint(path))
    flushed = sum(1 for f in files if f["flushed"])
    return CheckpointResult(
        success=flushed == len(files), files_flushed=flushed, files_total=len(files), files=files
    )
