"""Reads of the graph projection for queries: typed rows (state for deciders: graph.state)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NotRequired, TypedDict

import orjson

from lcg.domain.cross_group import BINDING_STATES, CrossGroupPointers
from lcg.projections.graph.state import pointers_of


class EntityRow(TypedDict):
    """An entity as the read tools return it (P-110), without embeddings."""

    uuid: str
    name: str
    group_id: str
    labels: list[str]
    created_at: str
    summary: str
    attributes: str
    episode_uuids: list[str]
    source_descriptions: list[str]


class EdgeRow(TypedDict):
    """A relationship as the read tools return it (P-111); `name` is the predicate."""

    uuid: str
    name: str
    source_node_uuid: str
    target_node_uuid: str
    group_id: str
    fact: str
    created_at: str
    valid_at: str | None
    invalid_at: str | None
    attributes: str
    relation_type: str | None
    episode_uuids: list[str]
    source_descriptions: list[str]
    cross_group_pointers: NotRequired[CrossGroupPointers]  # only on a cross-group edge


class EpisodeRow(TypedDict):
    """An episode as knowledge_get_episodes returns it (P-114)."""

    uuid: str
    name: str
    group_id: str
    created_at: str
    source: str
    source_description: str
    content: str
    valid_at: str
    entity_edges: list[str]


# An edge is read only when both of its ends exist: a cross-group edge whose pointer is
# unbound or ambiguous has a NULL end and is left out of every read (K-XG-012, ADR 0041).
COMPLETE = "source_uuid IS NOT NULL AND target_uuid IS NOT NULL"

GroupFilter = Sequence[str] | None  # None: every group; a sequence (maybe empty): exactly those


# For a query that finds edges by their ends: `+group_id` keeps SQLite (which has no statistics
# here) off the (group_id, seq) index, which it otherwise prefers and so scans every edge of the
# group in seq order; with it, it searches the source and target indexes and sorts the few rows.
SEARCH_ENDS = "+group_id"


def _where_groups(groups: GroupFilter, column: str = "group_id") -> tuple[str, list[str]]:
    if groups is None:
        return "1=1", []
    if not groups:
        return "0=1", []
    return f"{column} IN ({','.join('?' * len(groups))})", list(groups)


def total_counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(entities, relationships, episodes) over every group; merged tombstones not counted."""
    row = conn.execute(
        "SELECT (SELECT COUNT(*) FROM entities WHERE merged_into IS NULL),"
        " (SELECT COUNT(*) FROM relationships),"
        " (SELECT COUNT(*) FROM episodes)"
    ).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def pointer_counts(conn: sqlite3.Connection) -> dict[str, int] | None:
    """Pointers of active edges per binding_state; None when the pointers table is missing
    (a core table: P-102 then reports the counts as null)."""
    present = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='cross_group_pointers'"
    ).fetchone()
    if present is None:
        return None
    counts: dict[str, int] = dict.fromkeys(BINDING_STATES, 0)
    for state, count in conn.execute(
        "SELECT p.binding_state, COUNT(*) FROM cross_group_pointers p JOIN relationships r"
        " ON r.uuid = p.edge_uuid WHERE r.invalid_at IS NULL GROUP BY p.binding_state"
    ):
        counts[str(state)] = int(count)
    return counts


def relation_types_by_group(conn: sqlite3.Connection) -> list[tuple[str, str, int]]:
    """(group_id, relation_type, active edges) for every non-blank relation_type in use."""
    rows = conn.execute(
        "SELECT group_id, relation_type, COUNT(*) FROM relationships WHERE invalid_at IS NULL"
        " AND relation_type IS NOT NULL AND trim(relation_type) != ''"
        " GROUP BY group_id, relation_type ORDER BY group_id, relation_type"
    ).fetchall()
    return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]


def labels_by_group(conn: sqlite3.Connection) -> list[tuple[str, list[str], int]]:
    """(group_id, labels, live entities) for every label list in use."""
    rows = conn.execute(
        "SELECT group_id, labels, COUNT(*) FROM entities WHERE merged_into IS NULL"
        " GROUP BY group_id, labels ORDER BY group_id, labels"
    ).fetchall()
    return [(str(r[0]), list(orjson.loads(r[1] or "[]")), int(r[2])) for r in rows]


