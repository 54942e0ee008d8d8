"""The text projection: FTS5 tables over entity name+summary, edge name+fact and passages.

SQLite FTS5 replaces rank-bm25 (docs/adr/0009-fts5-for-bm25.md). Each searchable document has
a row in `text_docs` whose `doc_id` is the rowid of its FTS5 row, so an update or delete
touches exactly one row and a group's documents can be found without scanning the index.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence

from lcg.domain import passages
from lcg.domain.events import (
    CANONIZATION_FAMILY,
    CROSS_GROUP_FAMILY,
    CURATION_FAMILY,
    GROUP_FAMILY,
    KNOWLEDGE_FAMILY,
    MEMORY_FAMILY,
    ChunkExtracted,
    ConceptsCanonized,
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    EntitiesMerged,
    EntityCreated,
    EntityRevised,
    EpisodeAdded,
    EpisodeDeleted,
    GcBumped,
    GcClockStarted,
    GcSwept,
    GroupPurged,
    MemoryAccessed,
    MemoryWriteAccepted,
    MemoryWriteApplied,
    MemoryWriteFailed,
    PointersRebound,
    RelationshipCreated,
    RelationshipInvalidated,
    RelationshipRevised,
    SummaryEmbedded,
)
from lcg.domain.ids import GroupId, Seq
from lcg.projections.dispatch import E, EventTable
from lcg.projections.reset import only_group
from lcg.projections.text import context
from lcg.projections.text.tables import (
    FTS_TABLES,
    TEXT_TABLES,
    TOKENIZER,
    changed,
    new_docs,
    put,
    put_new,
)
from lcg.projections.wal.store import RecordedEvent

# Summaries are indexed from entities; a memory write's concepts from its outcome. A type
# (the typing family) is neither embedded nor indexed as text.
TABLE = EventTable(
    "text",
    reads=(
        GROUP_FAMILY,
        KNOWLEDGE_FAMILY,
        CURATION_FAMILY,
        CROSS_GROUP_FAMILY,
        MEMORY_FAMILY,
        CANONIZATION_FAMILY,
    ),
    ignores=(
        SummaryEmbedded,
        ChunkExtracted,
        CorrectionsApplied,
        MemoryWriteAccepted,
        MemoryWriteFailed,
        MemoryAccessed,
        ConceptsCanonized,
        GcClockStarted,
        GcBumped,
    ),
)
Run = Sequence[tuple[Seq, E]]


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
    _create_fts_tables(conn)


def _create_fts_tables(conn: sqlite3.Connection) -> None:
    for table in TEXT_TABLES:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table.name} USING"
            f" fts5({', '.join(table.columns)}, tokenize='{TOKENIZER}')"
        )


def _doc_id(conn: sqlite3.Connection, kind: str, owner: str) -> int:
    row = conn.execute(
        "SELECT doc_id FROM text_docs WHERE owner_uuid=? AND kind=?", (owner, kind)
    ).fetchone()
    return int(row[0])


@TABLE.on(EntityCreated)
def _entity_created(conn: sqlite3.Connection, group: GroupId, run: Run[EntityCreated]) -> None:
    ids = new_docs(conn, "entity", [(group, event.entity_uuid, 0, 0, 0) for _, event in run])
    put_new(
        conn,
        "entity",
        [(doc, e.name, e.summary) for doc, (_, e) in zip(ids, run, strict=True)],
    )


@TABLE.on(EntityRevised)
def _entity_revised(conn: sqlite3.Connection, group: GroupId, run: Run[EntityRevised]) -> None:
    for _, event in run:
        doc = _doc_id(conn, "entity", event.entity_uuid)
        put(conn, "entity", doc, (event.name, event.summary), replace=True)


def _new_edges(
    conn: sqlite3.Connection,
    group: GroupId,
    run: Run[RelationshipCreated | CrossGroupEdgeAdded],
) -> None:
    """One document per new edge: its predicate and fact."""
    ids = new_docs(conn, "edge", [(group, event.edge_uuid, 0, 0, 0) for _, event in run])
    put_new(
        conn,
        "edge",
        [(doc, e.predicate, e.fact) for doc, (_, e) in zip(ids, run, strict=True)],
    )


@TABLE.on(RelationshipCreated)
def _relationship_created(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationshipCreated]
) -> None:
    _new_edges(conn, group, run)


@TABLE.on(CrossGroupEdgeAdded)
def _cross_group_edge_added(
    conn: sqlite3.Connection, group: GroupId, run: Run[CrossGroupEdgeAdded]
) -> None:
    """Indexed like any edge; while a pointer is unbound the edge reads leave it out."""
    _new_edges(conn, group, run)


@TABLE.on(RelationshipRevised)
def _relationship_revised(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationshipRevised]
) -> None:
    for _, event in run:
        doc = _doc_id(conn, "edge", event.edge_uuid)
        (name,) = conn.execute("SELECT name FROM fts_edges WHERE rowid=?", (doc,)).fetchone()
        put(conn, "edge", doc, (name, event.fact), replace=True)


def _drop_owned(conn: sqlite3.Connection, kind: str, owners: Sequence[str]) -> None:
    """Take the owners' documents of one kind out of the index (and tell the scorer)."""
    owned = "SELECT doc_id FROM text_docs WHERE owner_uuid=? AND kind=?"
    for owner in owners:
        for (doc,) in conn.execute(owned, (owner, kind)).fetchall():
            changed(conn, kind, int(doc))
        conn.execute(f"DELETE FROM {FTS_TABLES[kind]} WHERE rowid IN ({owned})", (owner, kind))
        conn.execute("DELETE FROM text_docs WHERE owner_uuid=? AND kind=?", (owner, kind))


