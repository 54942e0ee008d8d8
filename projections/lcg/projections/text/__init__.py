"""The text projection: SQLite FTS5 (bm25) over names, summaries, facts and passages."""
