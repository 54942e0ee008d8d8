"""The text projection: FTS5 tables over entity name+summary, edge name+fact and passages.

SQLite FTS5 replaces rank-bm25 (docs/adr/0009-fts5-for-bm25.md). Each searchable document has
a row in `text_docs` whose `doc_id` is the rowid of its FTS5 row, so an update or delete
touches exactly one row and a group's documents can be found without scanning the index.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable

from lcg.domain import passages
from lcg.domain.events import (
    DomainEvent,
    EntityCreated,
    EntityRevised,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    RelationshipCreated,
    RelationshipRevised,
)
from lcg.projections.text import context
from lcg.projections.text.tables import FAMILIES, FTS_TABLES, TOKENIZER, changed, put
from lcg.projections.wal.store import RecordedEvent

Handler = Callable[[sqlite3.Connection, RecordedEvent], None]


def install(conn: sqlite3.Connection) -> None:
    """Create the tables; tables of an older layout are dropped (the runner then replays)."""
    columns_now = {row[1] for row in conn.execute("PRAGMA table_info(fts_passages)")}
    if columns_now and "context" not in columns_now:
        for table in ("text_docs", "text_meta", "text_changes", *FTS_TABLES.values()):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("CREATE TABLE IF NOT EXISTS text_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute(
        "INSERT OR IGNORE INTO text_meta (key, value) VALUES ('generation', ?)",
        (uuid.uuid4().hex,),
    )
    # The change log the in-memory scorer follows (scorer.py): a doc_id row means "re-read
    # this document", a row without one "every document of group_id (NULL: all) is gone".
    conn.execute(
        "CREATE TABLE IF NOT EXISTS text_changes (change_id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " kind TEXT, doc_id INTEGER, group_id TEXT)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS text_docs (doc_id INTEGER PRIMARY KEY, group_id TEXT NOT"
        " NULL, kind TEXT NOT NULL, owner_uuid TEXT NOT NULL, part INTEGER NOT NULL,"
        " seq INTEGER NOT NULL DEFAULT 0, chat INTEGER NOT NULL DEFAULT 0)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS text_docs_owner ON text_docs (owner_uuid)")
    conn.execute("CREATE INDEX IF NOT EXISTS text_docs_group ON text_docs (group_id, kind)")
    conn.execute("CREATE INDEX IF NOT EXISTS text_docs_chat ON text_docs (group_id, chat, seq)")
    for family in FAMILIES:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {family.table} USING"
            f" fts5({', '.join(family.columns)}, tokenize='{TOKENIZER}')"
        )


def _new_doc(conn: sqlite3.Connection, group: str, kind: str, owner: str, part: int = 0) -> int:
    cursor = conn.execute(
        "INSERT INTO text_docs (group_id, kind, owner_uuid, part) VALUES (?,?,?,?)",
        (group, kind, owner, part),
    )
    return int(cursor.lastrowid or 0)


def _doc_id(conn: sqlite3.Connection, kind: str, owner: str) -> int:
    row = conn.execute(
        "SELECT doc_id FROM text_docs WHERE owner_uuid=? AND kind=?", (owner, kind)
    ).fetchone()
    return int(row[0])


def _entity_created(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EntityCreated)
    doc = _new_doc(conn, recorded.group_id, "entity", event.entity_uuid)
    put(conn, "entity", doc, (event.name, event.summary), replace=False)


def _entity_revised(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EntityRevised)
    doc = _doc_id(conn, "entity", event.entity_uuid)
    put(conn, "entity", doc, (event.name, event.summary), replace=True)


def _relationship_created(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, RelationshipCreated)
    doc = _new_doc(conn, recorded.group_id, "edge", event.edge_uuid)
    put(conn, "edge", doc, (event.predicate, event.fact), replace=False)


def _relationship_revised(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, RelationshipRevised)
    doc = _doc_id(conn, "edge", event.edge_uuid)
    (name,) = conn.execute("SELECT name FROM fts_edges WHERE rowid=?", (doc,)).fetchone()
    put(conn, "edge", doc, (name, event.fact), replace=True)


def _episode_added(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EpisodeAdded)
    chat = event.source in context.CHAT_SOURCES
    around = context.context_for(conn, recorded.group_id, recorded.seq) if chat else ""
    for part, content in enumerate(passages.split(event.body)):
        cursor = conn.execute(
            "INSERT INTO text_docs (group_id, kind, owner_uuid, part, seq, chat)"
            " VALUES (?, 'passage', ?, ?, ?, ?)",
            (recorded.group_id, event.episode_uuid, part, recorded.seq, int(chat)),
        )
        put(conn, "passage", int(cursor.lastrowid or 0), (content, around), replace=False)
    if chat:  # the neighbours now have this message in their context
        for neighbour in context.neighbours(conn, recorded.group_id, recorded.seq):
            context.refresh(conn, neighbour)


def _episode_deleted(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EpisodeDeleted)
    row = conn.execute(
        "SELECT group_id, seq, chat FROM text_docs WHERE owner_uuid=? AND kind='passage'",
        (event.episode_uuid,),
    ).fetchone()
    owned = "SELECT doc_id FROM text_docs WHERE owner_uuid=? AND kind='passage'"
    for (doc,) in conn.execute(owned, (event.episode_uuid,)).fetchall():
        changed(conn, "passage", int(doc))
    conn.execute(f"DELETE FROM fts_passages WHERE rowid IN ({owned})", (event.episode_uuid,))
    conn.execute(
        "DELETE FROM text_docs WHERE owner_uuid=? AND kind='passage'", (event.episode_uuid,)
    )
    if row is not None and row[2]:  # its former neighbours lose it from their context
        for neighbour in context.neighbours(conn, row[0], row[1]):
            context.refresh(conn, neighbour)


def _group_purged(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    purge_group(conn, recorded.group_id)


def purge_group(conn: sqlite3.Connection, group_id: str) -> None:
    conn.execute("INSERT INTO text_changes (group_id) VALUES (?)", (group_id,))
    for kind, table in FTS_TABLES.items():
        conn.execute(
            f"DELETE FROM {table} WHERE rowid IN"
            " (SELECT doc_id FROM text_docs WHERE group_id=? AND kind=?)",
            (group_id, kind),
        )
    conn.execute("DELETE FROM text_docs WHERE group_id=?", (group_id,))


HANDLERS: dict[type[DomainEvent], Handler] = {
    EntityCreated: _entity_created,
    EntityRevised: _entity_revised,
    RelationshipCreated: _relationship_created,
    RelationshipRevised: _relationship_revised,
    EpisodeAdded: _episode_added,
    EpisodeDeleted: _episode_deleted,
    GroupPurged: _group_purged,
}


class TextProjection:
    """BM25-searchable documents, updated in the projection's transaction."""

    name = "text"
    version = 2  # 2: passages of chat messages carry their neighbours' words (context)

    def install(self, conn: sqlite3.Connection) -> None:
        install(conn)

    def apply(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        handler = HANDLERS.get(type(recorded.event))
        if handler is not None:
            handler(conn, recorded)

    def reset(self, conn: sqlite3.Connection, group_id: str) -> None:
        purge_group(conn, group_id)

    def reset_all(self, conn: sqlite3.Connection) -> None:
        for table in FTS_TABLES.values():
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM text_docs")
        conn.execute("INSERT INTO text_changes (group_id) VALUES (NULL)")
