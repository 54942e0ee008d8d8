"""Reads of the graph projection for the write side: the state a decider needs, as values."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TypedDict

import orjson

from lcg.domain import rules
from lcg.domain.cross_group import PointedEdge, Pointer
from lcg.domain.curation import EdgeEnds
from lcg.domain.deciders import EdgeState, EntityState
from lcg.domain.ids import EdgeUuid, EntityUuid, EpisodeUuid, GroupId
from lcg.domain.typing_rules import EdgeRow, EntityRow


class GroupCounts(TypedDict):
    """What a group holds in the graph projection."""

    group_id: str
    entities: int
    episodes: int
    edges: int


def _entity_state(row: sqlite3.Row | None) -> EntityState | None:
    if row is None:
        return None
    return EntityState(
        EntityUuid(row["uuid"]),
        row["name"],
        GroupId(row["group_id"]),
        tuple(orjson.loads(row["labels"])),
        row["summary"],
        row["attributes"],
        None if row["merged_into"] is None else EntityUuid(row["merged_into"]),
    )


_ENTITY_STATE = (
    "SELECT uuid, name, group_id, labels, summary, attributes, merged_into FROM entities"
)


def entity_by_uuid(conn: sqlite3.Connection, entity_uuid: str) -> EntityState | None:
    row = conn.execute(f"{_ENTITY_STATE} WHERE uuid=?", (entity_uuid,)).fetchone()
    return _entity_state(row)


def live_entities_named(
    conn: sqlite3.Connection, group_id: str, name: str, limit: int = 2
) -> list[EntityState]:
    """The group's live entities whose name matches case- and whitespace-insensitively,
    oldest first, at most `limit` (a merged alias's tombstone keeps its name but is never
    found by it). The one name lookup of extraction, assertion and cross-group pointers
    (K-XG-007): extraction takes the first, a pointer binds only when there is one."""
    rows = conn.execute(
        f"{_ENTITY_STATE} WHERE group_id=? AND name_key=? AND merged_into IS NULL"
        " ORDER BY +seq LIMIT ?",  # +seq: read the name index, not the whole group by seq
        (group_id, rules.name_key(name), limit),
    ).fetchall()
    return [state for row in rows if (state := _entity_state(row)) is not None]


def entity_by_name(conn: sqlite3.Connection, group_id: str, name: str) -> EntityState | None:
    """The oldest live entity of the group with this name (`live_entities_named`)."""
    found = live_entities_named(conn, group_id, name, limit=1)
    return found[0] if found else None


def entities_named(conn: sqlite3.Connection, group_id: str, name: str) -> list[EntityState]:
    """Every entity of the group with this name, tombstones included, oldest first."""
    rows = conn.execute(
        f"{_ENTITY_STATE} WHERE group_id=? AND name_key=? ORDER BY +seq",
        (group_id, rules.name_key(name)),
    ).fetchall()
    return [state for row in rows if (state := _entity_state(row)) is not None]


def edges_touching(conn: sqlite3.Connection, entity_uuids: Sequence[str]) -> list[EdgeEnds]:
    """The active edges with an endpoint among `entity_uuids`, in every group, oldest first
    (a merge rewrites those of its group and counts the others)."""
    if not entity_uuids:
        return []
    marks = ",".join("?" * len(entity_uuids))
    rows = conn.execute(
        "SELECT uuid, group_id, source_uuid, target_uuid, name FROM relationships"
        f" WHERE invalid_at IS NULL AND (source_uuid IN ({marks}) OR target_uuid IN ({marks}))"
        " ORDER BY seq, uuid",
        [*entity_uuids, *entity_uuids],
    ).fetchall()
    return [
        EdgeEnds(EdgeUuid(r[0]), GroupId(r[1]), EntityUuid(r[2]), EntityUuid(r[3]), str(r[4]))
        for r in rows
    ]


def active_edge_by_uuid(conn: sqlite3.Connection, edge_uuid: str) -> EdgeEnds | None:
    """The edge if it exists and is active (not invalidated)."""
    row = conn.execute(
        "SELECT uuid, group_id, source_uuid, target_uuid, name FROM relationships"
        " WHERE uuid=? AND invalid_at IS NULL",
        (edge_uuid,),
    ).fetchone()
    if row is None:
        return None
    return EdgeEnds(
        EdgeUuid(row[0]), GroupId(row[1]), EntityUuid(row[2]), EntityUuid(row[3]), str(row[4])
    )


def applied_corrections(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    """(group_id, correction_id) of every correction applied so far."""
    return {
        (r[0], r[1])
        for r in conn.execute("SELECT group_id, correction_id FROM applied_corrections")
    }


def active_edge(
    conn: sqlite3.Connection, group_id: str, source: str, predicate: str, target: str
) -> EdgeUuid | None:
    """find_active_relates_to_uuid: the edge's identity, skipping invalidated edges."""
    row = conn.execute(
        "SELECT uuid FROM relationships WHERE group_id=? AND source_uuid=? AND name=?"
        " AND target_uuid=? AND invalid_at IS NULL ORDER BY +seq LIMIT 1",  # the ends' index
        (group_id, source, predicate, target),
    ).fetchone()
    return None if row is None else EdgeUuid(row[0])


