"""The raw sqlite3 baselines of bench_wal.py: the same rows lcg writes, with nothing around them.

Each baseline does the work lcg must do for the same events, written the plain way:

- the WAL row, in its own file (lcg keeps the log apart from the droppable read models, ADR
  0002), committed first;
- the read-model rows lcg's three projections write for an `EpisodeAdded` of one passage: the
  `episodes` row (graph), the FTS5 row (text: the same table, columns and tokenizer as
  `lcg.projections.text.tables`, the neighbours' column empty as for a `text` episode) and the
  `vector_catalog` row, in a second file with lcg's own DDL, committed second;
- after the commit (appends only): the passage embedded with the same model object lcg uses,
  through an in-memory text -> vector memo (lcg's embedding cache holds the same vectors in
  SQLite), and added to a FAISS `IndexIDMap2(IndexFlatIP)`.

What the baselines leave out is lcg's own machinery: the decider, event objects and codec,
eventsourcing, positions, group commit, the text_docs/text_changes bookkeeping and the in-memory
BM25 scorer (ADR 0016).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import orjson

from lcg.domain.events import EpisodeAdded
from lcg.projections.embedding.port import Embedder
from lcg.projections.text.tables import TEXT_TABLES, TOKENIZER
from lcg.projections.wal.store import stream_id

TOPIC = EpisodeAdded.wire_name
PAGE = 5_000  # rows per executemany in the raw replay: lcg's WAL page

WAL_DDL = (
    "CREATE TABLE stored_events (id TEXT, version INTEGER, topic TEXT, state BLOB,"
    " PRIMARY KEY (id, version)) WITHOUT ROWID"
)
WAL_INSERT = "INSERT INTO stored_events (id, version, topic, state) VALUES (?, ?, ?, ?)"
REPLAY_SELECT = (
    "SELECT originator_version, state FROM stored_events WHERE originator_id=?"
    " ORDER BY originator_version"
)
EPISODE_INSERT = (
    "INSERT INTO episodes (uuid, group_id, name, content, source, source_description,"
    " reference_time, created_at, chunk_id, source_file, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)
_PASSAGES = next(table for table in TEXT_TABLES if table.kind == "passage")
FTS_DDL = (
    f"CREATE VIRTUAL TABLE {_PASSAGES.name} USING fts5({', '.join(_PASSAGES.columns)},"
    f" tokenize='{TOKENIZER}')"
)
FTS_INSERT = f"INSERT INTO {_PASSAGES.name} ({', '.join(_PASSAGES.columns)}) VALUES (?, '')"
CATALOG_INSERT = (
    "INSERT INTO vector_catalog (group_id, embedding, owner_uuid, part, text, seq)"
    " VALUES (?, 'passage_embedding', ?, 0, ?, ?)"
)


def connect(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection with lcg's journal settings: WAL, synchronous=NORMAL."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def read_model_ddl(graph: sqlite3.Connection) -> list[str]:
    """lcg's CREATE statements of `episodes` and `vector_catalog` (indexes included)."""
    rows = graph.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name IN ('episodes', 'vector_catalog')"
        " AND sql IS NOT NULL ORDER BY type DESC"
    ).fetchall()
    return [str(row[0]) for row in rows]


def open_read_model(path: Path, ddl: Sequence[str]) -> sqlite3.Connection:
    conn = connect(path)
    for statement in [*ddl, FTS_DDL]:
        conn.execute(statement)
    return conn


def payload(now: datetime, name: str, body: str, source_description: str) -> dict[str, Any]:
    """The same fields, in the same shape, as a stored EpisodeAdded."""
    stamp = now.isoformat()
    return {
        "_v": 1,
        "occurred_at": stamp,
        "episode_uuid": str(uuid.uuid4()),
        "name": name,
        "body": body,
        "source": "text",
        "source_description": source_description,
        "reference_time": stamp,
        "chunk_id": None,
        "source_file": None,
    }


def row_values(data: dict[str, Any], group: str, seq: int) -> tuple[Any, ...]:
    return (
        data["episode_uuid"],
        group,
        data["name"],
        data["body"],
        data["source"],
        data["source_description"],
        data["reference_time"],
        data["occurred_at"],
        data["chunk_id"],
        data["source_file"],
        seq,
    )


