"""The graph projection's tables, created with sqlite-utils; a separate file from the WAL."""

from __future__ import annotations

import sqlite3

import sqlite_utils

GRAPH_TABLES = (
    "entities",
    "relationships",
    "episodes",
    "mentions",
    "applied_corrections",
    "cross_group_pointers",
)


def connect(path: str, *, read_only: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL journal."""
    uri = f"file:{path}?mode=ro" if read_only else f"file:{path}"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=10)
    conn.row_factory = sqlite3.Row
    if not read_only:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    return conn


def install(conn: sqlite3.Connection) -> None:
    """Create the graph tables and indexes if they do not exist (idempotent)."""
    db = sqlite_utils.Database(conn)
    db["entities"].create(  # type: ignore[union-attr]
        {
            "uuid": str,
            "group_id": str,
            "name": str,
            "name_key": str,
            "labels": str,
            "summary": str,
            "attributes": str,
            "created_at": str,
            "seq": int,
            "merged_into": str,
        },
        pk="uuid",
        if_not_exists=True,
    )
    if "merged_into" not in {row[1] for row in conn.execute("PRAGMA table_info(entities)")}:
        # a graph.sqlite from before merges (P-124): no entity of it is a tombstone
        conn.execute("ALTER TABLE entities ADD COLUMN merged_into TEXT")
    db["relationships"].create(  # type: ignore[union-attr]
        {
            "uuid": str,
            "group_id": str,
            "source_uuid": str,
            "target_uuid": str,
            "name": str,
            "fact": str,
            "relation_type": str,
            "attributes": str,
            "valid_at": str,
            "invalid_at": str,
            "created_at": str,
            "episodes": str,
            "seq": int,
            "cross_group": int,
        },
        pk="uuid",
        if_not_exists=True,
    )
    if "cross_group" not in {row[1] for row in conn.execute("PRAGMA table_info(relationships)")}:
        # a graph.sqlite from before cross-group edges (graph v2): none of its edges is one
        conn.execute("ALTER TABLE relationships ADD COLUMN cross_group INTEGER")
    db["episodes"].create(  # type: ignore[union-attr]
        {
            "uuid": str,
            "group_id": str,
            "name": str,
            "content": str,
            "source": str,
            "source_description": str,
            "reference_time": str,
            "created_at": str,
            "chunk_id": str,
            "source_file": str,
            "seq": int,
        },
        pk="uuid",
        if_not_exists=True,
    )
    db["mentions"].create(  # type: ignore[union-attr]
        {"episode_uuid": str, "entity_uuid": str, "group_id": str},
        pk=("episode_uuid", "entity_uuid"),
        if_not_exists=True,
    )
    db["applied_corrections"].create(  # type: ignore[union-attr]
        {"group_id": str, "correction_id": str, "seq": int},
        pk=("group_id", "correction_id"),
        if_not_exists=True,
    )
    # One row per pointer (ADR 0041): `group_id` is the edge's group (a reset of it drops
    # them), `source_group_id` the group the pointer resolves its endpoint name in.
    db["cross_group_pointers"].create(  # type: ignore[union-attr]
        {
            "edge_uuid": str,
            "side": str,
            "group_id": str,
            "source_group_id": str,
            "endpoint_name": str,
            "resolved_uuid": str,
            "bound_at_seq": int,
            "binding_state": str,
            "seq": int,
        },
        pk=("edge_uuid", "side"),
        if_not_exists=True,
    )
    indexes = {
        "entities": [(["group_id", "name_key"], False), (["group_id", "seq"], False)],
        "relationships": [
            (["group_id", "source_uuid", "name", "target_uuid"], False),
            (["source_uuid"], False),
            (["target_uuid"], False),
            (["group_id", "seq"], False),
        ],
        "episodes": [(["group_id", "seq"], False), (["chunk_id"], False), (["source_file"], False)],
        "mentions": [(["entity_uuid"], False), (["group_id"], False)],
        "cross_group_pointers": [(["source_group_id"], False), (["group_id"], False)],
    }
    for table, specs in indexes.items():
        for columns, unique in specs:
            db[table].create_index(columns, unique=unique, if_not_exists=True)  # type: ignore[union-attr]
