"""What two projections must agree on beyond their tables: the FTS5 documents and vector catalog."""

from __future__ import annotations

SEARCH_ROWS = {
    "text": "SELECT d.group_id, d.kind, d.owner_uuid, d.part, coalesce(e.name, r.name, ''),"
    " coalesce(e.summary, r.fact, p.content) FROM text_docs d"
    " LEFT JOIN fts_entities e ON e.rowid = d.doc_id AND d.kind = 'entity'"
    " LEFT JOIN fts_edges r ON r.rowid = d.doc_id AND d.kind = 'edge'"
    " LEFT JOIN fts_passages p ON p.rowid = d.doc_id AND d.kind = 'passage'",
    "vectors": "SELECT group_id, kind, owner_uuid, part, text, seq FROM vector_catalog",
}