def edge_state(conn: sqlite3.Connection, edge_uuid: str) -> EdgeState | None:
    """What an assertion of this edge would replace."""
    row = conn.execute(
        "SELECT fact, relation_type, attributes, valid_at FROM relationships WHERE uuid=?",
        (edge_uuid,),
    ).fetchone()
    if row is None:
        return None
    valid_at = None if row[3] is None else datetime.fromisoformat(row[3])
    return EdgeState(row[0], row[1], row[2], valid_at)


def episode_group(conn: sqlite3.Connection, episode_uuid: str) -> GroupId | None:
    row = conn.execute("SELECT group_id FROM episodes WHERE uuid=?", (episode_uuid,)).fetchone()
    return None if row is None else GroupId(row[0])


class EntitySummary(TypedDict):
    """An entity's summary and the seq that created it (the paging key of a backfill)."""

    uuid: EntityUuid
    summary: str
    seq: int


def entity_summaries(
    conn: sqlite3.Connection, group_id: str, *, after_seq: int, limit: int
) -> list[EntitySummary]:
    """The group's live entities created after `after_seq`, oldest first, at most `limit` (a
    merged alias's summary is not embedded again)."""
    rows = conn.execute(
        "SELECT uuid, summary, seq FROM entities WHERE group_id=? AND seq>?"
        " AND merged_into IS NULL ORDER BY seq LIMIT ?",
        (group_id, after_seq, limit),
    ).fetchall()
    return [EntitySummary(uuid=EntityUuid(r[0]), summary=str(r[1]), seq=int(r[2])) for r in rows]


def group_counts(conn: sqlite3.Connection, group_id: str) -> GroupCounts:
    """What the group holds; merged tombstones are not counted as entities (one never exists
    without its live canonical in the same group, so an empty group still counts as empty)."""

    def count(table: str, live: str = "") -> int:
        row = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE group_id=?{live}", (group_id,))
        return int(row.fetchone()[0])

    return GroupCounts(
        group_id=group_id,
        entities=count("entities", " AND merged_into IS NULL"),
        episodes=count("episodes"),
        edges=count("relationships"),
    )


def episodes_matching(
    conn: sqlite3.Connection,
    group_ids: Sequence[str],
    *,
    source_file: str | None = None,
    chunk_id: str | None = None,
) -> list[tuple[GroupId, EpisodeUuid]]:
    """The episodes of the listed groups from a source (its source_file, or a
    source_description equal to it or starting with `source:`, as get_entities_by_source
    matches) or of a chunk id, oldest first."""
    marks = ",".join("?" * len(group_ids))
    if source_file is not None:
        rows = conn.execute(
            f"SELECT group_id, uuid FROM episodes WHERE group_id IN ({marks}) AND"
            " (source_file = ? OR source_description = ? OR substr(source_description, 1, ?) = ?)"
            " ORDER BY seq",
            [*group_ids, source_file, source_file, len(source_file) + 1, f"{source_file}:"],
        ).fetchall()
    else:
        rows = conn.execute(
            f"SELECT group_id, uuid FROM episodes WHERE +group_id IN ({marks}) AND chunk_id = ?"
            " ORDER BY seq",  # + : search the chunk_id index, not scan the groups by seq
            [*group_ids, chunk_id],
        ).fetchall()
    return [(GroupId(row[0]), EpisodeUuid(row[1])) for row in rows]


