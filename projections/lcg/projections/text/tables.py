"""The text projection's FTS5 tables, their tokenizer, and the one way a document is written."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

TOKENIZER = "porter unicode61 remove_diacritics 2"


@dataclass(frozen=True, slots=True)
class TextTable:
    """The FTS5 table of one kind of document: its name, columns and their bm25 weights."""

    kind: str
    name: str
    columns: tuple[str, str]
    weights: tuple[float, float]


# entity: name 2, summary 1; edge: name 1, fact 2; passage: own words 2, neighbours' 1;
# concept (agent memory, ADRs 0026, 0035): its content 1, its session neighbours' words 0.5
# (the passage ratio, with a concept's own words scoring as before).
TEXT_TABLES = (
    TextTable("entity", "fts_entities", ("name", "summary"), (2.0, 1.0)),
    TextTable("edge", "fts_edges", ("name", "fact"), (1.0, 2.0)),
    TextTable("passage", "fts_passages", ("content", "context"), (2.0, 1.0)),
    TextTable("concept", "fts_concepts", ("content", "context"), (1.0, 0.5)),
)
FTS_TABLES = {table.kind: table.name for table in TEXT_TABLES}
_BY_KIND = {table.kind: table for table in TEXT_TABLES}


def changed(conn: sqlite3.Connection, kind: str, doc_id: int) -> None:
    """Tell the in-memory scorer to re-read a document (in the projection's transaction)."""
    conn.execute("INSERT INTO text_changes (kind, doc_id) VALUES (?, ?)", (kind, doc_id))


def new_docs(
    conn: sqlite3.Connection, kind: str, docs: Sequence[tuple[str, str, int, int, int]]
) -> list[int]:
    """Insert text_docs rows (group, owner, part, seq, chat) of one kind in one statement; their
    doc_ids are the ones SQLite would give row by row (max + 1, ...)."""
    if not docs:
        return []
    (top,) = conn.execute("SELECT coalesce(max(doc_id), 0) FROM text_docs").fetchone()
    ids = list(range(int(top) + 1, int(top) + 1 + len(docs)))
    conn.executemany(
        "INSERT INTO text_docs (doc_id, group_id, kind, owner_uuid, part, seq, chat)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(doc_id, group, kind, *rest) for doc_id, (group, *rest) in zip(ids, docs, strict=True)],
    )
    return ids


def put_new(conn: sqlite3.Connection, kind: str, rows: Sequence[tuple[int, str, str]]) -> None:
    """Write new documents' FTS5 rows (doc_id, first column, second column) and log them:
    what `put(..., replace=False)` does row by row, in one statement per table."""
    table = _BY_KIND[kind]
    first, second = table.columns
    conn.executemany(f"INSERT INTO {table.name} (rowid, {first}, {second}) VALUES (?,?,?)", rows)
    conn.executemany(
        "INSERT INTO text_changes (kind, doc_id) VALUES (?, ?)", [(kind, row[0]) for row in rows]
    )


def put(
    conn: sqlite3.Connection, kind: str, doc_id: int, columns: Sequence[str], *, replace: bool
) -> None:
    """Write a document's FTS5 row (replacing the old one when `replace`) and log the change."""
    table = _BY_KIND[kind]
    if replace:
        conn.execute(f"DELETE FROM {table.name} WHERE rowid=?", (doc_id,))
    first, second = table.columns
    conn.execute(
        f"INSERT INTO {table.name} (rowid, {first}, {second}) VALUES (?,?,?)",
        (doc_id, *columns),
    )
    changed(conn, kind, doc_id)
