"""The canonization projection: every concept's ladder status, gc_survived, last demotion and
audit history, and each session's GC clock and mutation epoch (issue 13, ADR 0031).

It is folded from the events the scheduled jobs append (`ConceptsCanonized`, `GcClockStarted`,
`GcSwept`, `GcBumped`) and from `MemoryWriteApplied` (each applied write adds its nodes and
edges to the session's mutation epoch). A replay to any `to_seq` shows the statuses,
collections and history as they were at that seq, without running a policy again. A concept
with no row here is status None with gc_survived 0.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

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
from lcg.domain.memory.gc import GC_SURVIVED_MAX
from lcg.projections.dispatch import E, EventTable
from lcg.projections.reset import only_group
from lcg.projections.wal.store import RecordedEvent

# The knowledge graph's events are not the memory's; of a memory write, only its outcome
# changes a concept's status.
TABLE = EventTable(
    "canonization",
    reads=(GROUP_FAMILY, MEMORY_FAMILY, CANONIZATION_FAMILY),
    ignores=(MemoryWriteAccepted, MemoryWriteFailed, MemoryAccessed),
)
Run = Sequence[tuple[Seq, E]]
TABLES = ("canon_nodes", "canon_history", "canon_sessions")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS canon_nodes (node_id TEXT PRIMARY KEY, group_id TEXT NOT NULL,"
    " status TEXT NOT NULL DEFAULT 'None', gc_survived INTEGER NOT NULL DEFAULT 0,"
    " blast_radius INTEGER, last_demotion_at TEXT, demotion_cause TEXT, superseded_by TEXT)",
    "CREATE INDEX IF NOT EXISTS canon_nodes_status ON canon_nodes (group_id, status)",
    # A cycle reads every concept's status and gc_survived in id order (ADR 0040): covered.
    "CREATE INDEX IF NOT EXISTS canon_nodes_rows ON canon_nodes (group_id, node_id, status,"
    " gc_survived)",
    # One row per transition, in the order the cycle applied them.
    "CREATE TABLE IF NOT EXISTS canon_history (group_id TEXT NOT NULL, seq INTEGER NOT NULL,"
    " position INTEGER NOT NULL, node_id TEXT NOT NULL, from_status TEXT NOT NULL,"
    " to_status TEXT NOT NULL, blast_radius INTEGER, cause TEXT NOT NULL,"
    " occurred_at TEXT NOT NULL, superseded_by TEXT, PRIMARY KEY (group_id, seq, position))",
    "CREATE INDEX IF NOT EXISTS canon_history_node ON canon_history (node_id, seq)",
    # epoch: mutations applied in the session's lifetime (nodes + edges of applied writes).
    "CREATE TABLE IF NOT EXISTS canon_sessions (group_id TEXT PRIMARY KEY,"
    " epoch INTEGER NOT NULL DEFAULT 0, last_gc_epoch INTEGER NOT NULL DEFAULT 0,"
    " last_gc_at TEXT, sweeps INTEGER NOT NULL DEFAULT 0, collected INTEGER NOT NULL DEFAULT 0,"
    " last_sweep TEXT, last_sweep_seq INTEGER)",
)


def install(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA:
        conn.execute(statement)


def _session(conn: sqlite3.Connection, group: GroupId) -> None:
    conn.execute("INSERT OR IGNORE INTO canon_sessions (group_id) VALUES (?)", (group,))


@TABLE.on(MemoryWriteApplied)
def _applied(conn: sqlite3.Connection, group: GroupId, run: Run[MemoryWriteApplied]) -> None:
    mutations = sum(len(event.outcome.nodes) + len(event.outcome.edges) for _, event in run)
    _session(conn, group)
    conn.execute("UPDATE canon_sessions SET epoch = epoch + ? WHERE group_id=?", (mutations, group))


@TABLE.on(ConceptsCanonized)
def _canonized(conn: sqlite3.Connection, group: GroupId, run: Run[ConceptsCanonized]) -> None:
    for seq, event in run:
        for position, hop in enumerate(event.transitions):
            node = hop.node_id
            conn.execute(
                "INSERT OR IGNORE INTO canon_nodes (node_id, group_id) VALUES (?,?)",
                (node, group),
            )
            conn.execute(
                "UPDATE canon_nodes SET status=?, blast_radius=? WHERE node_id=?",
                (hop.to_status, hop.blast_radius, node),
            )
            if hop.last_demotion_time is not None:
                conn.execute(
                    "UPDATE canon_nodes SET last_demotion_at=?, demotion_cause=?,"
                    " superseded_by=? WHERE node_id=?",
                    (hop.last_demotion_time, hop.cause, hop.superseded_by, node),
                )
            conn.execute(
                "INSERT INTO canon_history (group_id, seq, position, node_id, from_status,"
                " to_status, blast_radius, cause, occurred_at, superseded_by)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    group,
                    seq,
                    position,
                    node,
                    hop.from_status,
                    hop.to_status,
                    hop.blast_radius,
                    hop.cause,
                    event.occurred_at.isoformat(),
                    hop.superseded_by,
                ),
            )


@TABLE.on(GcClockStarted)
def _clock(conn: sqlite3.Connection, group: GroupId, run: Run[GcClockStarted]) -> None:
    _session(conn, group)
    for _, event in run:
        conn.execute(
            "UPDATE canon_sessions SET last_gc_at=? WHERE group_id=?",
            (event.occurred_at.isoformat(), group),
        )


def _bump(conn: sqlite3.Connection, group: GroupId, nodes: Sequence[str]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO canon_nodes (node_id, group_id) VALUES (?,?)",
        [(node, group) for node in nodes],
    )
    conn.executemany(
        "UPDATE canon_nodes SET gc_survived = MIN(?, gc_survived + 1) WHERE node_id=?",
        [(GC_SURVIVED_MAX, node) for node in nodes],
    )


@TABLE.on(GcSwept)
def _swept(conn: sqlite3.Connection, group: GroupId, run: Run[GcSwept]) -> None:
    _session(conn, group)
    for seq, event in run:
        conn.executemany(
            "DELETE FROM canon_nodes WHERE node_id=?", [(c.node_id,) for c in event.collected]
        )
        _bump(conn, group, event.bumped)
        conn.execute(
            "UPDATE canon_sessions SET last_gc_epoch=?, last_gc_at=?, sweeps = sweeps + 1,"
            " collected = collected + ?, last_sweep=?, last_sweep_seq=? WHERE group_id=?",
            (
                event.epoch,
                event.occurred_at.isoformat(),
                len(event.collected),
                orjson.dumps({"trigger": event.trigger, **event.figures.to_wire()}).decode(),
                seq,
                group,
            ),
        )


@TABLE.on(GcBumped)
def _bumped(conn: sqlite3.Connection, group: GroupId, run: Run[GcBumped]) -> None:
    for _, event in run:
        _bump(conn, group, event.bumped)


@TABLE.on(GroupPurged)
def _purged(conn: sqlite3.Connection, group: GroupId, run: Run[GroupPurged]) -> None:
    """The session is emptied: its statuses and history go; its GC clock starts again."""
    for table in TABLES:
        conn.execute(f"DELETE FROM {table} WHERE group_id=?", (group,))


class CanonizationProjection:
    """Ladder statuses, survivor counts, demotions, history and GC clocks per session."""

    name = "canonization"
    version = 1
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
