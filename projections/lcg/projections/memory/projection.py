"""The memory projection: a session's concepts, interactions, edges and write receipts.

A Lambo session is a group (ADR 0026). Its stream holds, per lambo_derive or
lambo_record_action, an intent (`MemoryWriteAccepted`, the receipt's row turns `pending`) and
later its outcome (`MemoryWriteApplied`: the nodes and edges it decided, folded here as they
are, so a replay never calls the model; or `MemoryWriteFailed`). Knowledge events are ignored;
`GroupPurged` empties the session but for the intents still owed an outcome.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from lcg.domain.events import (
    CANONIZATION_FAMILY,
    GROUP_FAMILY,
    MEMORY_FAMILY,
    ConceptsCanonized,
    GcBumped,
    GcClockStarted,
    GcSwept,
    GroupPurged,
    MemoryAccessed,
    MemoryWriteAccepted,
    MemoryWriteApplied,
    MemoryWriteFailed,
)
from lcg.domain.ids import GroupId, Seq
from lcg.projections.dispatch import E, EventTable
from lcg.projections.memory import concept_stats
from lcg.projections.memory.state import FAILED_TRANSIENT
from lcg.projections.reset import only_group
from lcg.projections.wal.store import RecordedEvent

# The knowledge graph's events are not the memory's; a canonization cycle's statuses are the
# canonization projection's.
TABLE = EventTable(
    "memory",
    reads=(GROUP_FAMILY, MEMORY_FAMILY, CANONIZATION_FAMILY),
    ignores=(ConceptsCanonized, GcClockStarted, GcBumped),
)
Run = Sequence[tuple[Seq, E]]
TABLES = (
    "memory_nodes",
    "memory_edges",
    "memory_writes",
    "memory_superseded",
    "memory_concept_stats",
    "memory_session_stats",
    "memory_images",
)

_SCHEMA = (
    # A node is a concept or an interaction (one per derive / record_action call).
    "CREATE TABLE IF NOT EXISTS memory_nodes (uuid TEXT PRIMARY KEY, group_id TEXT NOT NULL,"
    " node_kind TEXT NOT NULL, content TEXT NOT NULL, concept_type TEXT, canonical_key TEXT,"
    " agent_id TEXT NOT NULL, created_at TEXT NOT NULL, about_time TEXT NOT NULL,"
    " last_written_at TEXT NOT NULL, seq INTEGER NOT NULL,"
    " reinforced INTEGER NOT NULL DEFAULT 0, access_count INTEGER NOT NULL DEFAULT 0,"
    " last_accessed TEXT)",
    "CREATE INDEX IF NOT EXISTS memory_nodes_key ON memory_nodes (group_id, canonical_key)",
    "CREATE INDEX IF NOT EXISTS memory_nodes_content ON memory_nodes (group_id, content)",
    "CREATE INDEX IF NOT EXISTS memory_nodes_kind ON memory_nodes (group_id, node_kind, seq)",
    # kind: derives | semantic | depends_on | parent_of | produces | modifies | contradicts
    "CREATE TABLE IF NOT EXISTS memory_edges (uuid TEXT PRIMARY KEY, group_id TEXT NOT NULL,"
    " kind TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL, agent_id TEXT NOT NULL,"
    " created_at TEXT NOT NULL, about_time TEXT NOT NULL, seq INTEGER NOT NULL,"
    " reinforced INTEGER NOT NULL DEFAULT 0, UNIQUE (group_id, kind, source, target))",
    "CREATE INDEX IF NOT EXISTS memory_edges_target ON memory_edges (target, kind)",
    "CREATE INDEX IF NOT EXISTS memory_edges_source ON memory_edges (source, kind)",
    # One row per acknowledged write: its intent (while pending) and its outcome.
    "CREATE TABLE IF NOT EXISTS memory_writes (receipt TEXT PRIMARY KEY,"
    " group_id TEXT NOT NULL, agent_id TEXT NOT NULL, tool TEXT NOT NULL,"
    " state TEXT NOT NULL, intent_seq INTEGER NOT NULL, outcome_seq INTEGER,"
    " accepted_at TEXT NOT NULL, settled_at TEXT, request TEXT NOT NULL, event_time TEXT,"
    " summary TEXT, outcome TEXT, after_restart INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS memory_writes_pending ON memory_writes (state, group_id,"
    " intent_seq)",
    # Possibly superseded, not declared (#198): the newer of a pair may replace the older.
    "CREATE TABLE IF NOT EXISTS memory_superseded (group_id TEXT NOT NULL, older TEXT NOT NULL,"
    " newer TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (older, newer))",
    # An image concept (ADR 0095): its vector came with it (a client's), never from its text.
    # Created where missing at every open; a log written before it holds no image concept.
    "CREATE TABLE IF NOT EXISTS memory_images (node_id TEXT PRIMARY KEY, group_id TEXT NOT"
    " NULL, seq INTEGER NOT NULL)",
)


def install(conn: sqlite3.Connection) -> None:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(memory_nodes)")}
    if columns and "last_accessed" not in columns:  # v3 -> v4; the runner then replays
        conn.execute("ALTER TABLE memory_nodes ADD COLUMN last_accessed TEXT")
    for statement in (*_SCHEMA, *concept_stats.SCHEMA):
        conn.execute(statement)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


@TABLE.on(MemoryWriteAccepted)
def _accepted(conn: sqlite3.Connection, group: GroupId, run: Run[MemoryWriteAccepted]) -> None:
    conn.executemany(
        "INSERT INTO memory_writes (receipt, group_id, agent_id, tool, state, intent_seq,"
        " accepted_at, request, event_time) VALUES (?,?,?,?,'pending',?,?,?,?)",
        [
            (
                event.receipt,
                group,
                event.agent_id,
                event.tool,
                seq,
                event.occurred_at.isoformat(),
                _json(event.request.to_wire()),
                None if event.event_time is None else event.event_time.isoformat(),
            )
            for seq, event in run
        ],
    )


@TABLE.on(MemoryWriteApplied)
def _applied(conn: sqlite3.Connection, group: GroupId, run: Run[MemoryWriteApplied]) -> None:
    for seq, event in run:
        outcome = event.outcome
        when = event.occurred_at.isoformat()
        nodes = outcome.nodes
        conn.executemany(
            "INSERT INTO memory_nodes (uuid, group_id, node_kind, content, concept_type,"
            " canonical_key, agent_id, created_at, about_time, last_written_at, seq)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    node.uuid,
                    group,
                    node.node_kind,
                    node.content,
                    node.concept_type,
                    node.canonical_key,
                    outcome.agent_id,
                    when,
                    outcome.about_time,
                    when,
                    seq,
                )
                for node in nodes
            ],
        )
        conn.executemany(
            "INSERT OR IGNORE INTO memory_images (node_id, group_id, seq) VALUES (?,?,?)",
            [(node.uuid, group, seq) for node in nodes if node.vector is not None],
        )
        conn.executemany(
            "UPDATE memory_nodes SET reinforced = reinforced + 1, last_written_at=? WHERE uuid=?",
            [(when, uuid) for uuid in outcome.reinforced_nodes],
        )
        added: list[concept_stats.Added] = []
        for edge in outcome.edges:
            kind, source, target = edge.kind, edge.source, edge.target
            between = concept_stats.kinds_between(conn, group, source, target)
            if kind not in between:  # a new edge (a re-sent one is the same edge)
                fresh_pair = not between & concept_stats.PROVENANCE_SET
                added.append(concept_stats.Added(kind, source, target, fresh_pair))
            conn.execute(
                "INSERT INTO memory_edges (uuid, group_id, kind, source, target, agent_id,"
                " created_at, about_time, seq) VALUES (?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (group_id, kind, source, target)"
                " DO UPDATE SET reinforced = reinforced + 1",
                (
                    edge.uuid,
                    group,
                    kind,
                    source,
                    target,
                    outcome.agent_id,
                    when,
                    outcome.about_time,
                    seq,
                ),
            )
        conn.executemany(
            "INSERT OR IGNORE INTO memory_superseded (group_id, older, newer, seq)"
            " VALUES (?,?,?,?)",
            [(group, pair.older, pair.newer, seq) for pair in outcome.possibly_superseded],
        )
        conn.executemany(  # a contradiction is a fresh write to the contradicted concept
            "UPDATE memory_nodes SET last_written_at=? WHERE uuid=?",
            [(when, edge.target) for edge in outcome.edges if edge.kind == "contradicts"],
        )
        concept_stats.interactions_added(
            conn,
            group,
            sum(1 for node in nodes if node.node_kind == "interaction"),
            datetime.fromisoformat(when),
            datetime.fromisoformat(outcome.about_time),
        )
        concept_stats.write_applied(conn, group, seq, [node.uuid for node in nodes], added)
        _settle(
            conn,
            event.receipt,
            "applied",
            seq,
            when,
            outcome.summary,
            outcome.to_wire(),
            after_restart=event.after_restart,
        )


@TABLE.on(MemoryWriteFailed)
def _failed(conn: sqlite3.Connection, group: GroupId, run: Run[MemoryWriteFailed]) -> None:
    for seq, event in run:
        _settle(
            conn,
            event.receipt,
            FAILED_TRANSIENT if event.replay_owed else "failed",
            seq,
            event.occurred_at.isoformat(),
            event.reason,
            None,
            after_restart=event.after_restart,
        )


def _settle(
    conn: sqlite3.Connection,
    receipt: str,
    state: str,
    seq: int,
    when: str,
    summary: str | None,
    outcome: dict[str, Any] | None,
    *,
    after_restart: bool,
) -> None:
    conn.execute(
        "UPDATE memory_writes SET state=?, outcome_seq=?, settled_at=?, summary=?, outcome=?,"
        " after_restart=? WHERE receipt=?",
        (
            state,
            seq,
            when,
            summary,
            None if outcome is None else _json(outcome),
            int(after_restart),
            receipt,
        ),
    )


@TABLE.on(MemoryAccessed)
def _accessed(conn: sqlite3.Connection, group: GroupId, run: Run[MemoryAccessed]) -> None:
    conn.executemany(
        "UPDATE memory_nodes SET access_count = access_count + ?, last_accessed = ?"
        " WHERE uuid=? AND group_id=?",
        [
            (count, event.occurred_at.isoformat(), node, group)
            for _, event in run
            for node, count in event.counts.items()
        ],
    )
    concept_stats.accessed(conn, group, (node for _, event in run for node in event.counts))


@TABLE.on(GcSwept)
def _gc_swept(conn: sqlite3.Connection, group: GroupId, run: Run[GcSwept]) -> None:
    """Collected concepts leave memory with their edges and possibly-superseded pairs; the
    interactions that wrote them stay (interactions are never collected)."""
    gone = [(item.node_id,) for _, event in run for item in event.collected]
    concept_stats.collecting(conn, group, [node for (node,) in gone])  # before the deletes
    conn.executemany("DELETE FROM memory_nodes WHERE uuid=?", gone)
    conn.executemany("DELETE FROM memory_edges WHERE source=?", gone)
    conn.executemany("DELETE FROM memory_edges WHERE target=?", gone)
    conn.executemany("DELETE FROM memory_superseded WHERE older=?", gone)
    conn.executemany("DELETE FROM memory_superseded WHERE newer=?", gone)
    conn.executemany("DELETE FROM memory_images WHERE node_id=?", gone)


@TABLE.on(GroupPurged)
def _purged(conn: sqlite3.Connection, group: GroupId, run: Run[GroupPurged]) -> None:
    """Empty the session, except the intents still owed an outcome (pending, or owed a replay
    after a transient failure, ADR 0108): they were acknowledged, so the processor applies them
    after the purge (their outcome follows it in the stream)."""
    conn.execute("DELETE FROM memory_nodes WHERE group_id=?", (group,))
    conn.execute("DELETE FROM memory_edges WHERE group_id=?", (group,))
    conn.execute("DELETE FROM memory_superseded WHERE group_id=?", (group,))
    conn.execute("DELETE FROM memory_images WHERE group_id=?", (group,))
    conn.execute("DELETE FROM memory_concept_stats WHERE group_id=?", (group,))
    conn.execute("DELETE FROM memory_session_stats WHERE group_id=?", (group,))
    conn.execute(
        "DELETE FROM memory_writes WHERE group_id=? AND state NOT IN ('pending', ?)",
        (group, FAILED_TRANSIENT),
    )


class MemoryProjection:
    """Rows of every session's memory graph and its write receipts."""

    name = "memory"
    # 2: access counts, purge keeps intents; 3: possibly superseded; 4: GC; 5: memory_concept_stats
    version = 5
    subscription = TABLE

    def install(self, conn: sqlite3.Connection) -> None:
        install(conn)

    def apply(self, conn: sqlite3.Connection, events: Sequence[RecordedEvent]) -> None:
        TABLE.apply(conn, events)

    def reset(self, conn: sqlite3.Connection, group_id: str) -> None:
        if only_group(conn, TABLES, group_id):
            self.reset_all(conn)
        else:
            for table in TABLES:
                conn.execute(f"DELETE FROM {table} WHERE group_id=?", (group_id,))

    def reset_all(self, conn: sqlite3.Connection) -> None:
        for table in TABLES:
            conn.execute(f"DELETE FROM {table}")
