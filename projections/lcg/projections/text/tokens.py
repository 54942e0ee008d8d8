"""Text to index terms with the FTS5 tables' own tokenizer, so both sides always agree.

SQLite exposes no tokenizer function, so a private in-memory FTS5 table with the projection's
tokenizer does the work: rows go in, `fts5vocab(instance)` gives back each token's term and
column. One in-memory connection per thread (sqlite3 connections are not shared across threads).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

COLUMNS = 2  # every FTS5 table of the projection has two columns


class Tokenizer:
    """An FTS5 tokenizer (e.g. `porter unicode61 remove_diacritics 2`) callable from Python."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._local = threading.local()

    def _scratch(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None)
            conn.execute(f"CREATE VIRTUAL TABLE s USING fts5(c0, c1, tokenize='{self.spec}')")
            conn.execute("CREATE VIRTUAL TABLE si USING fts5vocab(s, instance)")
            self._local.conn = conn
        return conn

    def weighted(
        self, rows: Sequence[tuple[int, Sequence[str]]], weights: tuple[float, float]
    ) -> list[tuple[int, str, float, int]]:
        """(key, columns) rows -> (key, term, column-weighted count, count), one per distinct
        term of each row (SQLite does the counting: 1.3x faster than counting tokens here)."""
        if not rows:
            return []
        conn = self._scratch()
        conn.execute("BEGIN")
        try:
            conn.executemany(
                "INSERT INTO s (rowid, c0, c1) VALUES (?, ?, ?)",
                [(key, *(list(columns) + [""] * COLUMNS)[:COLUMNS]) for key, columns in rows],
            )
            found = conn.execute(
                "SELECT doc, term, sum(CASE col WHEN 'c0' THEN ? ELSE ? END), count(*)"
                " FROM si GROUP BY doc, term",
                weights,
            ).fetchall()
        finally:
            conn.execute("ROLLBACK")  # the scratch table stays empty
        return found

    def terms(self, text: str) -> list[str]:
        """The terms of one text, in order of appearance."""
        conn = self._scratch()
        conn.execute("BEGIN")
        try:
            conn.execute("INSERT INTO s (rowid, c0, c1) VALUES (1, ?, '')", (text,))
            rows = conn.execute("SELECT term FROM si ORDER BY offset").fetchall()
        finally:
            conn.execute("ROLLBACK")
        return [str(row[0]) for row in rows]
