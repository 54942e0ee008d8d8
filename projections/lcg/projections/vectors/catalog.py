"""The vector catalog: which texts are embedded for what, as SQLite rows beside the graph.

The catalog is an ordinary projection (same transaction, same checkpoint as the graph), so it
is exactly reproducible by replay; the FAISS indexes are derived from it and the embedding
cache (docs/adr/0010-vector-projection.md). Embeddings are write-once: a revision of an
entity or edge never re-embeds (K-AST-017, K-AST-038); only SummaryEmbedded refreshes a
summary vector.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lcg.domain import passages
from lcg.domain.events import (
    DomainEvent,
    EntityCreated,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    RelationshipCreated,
    SummaryEmbedded,
)
from lcg.projections.wal.store import RecordedEvent

# Vector kinds, named after the seed's embedding columns.
NAME = "name_embedding"
SUMMARY = "summary_embedding"
FACT = "fact_embedding"
PASSAGE = "passage_embedding"

Handler = Callable[[sqlite3.Connection, RecordedEvent], None]


def install(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS vector_catalog (vec_id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " group_id TEXT"
        " NOT NULL, kind TEXT NOT NULL, owner_uuid TEXT NOT NULL, part INTEGER NOT NULL,"
        " text TEXT NOT NULL, seq INTEGER NOT NULL)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS vector_catalog_owner ON vector_catalog (owner_uuid)")
    conn.execute("CREATE INDEX IF NOT EXISTS vector_catalog_group ON vector_catalog (group_id)")


def _add(
    conn: sqlite3.Connection,
    recorded: RecordedEvent,
    kind: str,
    owner: str,
    text: str,
    part: int = 0,
) -> None:
    conn.execute(
        "INSERT INTO vector_catalog (group_id, kind, owner_uuid, part, text, seq)"
        " VALUES (?,?,?,?,?,?)",
        (recorded.group_id, kind, owner, part, text, recorded.seq),
    )


def _entity_created(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EntityCreated)
    _add(conn, recorded, NAME, event.entity_uuid, event.name)
    if event.summary.strip():  # a summary is embedded on create; empty ones are not
        _add(conn, recorded, SUMMARY, event.entity_uuid, event.summary)


def _summary_embedded(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, SummaryEmbedded)
    conn.execute(
        "DELETE FROM vector_catalog WHERE owner_uuid=? AND kind=?", (event.entity_uuid, SUMMARY)
    )
    if event.summary.strip():
        _add(conn, recorded, SUMMARY, event.entity_uuid, event.summary)


def _relationship_created(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, RelationshipCreated)
    _add(conn, recorded, FACT, event.edge_uuid, event.fact)


def _episode_added(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EpisodeAdded)
    for part, content in enumerate(passages.split(event.body)):
        _add(conn, recorded, PASSAGE, event.episode_uuid, content, part)


def _episode_deleted(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EpisodeDeleted)
    conn.execute("DELETE FROM vector_catalog WHERE owner_uuid=?", (event.episode_uuid,))


def _group_purged(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    conn.execute("DELETE FROM vector_catalog WHERE group_id=?", (recorded.group_id,))


HANDLERS: dict[type[DomainEvent], Handler] = {
    EntityCreated: _entity_created,
    SummaryEmbedded: _summary_embedded,
    RelationshipCreated: _relationship_created,
    EpisodeAdded: _episode_added,
    EpisodeDeleted: _episode_deleted,
    GroupPurged: _group_purged,
}


def touched_owner(event: DomainEvent) -> str | None:
    """The owner whose vectors the event may change; None means the whole group."""
    for attribute in ("entity_uuid", "edge_uuid", "episode_uuid"):
        owner = getattr(event, attribute, None)
        if isinstance(owner, str):
            return owner
    return None


class VectorCatalogProjection:
    """Rows (vec_id, group, kind, owner, text): what the FAISS indexes must hold."""

    name = "vectors"
    version = 1

    def install(self, conn: sqlite3.Connection) -> None:
        install(conn)

    def apply(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        handler = HANDLERS.get(type(recorded.event))
        if handler is not None:
            handler(conn, recorded)

    def reset(self, conn: sqlite3.Connection, group_id: str) -> None:
        conn.execute("DELETE FROM vector_catalog WHERE group_id=?", (group_id,))

    def reset_all(self, conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM vector_catalog")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """What a vector id stands for."""

    vec_id: int
    group_id: str
    kind: str
    owner_uuid: str
    part: int


def describe(conn: sqlite3.Connection, vec_ids: Sequence[int]) -> dict[int, CatalogEntry]:
    if not vec_ids:
        return {}
    marks = ",".join("?" * len(vec_ids))
    return {
        row[0]: CatalogEntry(row[0], row[1], row[2], row[3], row[4])
        for row in conn.execute(
            "SELECT vec_id, group_id, kind, owner_uuid, part FROM vector_catalog"
            f" WHERE vec_id IN ({marks})",
            list(vec_ids),
        )
    }


def embedded_text(conn: sqlite3.Connection, owner_uuid: str, kind: str) -> str | None:
    """The text the owner's `kind` vector was computed from, if it has one."""
    row = conn.execute(
        "SELECT text FROM vector_catalog WHERE owner_uuid=? AND kind=? ORDER BY vec_id DESC",
        (owner_uuid, kind),
    ).fetchone()
    return None if row is None else str(row[0])