def _entity_rows(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[EntityRow]:
    provenance: dict[str, tuple[list[str], list[str]]] = {row["uuid"]: ([], []) for row in rows}
    if rows:
        marks = ",".join("?" * len(rows))
        for mention in conn.execute(
            "SELECT m.entity_uuid, m.episode_uuid, e.source_description FROM mentions m"
            f" JOIN episodes e ON e.uuid = m.episode_uuid WHERE m.entity_uuid IN ({marks})"
            " ORDER BY e.seq",
            [row["uuid"] for row in rows],
        ):
            uuids, descriptions = provenance[mention[0]]
            uuids.append(mention[1])
            if mention[2] not in descriptions:
                descriptions.append(mention[2])
    return [
        EntityRow(
            uuid=row["uuid"],
            name=row["name"],
            group_id=row["group_id"],
            labels=orjson.loads(row["labels"]),
            created_at=row["created_at"],
            summary=row["summary"],
            attributes=row["attributes"],
            episode_uuids=provenance[row["uuid"]][0],
            source_descriptions=provenance[row["uuid"]][1],
        )
        for row in rows
    ]


def _edge_rows(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[EdgeRow]:
    episode_ids = {uuid for row in rows for uuid in orjson.loads(row["episodes"])}
    descriptions: dict[str, str] = {}
    if episode_ids:
        marks = ",".join("?" * len(episode_ids))
        descriptions = dict(
            conn.execute(
                f"SELECT uuid, source_description FROM episodes WHERE uuid IN ({marks})",
                list(episode_ids),
            ).fetchall()
        )
    pointers = pointers_of(conn, [row["uuid"] for row in rows if row["cross_group"]])
    result: list[EdgeRow] = []
    for row in rows:
        episodes: list[str] = orjson.loads(row["episodes"])
        sources = list(dict.fromkeys(descriptions[e] for e in episodes if e in descriptions))
        edge = EdgeRow(
            uuid=row["uuid"],
            name=row["name"],
            source_node_uuid=row["source_uuid"],
            target_node_uuid=row["target_uuid"],
            group_id=row["group_id"],
            fact=row["fact"],
            created_at=row["created_at"],
            valid_at=row["valid_at"],
            invalid_at=row["invalid_at"],
            attributes=row["attributes"],
            relation_type=row["relation_type"],
            episode_uuids=episodes,
            source_descriptions=sources,
        )
        if row["cross_group"]:
            edge["cross_group_pointers"] = CrossGroupPointers(
                src=pointers.get((row["uuid"], "src")), dst=pointers.get((row["uuid"], "dst"))
            )
        result.append(edge)
    return result


def list_entities(conn: sqlite3.Connection, groups: GroupFilter, limit: int) -> list[EntityRow]:
    """Live entities of the groups (a merged alias's tombstone is not listed: P-124)."""
    where, params = _where_groups(groups)
    rows = conn.execute(
        f"SELECT * FROM entities WHERE {where} AND merged_into IS NULL"
        " ORDER BY group_id, seq LIMIT ?",
        [*params, limit],
    ).fetchall()
    return _entity_rows(conn, rows)


def list_edges(conn: sqlite3.Connection, groups: GroupFilter, limit: int) -> list[EdgeRow]:
    """Active (not invalidated) edges of the groups, oldest first."""
    where, params = _where_groups(groups)
    rows = conn.execute(
        f"SELECT * FROM relationships WHERE {where} AND invalid_at IS NULL AND {COMPLETE}"
        " ORDER BY group_id, seq LIMIT ?",
        [*params, limit],
    ).fetchall()
    return _edge_rows(conn, rows)


def edges_by_uuids(conn: sqlite3.Connection, uuids: Sequence[str]) -> list[EdgeRow]:
    """The edges with these uuids in the order asked; unknown uuids are skipped (P-116)."""
    if not uuids:
        return []
    marks = ",".join("?" * len(uuids))
    found = {
        row["uuid"]: row
        for row in conn.execute(
            f"SELECT * FROM relationships WHERE uuid IN ({marks}) AND {COMPLETE}", list(uuids)
        )
    }
    ordered = [found[u] for u in dict.fromkeys(uuids) if u in found]
    return _edge_rows(conn, ordered)


def episodes(conn: sqlite3.Connection, group_id: str, last_n: int) -> list[EpisodeRow]:
    """The group's newest `last_n` episodes, newest first."""
    rows = conn.execute(
        "SELECT * FROM episodes WHERE group_id=? ORDER BY seq DESC LIMIT ?", (group_id, last_n)
    ).fetchall()
    result: list[EpisodeRow] = []
    for row in rows:
        edges = [
            edge[0]
            for edge in conn.execute(
                "SELECT r.uuid FROM relationships r, json_each(r.episodes) j"
                " WHERE r.group_id=? AND j.value=? ORDER BY r.seq",
                (row["group_id"], row["uuid"]),
            )
        ]
        result.append(
            EpisodeRow(
                uuid=row["uuid"],
                name=row["name"],
                group_id=row["group_id"],
                created_at=row["created_at"],
                source=row["source"],
                source_description=row["source_description"],
                content=row["content"],
                valid_at=row["reference_time"],
                entity_edges=edges,
            )
        )
    return result


def neighbors(
    conn: sqlite3.Connection, entity_uuid: str, groups: GroupFilter, limit: int
) -> tuple[list[EntityRow], list[EdgeRow]]:
    """Active edges touching the entity (within the groups) and the entities at their ends."""
    where, params = _where_groups(groups, SEARCH_ENDS)
    edge_rows = conn.execute(
        f"SELECT * FROM relationships WHERE (source_uuid=? OR target_uuid=?) AND {where}"
        f" AND invalid_at IS NULL AND {COMPLETE} ORDER BY seq LIMIT ?",
        [entity_uuid, entity_uuid, *params, limit],
    ).fetchall()
    others = list(
        dict.fromkeys(
            row["target_uuid"] if row["source_uuid"] == entity_uuid else row["source_uuid"]
            for row in edge_rows
        )
    )
    node_rows: list[sqlite3.Row] = []
    if others:
        marks = ",".join("?" * len(others))
        found = {
            row["uuid"]: row
            for row in conn.execute(
                f"SELECT * FROM entities WHERE uuid IN ({marks}) AND merged_into IS NULL", others
            )
        }
        node_rows = [found[u] for u in others if u in found]
    return _entity_rows(conn, node_rows), _edge_rows(conn, edge_rows)


def entities_by_uuids(conn: sqlite3.Connection, uuids: Sequence[str]) -> list[EntityRow]:
    """The live entities with these uuids, in the order asked; unknown uuids and merged
    tombstones are skipped."""
    if not uuids:
        return []
    marks = ",".join("?" * len(uuids))
    found = {
        row["uuid"]: row
        for row in conn.execute(
            f"SELECT * FROM entities WHERE uuid IN ({marks}) AND merged_into IS NULL", list(uuids)
        )
    }
    return _entity_rows(conn, [found[u] for u in dict.fromkeys(uuids) if u in found])


def merged_into(conn: sqlite3.Connection, entity_uuid: str) -> str | None:
    """The canonical a merged alias's tombstone points at; None for a live or unknown uuid."""
    row = conn.execute("SELECT merged_into FROM entities WHERE uuid=?", (entity_uuid,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def neighbor_ids(
    conn: sqlite3.Connection, entity_uuids: Sequence[str], groups: GroupFilter
) -> dict[str, str]:
    """Entities one active edge away from any of `entity_uuids`: neighbour -> via whom."""
    if not entity_uuids:
        return {}
    where, params = _where_groups(groups, SEARCH_ENDS)
    marks = ",".join("?" * len(entity_uuids))
    found: dict[str, str] = {}
    for source, target in conn.execute(
        "SELECT source_uuid, target_uuid FROM relationships WHERE invalid_at IS NULL AND"
        f" {COMPLETE} AND {where}"
        f" AND (source_uuid IN ({marks}) OR target_uuid IN ({marks})) ORDER BY seq",
        [*params, *entity_uuids, *entity_uuids],
    ):
        if source in entity_uuids and target not in entity_uuids:
            found.setdefault(target, source)
        if target in entity_uuids and source not in entity_uuids:
            found.setdefault(source, target)
    return found


def co_mentioned_episodes(
    conn: sqlite3.Connection, episode_uuids: Sequence[str], groups: GroupFilter, limit: int
) -> dict[str, str]:
    """Episodes that mention an entity one of `episode_uuids` mentions: neighbour -> via
    which (the first of `episode_uuids` that shares one). For each episode, at most `limit`
    neighbours, those sharing the most entities first, then the oldest. An entity mentioned
    by more than `limit` episodes links none (a hub, such as a chat's speaker, says nothing
    about which of its many episodes is related)."""
    where, params = _where_groups(groups, "+m2.group_id")
    found: dict[str, str] = {}
    for via in episode_uuids:
        for (neighbour,) in conn.execute(
            "SELECT m2.episode_uuid FROM mentions m1 JOIN mentions m2 ON m2.entity_uuid ="
            f" m1.entity_uuid WHERE m1.episode_uuid = ? AND m2.episode_uuid != ? AND {where}"
            " AND (SELECT COUNT(*) FROM (SELECT 1 FROM mentions m3 WHERE m3.entity_uuid ="
            " m1.entity_uuid LIMIT ?)) <= ?"
            " GROUP BY m2.episode_uuid ORDER BY COUNT(*) DESC, MIN(m2.rowid) LIMIT ?",
            [via, via, *params, limit + 1, limit, limit],
        ):
            if neighbour not in episode_uuids:
                found.setdefault(neighbour, via)
    return found


def edges_touching(
    conn: sqlite3.Connection, entity_uuids: Sequence[str], groups: GroupFilter, limit: int
) -> list[str]:
    """Uuids of active edges with an endpoint among `entity_uuids`."""
    if not entity_uuids:
        return []
    where, params = _where_groups(groups, SEARCH_ENDS)
    marks = ",".join("?" * len(entity_uuids))
    return [
        row[0]
        for row in conn.execute(
            f"SELECT uuid FROM relationships WHERE invalid_at IS NULL AND {COMPLETE} AND {where}"
            f" AND (source_uuid IN ({marks}) OR target_uuid IN ({marks})) ORDER BY seq LIMIT ?",
            [*params, *entity_uuids, *entity_uuids, limit],
        )
    ]


class EpisodeInfo(TypedDict):
    uuid: str
    name: str
    group_id: str
    source: str
    source_description: str
    created_at: str
    valid_at: str


def episode_infos(conn: sqlite3.Connection, uuids: Sequence[str]) -> dict[str, EpisodeInfo]:
    if not uuids:
        return {}
    marks = ",".join("?" * len(uuids))
    return {
        row["uuid"]: EpisodeInfo(
            uuid=row["uuid"],
            name=row["name"],
            group_id=row["group_id"],
            source=row["source"],
            source_description=row["source_description"],
            created_at=row["created_at"],
            valid_at=row["reference_time"],
        )
        for row in conn.execute(
            "SELECT uuid, name, group_id, source, source_description, created_at,"
            f" reference_time FROM episodes WHERE uuid IN ({marks})",
            list(uuids),
        )
    }


def entities_by_source(
    conn: sqlite3.Connection, source: str, groups: GroupFilter, limit: int
) -> list[EntityRow]:
    """Entities mentioned by episodes from `source` (a source_file, or a source_description
    equal to it or starting with `source:`)."""
    where, params = _where_groups(groups, "e.group_id")
    rows = conn.execute(
        "SELECT DISTINCT n.* FROM episodes e JOIN mentions m ON m.episode_uuid = e.uuid"
        f" JOIN entities n ON n.uuid = m.entity_uuid WHERE {where} AND n.merged_into IS NULL"
        " AND (e.source_file = ?"
        " OR e.source_description = ? OR substr(e.source_description, 1, ?) = ?)"
        " ORDER BY n.seq LIMIT ?",
        [*params, source, source, len(source) + 1, f"{source}:", limit],
    ).fetchall()
    return _entity_rows(conn, rows)
