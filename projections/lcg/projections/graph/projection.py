"""The graph projection: entities, relationships, episodes and mentions, folded from events."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime

import orjson

from lcg.domain import rules
from lcg.domain.events import (
    DomainEvent,
    EntityCreated,
    EntityRevised,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    RelationshipCreated,
    RelationshipRevised,
    SummaryEmbedded,
)
from lcg.projections.graph import schema
from lcg.projections.wal.store import RecordedEvent

Handler = Callable[[sqlite3.Connection, RecordedEvent], None]


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _entity_created(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EntityCreated)
    conn.execute(
        "INSERT INTO entities (uuid, group_id, name, name_key, labels, summary, attributes,"
        " created_at, seq) VALUES (?,?,?,?,?,?,?,?,?)",
        (
            event.entity_uuid,
            recorded.group_id,
            event.name,
            rules.name_key(event.name),
            orjson.dumps(event.labels).decode(),
            event.summary,
            event.attributes,
            event.occurred_at.isoformat(),
            recorded.seq,
        ),
    )


def _entity_revised(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EntityRevised)
    conn.execute(
        "UPDATE entities SET name=?, name_key=?, labels=?, summary=?, attributes=? WHERE uuid=?",
        (
            event.name,
            rules.name_key(event.name),
            orjson.dumps(event.labels).decode(),
            event.summary,
            event.attributes,
            event.entity_uuid,
        ),
    )


def _relationship_created(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, RelationshipCreated)
    conn.execute(
        "INSERT INTO relationships (uuid, group_id, source_uuid, target_uuid, name, fact,"
        " relation_type, attributes, valid_at, invalid_at, created_at, episodes, seq)"
        " VALUES (?,?,?,?,?,?,?,?,?,NULL,?,'[]',?)",
        (
            event.edge_uuid,
            recorded.group_id,
            event.source_uuid,
            event.target_uuid,
            event.predicate,
            event.fact,
            event.relation_type,
            event.attributes,
            _iso(event.valid_at),
            event.occurred_at.isoformat(),
            recorded.seq,
        ),
    )


def _relationship_revised(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, RelationshipRevised)
    conn.execute(
        "UPDATE relationships SET fact=?, relation_type=?, attributes=?, valid_at=? WHERE uuid=?",
        (event.fact, event.relation_type, event.attributes, _iso(event.valid_at), event.edge_uuid),
    )


def _episode_added(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EpisodeAdded)
    conn.execute(
        "INSERT INTO episodes (uuid, group_id, name, content, source, source_description,"
        " reference_time, created_at, chunk_id, source_file, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            event.episode_uuid,
            recorded.group_id,
            event.name,
            event.body,
            event.source,
            event.source_description,
            event.reference_time.isoformat(),
            event.occurred_at.isoformat(),
            event.chunk_id,
            event.source_file,
            recorded.seq,
        ),
    )


def _episode_deleted(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    event = recorded.event
    assert isinstance(event, EpisodeDeleted)
    conn.execute("DELETE FROM episodes WHERE uuid=?", (event.episode_uuid,))
    conn.execute("DELETE FROM mentions WHERE episode_uuid=?", (event.episode_uuid,))
    conn.execute(
        "UPDATE relationships SET episodes = (SELECT json_group_array(value)"
        " FROM json_each(relationships.episodes) WHERE value != ?1)"
        " WHERE group_id=?2 AND instr(episodes, ?1) > 0",
        (event.episode_uuid, recorded.group_id),
    )


def _group_purged(conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
    purge_group(conn, recorded.group_id)


def purge_group(conn: sqlite3.Connection, group_id: str) -> None:
    """Delete every row the group owns (the purge of delete_by_group and of force_clear)."""
    for table in schema.GRAPH_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE group_id=?", (group_id,))


HANDLERS: dict[type[DomainEvent], Handler] = {
    EntityCreated: _entity_created,
    EntityRevised: _entity_revised,
    RelationshipCreated: _relationship_created,
    RelationshipRevised: _relationship_revised,
    EpisodeAdded: _episode_added,
    EpisodeDeleted: _episode_deleted,
    GroupPurged: _group_purged,
    SummaryEmbedded: lambda conn, recorded: None,  # vectors only
}


class GraphProjection:
    """Folds every event type into the graph tables; unknown types are a projection error."""

    name = "graph"
    version = 1

    def install(self, conn: sqlite3.Connection) -> None:
        schema.install(conn)

    def apply(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        HANDLERS[type(recorded.event)](conn, recorded)

    def reset(self, conn: sqlite3.Connection, group_id: str) -> None:
        purge_group(conn, group_id)

    def reset_all(self, conn: sqlite3.Connection) -> None:
        for table in schema.GRAPH_TABLES:
            conn.execute(f"DELETE FROM {table}")
