"""The graph projection: entities, relationships, episodes and mentions, folded from events."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

import orjson

from lcg.domain import rules
from lcg.domain.events import (
    CROSS_GROUP_FAMILY,
    CURATION_FAMILY,
    GROUP_FAMILY,
    KNOWLEDGE_FAMILY,
    TYPING_FAMILY,
    ChunkExtracted,
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    EntitiesMerged,
    EntityCreated,
    EntityRevised,
    EntityTypesAssigned,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    PointersRebound,
    RelationshipCreated,
    RelationshipInvalidated,
    RelationshipRevised,
    RelationTypesAssigned,
    SummaryEmbedded,
)
from lcg.domain.ids import GroupId, Seq
from lcg.projections.dispatch import E, EventTable
from lcg.projections.graph import schema
from lcg.projections.reset import only_group
from lcg.projections.wal.store import RecordedEvent

# The memory's events are the memory projections' (ADR 0026).
TABLE = EventTable(
    "graph",
    reads=(GROUP_FAMILY, KNOWLEDGE_FAMILY, CURATION_FAMILY, CROSS_GROUP_FAMILY, TYPING_FAMILY),
    ignores=(SummaryEmbedded,),  # the vectors' alone
)
Run = Sequence[tuple[Seq, E]]


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


@TABLE.on(EntityCreated)
def _entity_created(conn: sqlite3.Connection, group: GroupId, run: Run[EntityCreated]) -> None:
    conn.executemany(
        "INSERT INTO entities (uuid, group_id, name, name_key, labels, summary, attributes,"
        " created_at, seq) VALUES (?,?,?,?,?,?,?,?,?)",
        [
            (
                event.entity_uuid,
                group,
                event.name,
                rules.name_key(event.name),
                orjson.dumps(event.labels).decode(),
                event.summary,
                event.attributes,
                event.occurred_at.isoformat(),
                seq,
            )
            for seq, event in run
        ],
    )


@TABLE.on(EntityRevised)
def _entity_revised(conn: sqlite3.Connection, group: GroupId, run: Run[EntityRevised]) -> None:
    conn.executemany(
        "UPDATE entities SET name=?, name_key=?, labels=?, summary=?, attributes=? WHERE uuid=?",
        [
            (
                event.name,
                rules.name_key(event.name),
                orjson.dumps(event.labels).decode(),
                event.summary,
                event.attributes,
                event.entity_uuid,
            )
            for _, event in run
        ],
    )


@TABLE.on(RelationshipCreated)
def _relationship_created(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationshipCreated]
) -> None:
    conn.executemany(
        "INSERT INTO relationships (uuid, group_id, source_uuid, target_uuid, name, fact,"
        " relation_type, attributes, valid_at, invalid_at, created_at, episodes, seq)"
        " VALUES (?,?,?,?,?,?,?,?,?,NULL,?,'[]',?)",
        [
            (
                event.edge_uuid,
                group,
                event.source_uuid,
                event.target_uuid,
                event.predicate,
                event.fact,
                event.relation_type,
                event.attributes,
                _iso(event.valid_at),
                event.occurred_at.isoformat(),
                seq,
            )
            for seq, event in run
        ],
    )


@TABLE.on(CrossGroupEdgeAdded)
def _cross_group_edge_added(
    conn: sqlite3.Connection, group: GroupId, run: Run[CrossGroupEdgeAdded]
) -> None:
    """The edge, its ends as bound (NULL for a side still unbound or ambiguous: the edge is
    then incomplete and no read returns it, K-XG-012) and its pointers (ADR 0041)."""
    conn.executemany(
        "INSERT INTO relationships (uuid, group_id, source_uuid, target_uuid, name, fact,"
        " relation_type, attributes, valid_at, invalid_at, created_at, episodes, seq,"
        " cross_group) VALUES (?,?,?,?,?,?,?,'{}',?,NULL,?,'[]',?,1)",
        [
            (
                event.edge_uuid,
                group,
                event.source_uuid,
                event.target_uuid,
                event.predicate,
                event.fact,
                event.relation_type,
                _iso(event.valid_at),
                event.occurred_at.isoformat(),
                seq,
            )
            for seq, event in run
        ],
    )
    conn.executemany(
        "INSERT INTO cross_group_pointers (edge_uuid, side, group_id, source_group_id,"
        " endpoint_name, resolved_uuid, bound_at_seq, binding_state, seq)"
        " VALUES (?,?,?,?,?,?,?,?,?)",
        [
            (
                event.edge_uuid,
                side,
                group,
                pointer["source_group_id"],
                pointer["endpoint_name"],
                pointer["resolved_uuid"],
                pointer["bound_at_seq"],
                pointer["binding_state"],
                seq,
            )
            for seq, event in run
            for side, pointer in (("src", event.src), ("dst", event.dst))
            if pointer is not None
        ],
    )


@TABLE.on(PointersRebound)
def _pointers_rebound(conn: sqlite3.Connection, group: GroupId, run: Run[PointersRebound]) -> None:
    """Each recorded binding replaces its pointer's and moves the edge's end (NULL while
    unbound); the collapsed edges are invalidated, as a merge invalidates them."""
    for _, event in run:
        for binding in event.bindings:
            conn.execute(
                "UPDATE cross_group_pointers SET resolved_uuid=?, bound_at_seq=?,"
                " binding_state=? WHERE edge_uuid=? AND side=?",
                (
                    binding["resolved_uuid"],
                    binding["bound_at_seq"],
                    binding["binding_state"],
                    binding["edge_uuid"],
                    binding["side"],
                ),
            )
            column = "source_uuid" if binding["side"] == "src" else "target_uuid"
            conn.execute(
                f"UPDATE relationships SET {column}=? WHERE uuid=?",
                (binding["resolved_uuid"], binding["edge_uuid"]),
            )
        invalid_at = event.occurred_at.isoformat()
        conn.executemany(
            "UPDATE relationships SET invalid_at=? WHERE uuid=?",
            [(invalid_at, edge) for edge in (*event.self_loops, *event.duplicates)],
        )


@TABLE.on(RelationshipRevised)
def _relationship_revised(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationshipRevised]
) -> None:
    conn.executemany(
        "UPDATE relationships SET fact=?, relation_type=?, attributes=?, valid_at=? WHERE uuid=?",
        [
            (
                event.fact,
                event.relation_type,
                event.attributes,
                _iso(event.valid_at),
                event.edge_uuid,
            )
            for _, event in run
        ],
    )


@TABLE.on(EpisodeAdded)
def _episode_added(conn: sqlite3.Connection, group: GroupId, run: Run[EpisodeAdded]) -> None:
    conn.executemany(
        "INSERT INTO episodes (uuid, group_id, name, content, source, source_description,"
        " reference_time, created_at, chunk_id, source_file, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                event.episode_uuid,
                group,
                event.name,
                event.body,
                event.source,
                event.source_description,
                event.reference_time.isoformat(),
                event.occurred_at.isoformat(),
                event.chunk_id,
                event.source_file,
                seq,
            )
            for seq, event in run
        ],
    )


@TABLE.on(ChunkExtracted)
def _chunk_extracted(conn: sqlite3.Connection, group: GroupId, run: Run[ChunkExtracted]) -> None:
    """The entities a processed chunk mentions (knowledge_get_entities_by_source reads them)."""
    conn.executemany(
        "INSERT OR IGNORE INTO mentions (episode_uuid, entity_uuid, group_id) VALUES (?,?,?)",
        [(event.episode_uuid, entity, group) for _, event in run for entity in event.mentioned],
    )
    conn.executemany(  # the edge's episodes: where it was stated (a delete takes it out)
        "UPDATE relationships SET episodes = json_insert(episodes, '$[#]', ?) WHERE uuid=?"
        " AND NOT EXISTS (SELECT 1 FROM json_each(relationships.episodes) WHERE value=?)",
        [
            (event.episode_uuid, edge, event.episode_uuid)
            for _, event in run
            for edge in event.edges
        ],
    )


@TABLE.on(EpisodeDeleted)
def _episode_deleted(conn: sqlite3.Connection, group: GroupId, run: Run[EpisodeDeleted]) -> None:
    for _, event in run:
        conn.execute("DELETE FROM episodes WHERE uuid=?", (event.episode_uuid,))
        conn.execute("DELETE FROM mentions WHERE episode_uuid=?", (event.episode_uuid,))
        conn.execute(
            "UPDATE relationships SET episodes = (SELECT json_group_array(value)"
            " FROM json_each(relationships.episodes) WHERE value != ?1)"
            " WHERE group_id=?2 AND instr(episodes, ?1) > 0",
            (event.episode_uuid, group),
        )


@TABLE.on(EntitiesMerged)
def _entities_merged(conn: sqlite3.Connection, group: GroupId, run: Run[EntitiesMerged]) -> None:
    """Aliases become tombstones; their mentions and rewritten edges go to the canonical, the
    collapsed edges are invalidated, a duplicate's episodes join its kept edge's (P-124)."""
    for _, event in run:
        canonical, aliases = event.canonical_uuid, list(event.alias_uuids)
        marks = ",".join("?" * len(aliases))
        conn.executemany(
            "UPDATE entities SET merged_into=? WHERE uuid=?", [(canonical, a) for a in aliases]
        )
        conn.execute(
            "INSERT OR IGNORE INTO mentions (episode_uuid, entity_uuid, group_id) SELECT"
            f" episode_uuid, ?, group_id FROM mentions WHERE entity_uuid IN ({marks})",
            [canonical, *aliases],
        )
        conn.execute(f"DELETE FROM mentions WHERE entity_uuid IN ({marks})", aliases)
        conn.executemany(
            f"UPDATE relationships SET source_uuid = CASE WHEN source_uuid IN ({marks}) THEN ?"
            f" ELSE source_uuid END, target_uuid = CASE WHEN target_uuid IN ({marks}) THEN ?"
            " ELSE target_uuid END WHERE uuid=?",
            [(*aliases, canonical, *aliases, canonical, edge) for edge in event.rewritten],
        )
        invalid_at = event.occurred_at.isoformat()
        conn.executemany(
            "UPDATE relationships SET invalid_at=? WHERE uuid=?",
            [(invalid_at, edge) for edge in (*event.self_loops, *event.duplicates)],
        )
        for duplicate, kept in zip(event.duplicates, event.duplicate_of, strict=True):
            _fold_episodes(conn, duplicate, kept)


def _fold_episodes(conn: sqlite3.Connection, duplicate: str, kept: str) -> None:
    rows = dict(
        conn.execute(
            "SELECT uuid, episodes FROM relationships WHERE uuid IN (?, ?)", (duplicate, kept)
        ).fetchall()
    )
    if duplicate not in rows or kept not in rows:
        return
    episodes = list(dict.fromkeys([*orjson.loads(rows[kept]), *orjson.loads(rows[duplicate])]))
    conn.execute(
        "UPDATE relationships SET episodes=? WHERE uuid=?", (orjson.dumps(episodes).decode(), kept)
    )


@TABLE.on(RelationshipInvalidated)
def _relationship_invalidated(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationshipInvalidated]
) -> None:
    conn.executemany(
        "UPDATE relationships SET invalid_at=? WHERE uuid=?",
        [(event.occurred_at.isoformat(), event.edge_uuid) for _, event in run],
    )


@TABLE.on(CorrectionsApplied)
def _corrections_applied(
    conn: sqlite3.Connection, group: GroupId, run: Run[CorrectionsApplied]
) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO applied_corrections (group_id, correction_id, seq) VALUES (?,?,?)",
        [(group, correction, seq) for seq, event in run for correction in event.correction_ids],
    )


@TABLE.on(RelationTypesAssigned)
def _relation_types_assigned(
    conn: sqlite3.Connection, group: GroupId, run: Run[RelationTypesAssigned]
) -> None:
    conn.executemany(
        "UPDATE relationships SET relation_type=? WHERE uuid=?",
        [
            (relation_type, edge)
            for _, event in run
            for edge, relation_type in zip(event.edge_uuids, event.relation_types, strict=True)
        ],
    )


@TABLE.on(EntityTypesAssigned)
def _entity_types_assigned(
    conn: sqlite3.Connection, group: GroupId, run: Run[EntityTypesAssigned]
) -> None:
    conn.executemany(
        "UPDATE entities SET labels=? WHERE uuid=?",
        [
            (orjson.dumps(labels).decode(), entity)
            for _, event in run
            for entity, labels in zip(event.entity_uuids, event.labels, strict=True)
        ],
    )


@TABLE.on(GroupPurged)
def _group_purged(conn: sqlite3.Connection, group: GroupId, run: Run[GroupPurged]) -> None:
    purge_group(conn, group)


def purge_group(conn: sqlite3.Connection, group_id: str) -> None:
    """Delete every row the group owns (the purge of delete_by_group and of force_clear)."""
    for table in schema.GRAPH_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE group_id=?", (group_id,))


class GraphProjection:
    """Folds the knowledge graph's events into the graph tables (SummaryEmbedded is ignored)."""

    name = "graph"
    version = 2  # 2: cross-group edges and their pointers (ADR 0041)
    subscription = TABLE

    def install(self, conn: sqlite3.Connection) -> None:
        schema.install(conn)

    def apply(self, conn: sqlite3.Connection, events: Sequence[RecordedEvent]) -> None:
        TABLE.apply(conn, events)

    def reset(self, conn: sqlite3.Connection, group_id: str) -> None:
        if only_group(conn, schema.GRAPH_TABLES, group_id):
            self.reset_all(conn)
        else:
            purge_group(conn, group_id)

    def reset_all(self, conn: sqlite3.Connection) -> None:
        for table in schema.GRAPH_TABLES:
            conn.execute(f"DELETE FROM {table}")