class VectorFollower:
    """After each commit: embed the new passages (memoised by text) and add them to FAISS."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.memo: dict[str, np.ndarray] = {}
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(embedder.contract.dim))

    def add(self, rows: Sequence[tuple[int, str]]) -> None:
        missing = list(dict.fromkeys(text for _, text in rows if text not in self.memo))
        if missing:
            for text, vector in zip(missing, self.embedder.embed(missing), strict=True):
                self.memo[text] = vector
        vectors = np.stack([self.memo[text] for _, text in rows]).astype(np.float32)
        self.index.add_with_ids(vectors, np.array([vec_id for vec_id, _ in rows], dtype=np.int64))


Clock = Callable[[], datetime]
Name = Callable[[int], str]


def appends(
    directory: Path,
    spec: tuple[str, str, str, Sequence[str]],
    clock: Clock,
    name: Name,
    count: int,
    batch: int,
    embedder: Embedder,
) -> float:
    """`count` episodes, `batch` per transaction (1: a transaction each): WAL commit, then the
    read-model rows' commit, then embed + FAISS add. Returns the seconds taken."""
    group, body, source_description, ddl = spec
    wal = connect(directory / "raw-wal.sqlite")
    model = open_read_model(directory / "raw-graph.sqlite", ddl)
    follower = VectorFollower(embedder)
    stream = stream_id(group).hex
    try:
        wal.execute(WAL_DDL)
        start = time.perf_counter()
        for offset in range(0, count, batch):
            seqs = range(offset + 1, min(offset + batch, count) + 1)
            datas = [payload(clock(), name(seq - 1), body, source_description) for seq in seqs]
            wal.execute("BEGIN IMMEDIATE")
            wal.executemany(
                WAL_INSERT,
                [(stream, seq, TOPIC, orjson.dumps(d)) for seq, d in zip(seqs, datas, strict=True)],
            )
            wal.execute("COMMIT")
            model.execute("BEGIN IMMEDIATE")
            added: list[tuple[int, str]] = []
            for seq, data in zip(seqs, datas, strict=True):
                model.execute(EPISODE_INSERT, row_values(data, group, seq))
                model.execute(FTS_INSERT, (data["body"],))
                cursor = model.execute(
                    CATALOG_INSERT, (group, data["episode_uuid"], data["body"], seq)
                )
                added.append((int(cursor.lastrowid or 0), data["body"]))
            model.execute("COMMIT")
            follower.add(added)
        elapsed = time.perf_counter() - start
        stored = wal.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0]
        indexed = model.execute(f"SELECT COUNT(*) FROM {_PASSAGES.name}").fetchone()[0]
        if not stored == indexed == follower.index.ntotal == count:
            raise RuntimeError("raw appends: rows, FTS5 rows or vectors != events written")
    finally:
        wal.close()
        model.close()
    return elapsed


def replay(wal: Path, target: Path, group: str, ddl: Sequence[str], count: int) -> float:
    """Read the stream's rows from lcg's WAL, decode each state, and insert the episodes,
    FTS5 and vector_catalog rows, `executemany` per page of 5,000, in one transaction."""
    source = sqlite3.connect(f"file:{wal}?mode=ro", uri=True)
    conn = open_read_model(target, ddl)
    try:
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        cursor = source.execute(REPLAY_SELECT, (stream_id(group).hex,))
        while page := cursor.fetchmany(PAGE):
            datas = [(version, orjson.loads(state)) for version, state in page]
            conn.executemany(EPISODE_INSERT, [row_values(d, group, v) for v, d in datas])
            conn.executemany(FTS_INSERT, [(d["body"],) for _, d in datas])
            conn.executemany(
                CATALOG_INSERT, [(group, d["episode_uuid"], d["body"], v) for v, d in datas]
            )
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        rows = conn.execute("SELECT COUNT(*) FROM vector_catalog").fetchone()[0]
        if rows != count:
            raise RuntimeError("raw replay: rows != events read")
    finally:
        source.close()
        conn.close()
    return elapsed