@TABLE.on(EntitiesMerged)
def _entities_merged(conn: sqlite3.Connection, group: GroupId, run: Run[EntitiesMerged]) -> None:
    """A merged alias is no longer found by its words, nor are the edges the merge collapsed;
    a rewritten edge keeps its document (its predicate and fact did not change)."""
    for _, event in run:
        _drop_owned(conn, "entity", event.alias_uuids)
        _drop_owned(conn, "edge", (*event.self_loops, *event.duplicates))


@TABLE.on(RelationshipInvalidated)
def _relationship_invalidated(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationshipInvalidated]
) -> None:
    _drop_owned(conn, "edge", [event.edge_uuid for _, event in run])


@TABLE.on(PointersRebound)
def _pointers_rebound(conn: sqlite3.Connection, group: GroupId, run: Run[PointersRebound]) -> None:
    """The edges a rebind collapsed leave the index, as a merge's do."""
    _drop_owned(
        conn, "edge", [e for _, event in run for e in (*event.self_loops, *event.duplicates)]
    )


@TABLE.on(MemoryWriteApplied)
def _memory_applied(conn: sqlite3.Connection, group: GroupId, run: Run[MemoryWriteApplied]) -> None:
    """The concepts an outcome created (interactions are not searched by words), each with its
    session neighbours' words as context (ADR 0035); the concept before them gains the first."""
    created = [
        (seq, node)
        for seq, event in run
        for node in event.outcome.nodes
        if node.node_kind == "concept"
    ]
    if not created:
        return
    ids = new_docs(conn, "concept", [(group, node.uuid, 0, seq, 0) for seq, node in created])
    contents = [node.content for _, node in created]
    before = context.concept_neighbour(conn, group, ids[0], after=False)
    sides = [None if before is None else before[1], *contents, None]
    put_new(
        conn,
        "concept",
        [
            (doc, content, context.concept_context(sides[i], sides[i + 2]))
            for i, (doc, content) in enumerate(zip(ids, contents, strict=True))
        ],
    )
    if before is not None:
        context.refresh_concept(conn, group, before[0])


@TABLE.on(EpisodeAdded)
def _episode_added(conn: sqlite3.Connection, group: GroupId, run: Run[EpisodeAdded]) -> None:
    """Passages of plain episodes go in together; a chat message reads its neighbours, so the
    plain ones before it are written first and it goes in alone, in stream order."""
    plain: list[tuple[Seq, EpisodeAdded]] = []
    for seq, event in run:
        if event.source in context.CHAT_SOURCES:
            _add_plain(conn, group, plain)
            plain = []
            _add_chat(conn, group, seq, event)
        else:
            plain.append((seq, event))
    _add_plain(conn, group, plain)


