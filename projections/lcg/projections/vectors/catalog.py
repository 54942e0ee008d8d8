"""The vector catalog: which texts are embedded for what, as SQLite rows beside the graph.

The catalog is an ordinary projection (same transaction, same checkpoint as the graph), so it
is exactly reproducible by replay; the FAISS indexes are derived from it and the embedding
cache (docs/adr/0010-vector-projection.md). Embeddings are write-once: a revision of an
entity or edge never re-embeds (K-AST-017, K-AST-038); only SummaryEmbedded refreshes a
summary vector.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

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
    DomainEvent,
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
from lcg.domain.memory.records import OutcomeNode
from lcg.projections.dispatch import E, EventTable
from lcg.projections.embedding.stored import stored_text
from lcg.projections.reset import only_group
from lcg.projections.wal.store import RecordedEvent

# The embeddings an owner can have, named after the seed's embedding columns.
NAME = "name_embedding"
SUMMARY = "summary_embedding"
FACT = "fact_embedding"
PASSAGE = "passage_embedding"
CONCEPT = "concept_embedding"  # a memory concept, framed with its call's text (ADR 0026)

# Embeddings are write-once (K-AST-017/038): a revision embeds nothing. The one thing a
# revision does here is drop the summary vector of a summary that became blank, so that an
# entity is no longer found by what it no longer says (issue 10, K-SEM-019). A type (the
# typing family) is neither embedded nor indexed as text.
TABLE = EventTable(
    "vectors",
    reads=(
        GROUP_FAMILY,
        KNOWLEDGE_FAMILY,
        CURATION_FAMILY,
        CROSS_GROUP_FAMILY,
        MEMORY_FAMILY,
        CANONIZATION_FAMILY,
    ),
    ignores=(
        RelationshipRevised,
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
_INSERT = (
    "INSERT INTO vector_catalog (group_id, embedding, owner_uuid, part, text, seq)"
    " VALUES (?,?,?,?,?,?)"
)


def install(conn: sqlite3.Connection) -> None:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(vector_catalog)")}
    if "kind" in columns:  # the column's first name; the rows and their vec_ids are kept
        conn.execute("ALTER TABLE vector_catalog RENAME COLUMN kind TO embedding")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS vector_catalog (vec_id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " group_id TEXT"
        " NOT NULL, embedding TEXT NOT NULL, owner_uuid TEXT NOT NULL, part INTEGER NOT NULL,"
        " text TEXT NOT NULL, seq INTEGER NOT NULL)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS vector_catalog_owner ON vector_catalog (owner_uuid)")
    conn.execute("CREATE INDEX IF NOT EXISTS vector_catalog_group ON vector_catalog (group_id)")


@TABLE.on(EntityCreated)
def _entity_created(conn: sqlite3.Connection, group: GroupId, run: Run[EntityCreated]) -> None:
    rows = []
    for seq, event in run:
        rows.append((group, NAME, event.entity_uuid, 0, event.name, seq))
        if event.summary.strip():  # a summary is embedded on create; empty ones are not
            rows.append((group, SUMMARY, event.entity_uuid, 0, event.summary, seq))
    conn.executemany(_INSERT, rows)


@TABLE.on(EntityRevised)
def _entity_revised(conn: sqlite3.Connection, group: GroupId, run: Run[EntityRevised]) -> None:
    blank = [(event.entity_uuid, SUMMARY) for _, event in run if not event.summary.strip()]
    conn.executemany("DELETE FROM vector_catalog WHERE owner_uuid=? AND embedding=?", blank)


@TABLE.on(SummaryEmbedded)
def _summary_embedded(conn: sqlite3.Connection, group: GroupId, run: Run[SummaryEmbedded]) -> None:
    for seq, event in run:
        conn.execute(
            "DELETE FROM vector_catalog WHERE owner_uuid=? AND embedding=?",
            (event.entity_uuid, SUMMARY),
        )
        if event.summary.strip():
            conn.execute(_INSERT, (group, SUMMARY, event.entity_uuid, 0, event.summary, seq))


@TABLE.on(RelationshipCreated)
def _relationship_created(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationshipCreated]
) -> None:
    conn.executemany(
        _INSERT, [(group, FACT, event.edge_uuid, 0, event.fact, seq) for seq, event in run]
    )


@TABLE.on(CrossGroupEdgeAdded)
def _cross_group_edge_added(
    conn: sqlite3.Connection, group: GroupId, run: Run[CrossGroupEdgeAdded]
) -> None:
    conn.executemany(
        _INSERT, [(group, FACT, event.edge_uuid, 0, event.fact, seq) for seq, event in run]
    )


@TABLE.on(PointersRebound)
def _pointers_rebound(conn: sqlite3.Connection, group: GroupId, run: Run[PointersRebound]) -> None:
    conn.executemany(
        "DELETE FROM vector_catalog WHERE owner_uuid=?",
        [(edge,) for _, event in run for edge in (*event.self_loops, *event.duplicates)],
    )


@TABLE.on(EpisodeAdded)
def _episode_added(conn: sqlite3.Connection, group: GroupId, run: Run[EpisodeAdded]) -> None:
    conn.executemany(
        _INSERT,
        [
            (group, PASSAGE, event.episode_uuid, part, content, seq)
            for seq, event in run
            for part, content in enumerate(passages.split(event.body))
        ],
    )


@TABLE.on(EpisodeDeleted)
def _episode_deleted(conn: sqlite3.Connection, group: GroupId, run: Run[EpisodeDeleted]) -> None:
    conn.executemany(
        "DELETE FROM vector_catalog WHERE owner_uuid=?", [(e.episode_uuid,) for _, e in run]
    )


@TABLE.on(GroupPurged)
def _group_purged(conn: sqlite3.Connection, group: GroupId, run: Run[GroupPurged]) -> None:
    conn.execute("DELETE FROM vector_catalog WHERE group_id=?", (group,))


@TABLE.on(GcSwept)
def _gc_swept(conn: sqlite3.Connection, group: GroupId, run: Run[GcSwept]) -> None:
    conn.executemany(
        "DELETE FROM vector_catalog WHERE owner_uuid=? AND embedding=?",
        [(item.node_id, CONCEPT) for _, event in run for item in event.collected],
    )


@TABLE.on(MemoryWriteApplied)
def _memory_applied(conn: sqlite3.Connection, group: GroupId, run: Run[MemoryWriteApplied]) -> None:
    conn.executemany(
        _INSERT,
        [
            (group, CONCEPT, node.uuid, 0, _concept_text(node), seq)
            for seq, event in run
            for node in event.outcome.nodes
            if node.embedding_text or node.vector is not None
        ],
    )


def _concept_text(node: OutcomeNode) -> str:
    """What a concept's vector is of: its framed text, or an image concept's vector itself,
    kept in the log and never computed from the caption (ADR 0095)."""
    if node.vector is not None:
        return stored_text(node.vector)
    assert node.embedding_text is not None
    return node.embedding_text


def _collapsed_owners(event: EntitiesMerged | PointersRebound) -> tuple[str, ...]:
    """What a merge or a rebind takes out of the vector indexes (collapsed edges, aliases)."""
    if isinstance(event, PointersRebound):
        return (*event.self_loops, *event.duplicates)
    return _merge_drops(event)


def _merge_drops(event: EntitiesMerged) -> tuple[str, ...]:
    """What a merge takes out of the vector indexes: the aliases and the collapsed edges."""
    return (*event.alias_uuids, *event.self_loops, *event.duplicates)


@TABLE.on(EntitiesMerged)
def _entities_merged(conn: sqlite3.Connection, group: GroupId, run: Run[EntitiesMerged]) -> None:
    conn.executemany(
        "DELETE FROM vector_catalog WHERE owner_uuid=?",
        [(owner,) for _, event in run for owner in _merge_drops(event)],
    )


@TABLE.on(RelationshipInvalidated)
def _relationship_invalidated(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationshipInvalidated]
) -> None:
    conn.executemany(
        "DELETE FROM vector_catalog WHERE owner_uuid=?", [(e.edge_uuid,) for _, e in run]
    )


def touched_owners(event: DomainEvent) -> tuple[str, ...] | None:
    """The owners whose vectors the event may change; None means the whole group."""
    if isinstance(event, EntitiesMerged | PointersRebound):
        return _collapsed_owners(event)
    if isinstance(event, MemoryWriteApplied):
        return tuple(
            n.uuid for n in event.outcome.nodes if n.embedding_text or n.vector is not None
        )
    if isinstance(event, GcSwept):
        return tuple(item.node_id for item in event.collected)
    if isinstance(
        event,
        MemoryWriteAccepted
        | MemoryWriteFailed
        | MemoryAccessed
        | ConceptsCanonized
        | GcClockStarted
        | GcBumped
        | ChunkExtracted
        | CorrectionsApplied,
    ):
        return ()
    for attribute in ("entity_uuid", "edge_uuid", "episode_uuid"):
        owner = getattr(event, attribute, None)
        if isinstance(owner, str):
            return (owner,)
    return None


class VectorCatalogProjection:
    """Rows (vec_id, group, embedding, owner, text): what the FAISS indexes must hold."""

    name = "vectors"
    version = 3  # 2: a summary revised to blank drops its vector; 3: GC collects concepts
    subscription = TABLE

    def install(self, conn: sqlite3.Connection) -> None:
        install(conn)

    def apply(self, conn: sqlite3.Connection, events: Sequence[RecordedEvent]) -> None:
        TABLE.apply(conn, events)

    def reset(self, conn: sqlite3.Connection, group_id: str) -> None:
        if only_group(conn, ("vector_catalog",), group_id):
            self.reset_all(conn)
        else:
            conn.execute("DELETE FROM vector_catalog WHERE group_id=?", (group_id,))

    def reset_all(self, conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM vector_catalog")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """What a vector id stands for."""

    vec_id: int
    group_id: str
    embedding: str
    owner_uuid: str
    part: int


def describe(conn: sqlite3.Connection, vec_ids: Sequence[int]) -> dict[int, CatalogEntry]:
    if not vec_ids:
        return {}
    marks = ",".join("?" * len(vec_ids))
    return {
        row[0]: CatalogEntry(row[0], row[1], row[2], row[3], row[4])
        for row in conn.execute(
            "SELECT vec_id, group_id, embedding, owner_uuid, part FROM vector_catalog"
            f" WHERE vec_id IN ({marks})",
            list(vec_ids),
        )
    }


def embedded_text(conn: sqlite3.Connection, owner_uuid: str, embedding: str) -> str | None:
    """The text the owner's `embedding` was computed from, if it has one."""
    row = conn.execute(
        "SELECT text FROM vector_catalog WHERE owner_uuid=? AND embedding=? ORDER BY vec_id DESC",
        (owner_uuid, embedding),
    ).fetchone()
    return None if row is None else str(row[0])