def _pointer(row: sqlite3.Row) -> Pointer:
    return Pointer(
        source_group_id=row["source_group_id"],
        endpoint_name=row["endpoint_name"],
        resolved_uuid=row["resolved_uuid"],
        bound_at_seq=row["bound_at_seq"],
        binding_state=row["binding_state"],
    )


def pointed_edges(conn: sqlite3.Connection, source_group_id: str) -> list[PointedEdge]:
    """The active edges with a pointer naming `source_group_id`, in any group, oldest first
    (an invalidated edge's pointers are not rebound)."""
    rows = conn.execute(
        "SELECT r.uuid, r.group_id, r.name, r.source_uuid, r.target_uuid, r.seq FROM"
        " relationships r WHERE r.invalid_at IS NULL AND r.uuid IN (SELECT edge_uuid FROM"
        " cross_group_pointers WHERE source_group_id=?) ORDER BY r.seq, r.group_id, r.uuid",
        (source_group_id,),
    ).fetchall()
    pointers = pointers_of(conn, [row["uuid"] for row in rows])
    return [
        PointedEdge(
            EdgeUuid(row["uuid"]),
            GroupId(row["group_id"]),
            str(row["name"]),
            None if row["source_uuid"] is None else EntityUuid(row["source_uuid"]),
            None if row["target_uuid"] is None else EntityUuid(row["target_uuid"]),
            pointers.get((row["uuid"], "src")),
            pointers.get((row["uuid"], "dst")),
        )
        for row in rows
    ]


def pointers_of(
    conn: sqlite3.Connection, edge_uuids: Sequence[str]
) -> dict[tuple[str, str], Pointer]:
    """The pointers of these edges by (edge uuid, side)."""
    found: dict[tuple[str, str], Pointer] = {}
    for start in range(0, len(edge_uuids), 500):
        chunk = edge_uuids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT * FROM cross_group_pointers WHERE edge_uuid IN ({marks})", list(chunk)
        ):
            found[(row["edge_uuid"], row["side"])] = _pointer(row)
    return found


def typing_edges(conn: sqlite3.Connection, group_id: str) -> list[EdgeRow]:
    """The group's active edges, oldest first, as relation typing reads them."""
    rows = conn.execute(
        "SELECT uuid, name, fact, relation_type FROM relationships WHERE group_id=?"
        " AND invalid_at IS NULL ORDER BY seq, uuid",
        (group_id,),
    ).fetchall()
    return [EdgeRow(EdgeUuid(r[0]), str(r[1]), str(r[2] or ""), r[3]) for r in rows]


def typing_entities(conn: sqlite3.Connection, group_id: str) -> list[EntityRow]:
    """The group's live entities, oldest first, as entity typing reads them."""
    rows = conn.execute(
        "SELECT uuid, name, summary, labels FROM entities WHERE group_id=?"
        " AND merged_into IS NULL ORDER BY seq, uuid",
        (group_id,),
    ).fetchall()
    return [
        EntityRow(EntityUuid(r[0]), str(r[1]), str(r[2] or ""), tuple(orjson.loads(r[3] or "[]")))
        for r in rows
    ]


def typing_edges_by_uuid(conn: sqlite3.Connection, edge_uuids: Sequence[str]) -> list[EdgeRow]:
    """These edges if still active, as relation typing reads them."""
    marks = ",".join("?" * len(edge_uuids))
    rows = conn.execute(
        f"SELECT uuid, name, fact, relation_type FROM relationships WHERE uuid IN ({marks})"
        " AND invalid_at IS NULL",
        list(edge_uuids),
    ).fetchall()
    return [EdgeRow(EdgeUuid(r[0]), str(r[1]), str(r[2] or ""), r[3]) for r in rows]


def typing_entities_by_uuid(
    conn: sqlite3.Connection, entity_uuids: Sequence[str]
) -> list[EntityRow]:
    """These entities if still live, as entity typing reads them."""
    marks = ",".join("?" * len(entity_uuids))
    rows = conn.execute(
        f"SELECT uuid, name, summary, labels FROM entities WHERE uuid IN ({marks})"
        " AND merged_into IS NULL",
        list(entity_uuids),
    ).fetchall()
    return [
        EntityRow(EntityUuid(r[0]), str(r[1]), str(r[2] or ""), tuple(orjson.loads(r[3] or "[]")))
        for r in rows
    ]