def _add_plain(conn: sqlite3.Connection, group: GroupId, run: Run[EpisodeAdded]) -> None:
    docs: list[tuple[str, str, int, int, int]] = []
    contents: list[str] = []
    for seq, event in run:
        for part, content in enumerate(passages.split(event.body)):
            docs.append((group, event.episode_uuid, part, seq, 0))
            contents.append(content)
    ids = new_docs(conn, "passage", docs)
    put_new(conn, "passage", [(d, c, "") for d, c in zip(ids, contents, strict=True)])


def _add_chat(conn: sqlite3.Connection, group: GroupId, seq: Seq, event: EpisodeAdded) -> None:
    around = context.context_for(conn, group, seq)
    for part, content in enumerate(passages.split(event.body)):
        [doc] = new_docs(conn, "passage", [(group, event.episode_uuid, part, seq, 1)])
        put(conn, "passage", doc, (content, around), replace=False)
    for neighbour in context.neighbours(conn, group, seq):  # they now have it in context
        context.refresh(conn, neighbour)


@TABLE.on(EpisodeDeleted)
def _episode_deleted(conn: sqlite3.Connection, group: GroupId, run: Run[EpisodeDeleted]) -> None:
    for _, event in run:
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


@TABLE.on(GcSwept)
def _gc_swept(conn: sqlite3.Connection, group: GroupId, run: Run[GcSwept]) -> None:
    """Collected concepts leave the word index with their node, and the concepts that were
    next to them take their new neighbours' words as context (ADR 0035)."""
    for _, event in run:
        gone: list[int] = []
        for item in event.collected:
            owned = "SELECT doc_id FROM text_docs WHERE owner_uuid=? AND kind='concept'"
            for (doc,) in conn.execute(owned, (item.node_id,)).fetchall():
                changed(conn, "concept", int(doc))
                gone.append(int(doc))
            conn.execute(
                f"DELETE FROM {FTS_TABLES['concept']} WHERE rowid IN ({owned})", (item.node_id,)
            )
            conn.execute(
                "DELETE FROM text_docs WHERE owner_uuid=? AND kind='concept'", (item.node_id,)
            )
        around: set[int] = set()
        for doc in gone:
            for after in (False, True):
                found = context.concept_neighbour(conn, group, doc, after=after)
                if found is not None:
                    around.add(found[0])
        for doc in sorted(around):
            context.refresh_concept(conn, group, doc)


@TABLE.on(GroupPurged)
def _group_purged(conn: sqlite3.Connection, group: GroupId, run: Run[GroupPurged]) -> None:
    purge_group(conn, group)


def purge_group(conn: sqlite3.Connection, group_id: str) -> None:
    conn.execute("INSERT INTO text_changes (group_id) VALUES (?)", (group_id,))
    for kind, table in FTS_TABLES.items():
        conn.execute(
            f"DELETE FROM {table} WHERE rowid IN"
            " (SELECT doc_id FROM text_docs WHERE group_id=? AND kind=?)",
            (group_id, kind),
        )
    conn.execute("DELETE FROM text_docs WHERE group_id=?", (group_id,))


class TextProjection:
    """BM25-searchable documents, updated in the projection's transaction."""

    name = "text"
    version = 5  # 2: chat passages' neighbours' words; 3: memory concepts; 4: GC collects;
    # 5: concepts carry their session neighbours' words
    subscription = TABLE

    def install(self, conn: sqlite3.Connection) -> None:
        install(conn)

    def apply(self, conn: sqlite3.Connection, events: Sequence[RecordedEvent]) -> None:
        TABLE.apply(conn, events)

    def reset(self, conn: sqlite3.Connection, group_id: str) -> None:
        if only_group(conn, ("text_docs",), group_id):
            self.reset_all(conn)
        else:
            purge_group(conn, group_id)

    def reset_all(self, conn: sqlite3.Connection) -> None:
        # FTS5 deletes row by row even without a WHERE; dropping and re-creating its tables
        # empties them in one step (same DDL as install).
        for table in FTS_TABLES.values():
            conn.execute(f"DROP TABLE {table}")
        _create_fts_tables(conn)
        conn.execute("DELETE FROM text_docs")
        conn.execute("INSERT INTO text_changes (group_id) VALUES (NULL)")
