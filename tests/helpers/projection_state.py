"""What two projections must agree on beyond their tables: the FTS5 documents and vector catalog."""

from __future__ import annotations

import sqlite3
from typing import Any

from lcg.interfaces.workspace import Workspace
from lcg.projections.text import reader

SEARCH_ROWS = {
    "text": "SELECT d.group_id, d.kind, d.owner_uuid, d.part, coalesce(e.name, r.name, ''),"
    " coalesce(e.summary, r.fact, p.content) FROM text_docs d"
    " LEFT JOIN fts_entities e ON e.rowid = d.doc_id AND d.kind = 'entity'"
    " LEFT JOIN fts_edges r ON r.rowid = d.doc_id AND d.kind = 'edge'"
    " LEFT JOIN fts_passages p ON p.rowid = d.doc_id AND d.kind = 'passage'",
    "vectors": "SELECT group_id, embedding, owner_uuid, part, text, seq FROM vector_catalog",
}


# The search projections' row ids (doc_id, vec_id) are storage details: compare content.


def dump(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = {
        table: [tuple(row) for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")]
        for table in (
            "entities",
            "relationships",
            "episodes",
            "mentions",
            "cross_group_pointers",
            "projection_positions",
        )
    }
    for name, query in SEARCH_ROWS.items():
        tables[name] = sorted(tuple(row) for row in conn.execute(query))
    return tables


def assert_scorer_agrees_with_fts5(ws: Workspace, group: str = "g1") -> None:
    """The in-memory BM25 scorer returns FTS5's documents and scores (ADR 0016)."""
    conn = ws.reader()
    for kind in ("entity", "edge", "passage"):
        for query in ("ada", "about bob", "cy x y", "knew met", "about"):
            for groups in (None, [group]):
                fts5 = reader.search(conn, kind, query, groups, 100)
                memory = reader.search(conn, kind, query, groups, 100, ws.text_scorer)
                assert {(h.owner_uuid, h.part): round(h.score, 9) for h in memory} == {
                    (h.owner_uuid, h.part): round(h.score, 9) for h in fts5
                }
