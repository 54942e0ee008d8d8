"""Text to index terms with the FTS5 tables' own tokenizer, so both sides always agree.

SQLite exposes no tokenizer function, so a private in-memory FTS5 table with the projection's
tokenizer does the work: rows go in, `fts5vocab(instance)` gives back each token's term and
column. One connection per thread (sqlite3 connections are not shared across threads).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

_local = threading.local()
COLUMNS = 2  # every FTS5 table of the projection has two columns


def _scratch(tokenizer: str) -> sqlite3.Connection:
    conn: sqlite3.Connection | None = getattr(_local, tokenizer, None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=True)
        conn.execute(f"CREATE VIRTUAL TABLE s USING fts5(c0, c1, tokenize='{tokenizer}')")
        conn.execute("CREATE VIRTUAL TABLE si USING fts5vocab(s, instance)")
        setattr(_local, tokenizer, conn)
    return conn


def tokenize_rows(
    tokenizer: str, rows: Sequence[tuple[int, Sequence[str]]]
) -> dict[int, list[tuple[str, int]]]:
    """(key, columns) rows -> key -> every token of the row as (term, column), in any order."""
    if not rows:
        return {}
    conn = _scratch(tokenizer)
    found: dict[int, list[tuple[str, int]]] = {key: [] for key, _ in rows}
    conn.execute("BEGIN")
    try:
        conn.executemany(
            "INSERT INTO s (rowid, c0, c1) VALUES (?, ?, ?)",
            [(key, *(list(columns) + [""] * COLUMNS)[:COLUMNS]) for key, columns in rows],
        )
        for key, column, term in conn.execute("SELECT doc, col, term FROM si"):
            found[key].append((term, 0 if column == "c0" else 1))
    finally:
        conn.execute("ROLLBACK")  # the scratch table stays empty
    return found


def tokenize(tokenizer: str, text: str) -> list[str]:
    """The terms of one text, in order of appearance."""
    conn = _scratch(tokenizer)
    conn.execute("BEGIN")
    try:
        conn.execute("INSERT INTO s (rowid, c0, c1) VALUES (1, ?, '')", (text,))
        rows = conn.execute("SELECT term FROM si ORDER BY offset").fetchall()
    finally:
        conn.execute("ROLLBACK")
    return [str(row[0]) for row in rows]
