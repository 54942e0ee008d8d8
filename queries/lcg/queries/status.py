"""knowledge_status (P-102, P-103): counts, per-group WAL head, applied seq and hydration."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypedDict

from lcg.domain.ids import DEFAULT_GROUP
from lcg.domain.ontology import UNCLASSIFIED
from lcg.projections.damage import Repair
from lcg.projections.faults import StorageFailure
from lcg.projections.graph import reader
from lcg.projections.positions import GroupPosition, read_positions
from lcg.projections.wal.port import LogStore

Hydration = Literal["not_applicable", "wal_ahead", "hydrated"]


class GroupWal(TypedDict):
    applied_seq: int | None
    max_seq: int | None
    hydration_status: Hydration
    pinned_to: int | None


class Wal(TypedDict):
    exists: bool
    file_count: int
    byte_size: int
    applied_seq: int | None
    max_seq: int | None
    hydration_status: Hydration
    pinned_to: int | None


class PointerCounts(TypedDict):
    bound: int
    unbound: int
    ambiguous: int


class Ontology(TypedDict):
    present: bool
    loaded: bool
    mode: str | None
    entity_type_count: int
    relation_type_count: int
    drifted: bool
    drift_summary: str | None


class Embedding(TypedDict):
    """The embedding contract: vectors of two contracts never mix."""

    kind: str
    model: str
    dim: int


class ExtractorInfo(TypedDict):
    """knowledge_process_chunk's configured extractor (issue 14)."""

    name: str
    model: str


class Derived(TypedDict):
    """State of the indexes that live outside the projection database, and of the files."""

    vector_count: int | None
    vector_pending: int  # acknowledged writes the vector indexes have yet to follow (ADR 0022)
    last_index_time: str | None  # when knowledge_build_indices last ran in this process
    index_error: str | None
    repaired: list[Repair]  # damaged files set aside and rebuilt (at open or since)
    damaged_files: list[Repair]  # damaged now, rebuilt at the next open (ADR 0020)


class Status(TypedDict):
    database_path: str
    wal_path: str
    embedding_model: str | None
    embedding_dim: int | None
    embedding: Embedding
    extractor: ExtractorInfo
    vector_count: int | None
    vector_pending: int
    index_error: str | None
    entity_count: int
    relationship_count: int
    episode_count: int
    last_index_time: str | None
    context_graph_initialized: bool
    connected: bool
    queryable: bool
    initializing: bool
    wal: Wal
    wal_groups: dict[str, GroupWal]
    indices_built: bool
    cross_group_pointers: PointerCounts | None  # null when its table is missing (P-102)
    ontology: Ontology
    projection_error: str | None
    degraded: bool
    reason: str | None
    repaired: list[Repair]
    damaged_files: list[Repair]
    recovery_available: list[str]


def hydration_status(applied: int | None, max_seq: int | None) -> Hydration:
    """not_applicable with no WAL content; wal_ahead while applied < max; else hydrated."""
    if not max_seq:
        return "not_applicable"
    if (applied or 0) < max_seq:
        return "wal_ahead"
    return "hydrated"


def _group_wal(position: GroupPosition | None, head: int) -> GroupWal:
    applied = None if position is None else position.position
    return GroupWal(
        applied_seq=applied,
        max_seq=head or None,
        hydration_status=hydration_status(applied, head),
        pinned_to=None if position is None else position.pinned_to,
    )


def status(
    conn: sqlite3.Connection,
    log: LogStore,
    projection_names: Sequence[str],
    projection_error: str | None,
    embedding: Embedding,
    derived: Derived,
    faults: Sequence[str],
    extractor: ExtractorInfo,
    ontology: Ontology,
) -> Status:
    """The workspace's status as seen through `conn` (a read connection to the graph). A log
    that cannot be reached (a PostgreSQL server down) is a fault: the heads are then the
    applied seqs, what this node's projections still answer from (ADR 0073)."""
    try:
        heads, byte_size = log.heads(), log.byte_size()
    except StorageFailure as error:
        positions = read_positions(conn, projection_names)
        heads, byte_size = {group: p.position for group, p in positions.items()}, 0
        faults = [*faults, f"the log is unreachable, reads answer from the projections: {error}"]
    positions = read_positions(conn, projection_names, heads)
    groups: dict[str, GroupWal] = {
        group: _group_wal(position, heads.get(group, 0)) for group, position in positions.items()
    }
    default = groups.get(DEFAULT_GROUP) or _group_wal(None, 0)
    entities, relationships, episodes = reader.total_counts(conn)
    return Status(
        database_path=_database_path(conn),
        wal_path=log.where,
        embedding_model=embedding["model"],
        embedding_dim=embedding["dim"],
        embedding=embedding,
        extractor=extractor,
        vector_count=derived["vector_count"],
        vector_pending=derived["vector_pending"],
        index_error=derived["index_error"],
        entity_count=entities,
        relationship_count=relationships,
        episode_count=episodes,
        last_index_time=derived["last_index_time"],
        context_graph_initialized=True,
        connected=True,
        queryable=True,
        initializing=False,
        wal=Wal(
            exists=byte_size > 0, file_count=1 if byte_size else 0, byte_size=byte_size, **default
        ),
        wal_groups=groups,
        indices_built=True,
        cross_group_pointers=_pointer_counts(conn),
        ontology=ontology,
        projection_error=projection_error,
        degraded=bool(faults),
        reason="; ".join(faults) or None,
        repaired=derived["repaired"],
        damaged_files=derived["damaged_files"],
        recovery_available=[
            f"rebuild_from_wal: {Path(d['file']).name} is set aside and rebuilt from the WAL"
            " at the next open of the workspace (restart the service)"
            for d in derived["damaged_files"]
        ],
    )


def _pointer_counts(conn: sqlite3.Connection) -> PointerCounts | None:
    counts = reader.pointer_counts(conn)
    if counts is None:
        return None
    return PointerCounts(
        bound=counts["bound"], unbound=counts["unbound"], ambiguous=counts["ambiguous"]
    )


class Declared(TypedDict):
    """What one group's resolved ontology declares (None: that kind is not declared)."""

    relation_types: frozenset[str] | None
    entity_types: frozenset[str] | None


def ontology_drift(
    conn: sqlite3.Connection, declared: Callable[[str], Declared | None]
) -> tuple[bool, str | None]:
    """Whether the graph holds relation or entity types its groups' ontologies do not
    declare (UNCLASSIFIED is an abstention, not drift; a group with no ontology, or one
    declaring no types of a kind, cannot drift in that kind), and a one-line summary."""
    edges: dict[str, int] = {}
    for group, relation_type, count in reader.relation_types_by_group(conn):
        menu = declared(group)
        names = None if menu is None else menu["relation_types"]
        if names is not None and relation_type != UNCLASSIFIED and relation_type not in names:
            edges[relation_type] = edges.get(relation_type, 0) + count
    entities: dict[str, int] = {}
    for group, labels, count in reader.labels_by_group(conn):
        menu = declared(group)
        names = None if menu is None else menu["entity_types"]
        kind = next((label for label in labels if label != "Entity"), None)
        if names is not None and kind is not None and kind not in names:
            entities[kind] = entities.get(kind, 0) + count
    parts = [
        f"{sum(found.values())} {what} in {len(found)} undeclared type(s) ({_names(found)})"
        for what, found in (("edge(s)", edges), ("entity(ies)", entities))
        if found
    ]
    return bool(parts), "; ".join(parts) or None


def _names(found: dict[str, int], shown: int = 5) -> str:
    names = sorted(found, key=lambda name: (-found[name], name))
    more = f", +{len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _database_path(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2])
