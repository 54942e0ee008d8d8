"""Reads of the canonization projection: statuses, the session's GC clock, the history."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class NodeState:
    status: str = "None"
    gc_survived: int = 0
    blast_radius: int | None = None
    last_demotion_at: datetime | None = None
    demotion_cause: str | None = None
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True)
class SessionClock:
    """A session's mutation epoch and GC clock (canonization.md §8)."""

    epoch: int = 0
    last_gc_epoch: int = 0
    last_gc_at: datetime | None = None
    sweeps: int = 0
    collected: int = 0
    last_sweep: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class HistoryRow:
    seq: int
    node_id: str
    from_status: str
    to_status: str
    blast_radius: int | None
    cause: str
    occurred_at: datetime
    superseded_by: str | None


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def node_states(conn: sqlite3.Connection, session: str) -> dict[str, NodeState]:
    """Every concept of the session with a row (the rest are None, gc_survived 0)."""
    return {
        str(node): NodeState(str(status), int(survived), radius, _time(at), cause, by)
        for node, status, survived, radius, at, cause, by in conn.execute(
            "SELECT node_id, status, gc_survived, blast_radius, last_demotion_at,"
            " demotion_cause, superseded_by FROM canon_nodes WHERE group_id=?",
            (session,),
        )
    }


def node_states_of(
    conn: sqlite3.Connection, session: str, nodes: Sequence[str]
) -> dict[str, NodeState]:
    """`node_states` of the nodes asked about that have a row."""
    found: dict[str, NodeState] = {}
    for start in range(0, len(nodes), 500):
        part = list(nodes[start : start + 500])
        marks = ",".join("?" * len(part))
        found.update(
            (str(node), NodeState(str(status), int(survived), radius, _time(at), cause, by))
            for node, status, survived, radius, at, cause, by in conn.execute(
                "SELECT node_id, status, gc_survived, blast_radius, last_demotion_at,"
                f" demotion_cause, superseded_by FROM canon_nodes WHERE node_id IN ({marks})"
                " AND group_id=?",
                (*part, session),
            )
        )
    return found


def statuses(conn: sqlite3.Connection, nodes: Sequence[str]) -> dict[str, str]:
    """The ladder status of each node asked about (None where it has no row)."""
    if not nodes:
        return {}
    found = dict.fromkeys(nodes, "None")
    marks = ",".join("?" * len(nodes))
    for node, status in conn.execute(
        f"SELECT node_id, status FROM canon_nodes WHERE node_id IN ({marks})", tuple(nodes)
    ):
        found[str(node)] = str(status)
    return found


def node_state(conn: sqlite3.Connection, node: str) -> NodeState:
    row = conn.execute(
        "SELECT status, gc_survived, blast_radius, last_demotion_at, demotion_cause,"
        " superseded_by FROM canon_nodes WHERE node_id=?",
        (node,),
    ).fetchone()
    if row is None:
        return NodeState()
    return NodeState(str(row[0]), int(row[1]), row[2], _time(row[3]), row[4], row[5])


def canonical(conn: sqlite3.Connection, session: str) -> list[str]:
    """The session's Canonical concepts."""
    return [
        str(row[0])
        for row in conn.execute(
            "SELECT node_id FROM canon_nodes WHERE group_id=? AND status='Canonical'", (session,)
        )
    ]


def canonical_count(conn: sqlite3.Connection, session: str) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM canon_nodes WHERE group_id=? AND status='Canonical'", (session,)
    ).fetchone()
    return int(row[0])


def status_counts(conn: sqlite3.Connection, session: str) -> dict[str, int]:
    """The session's concepts per status above None (every status present, 0 when none)."""
    counts = dict.fromkeys(("Candidate", "Venerable", "Canonical"), 0)
    for status, count in conn.execute(
        "SELECT status, COUNT(*) FROM canon_nodes WHERE group_id=? AND status != 'None'"
        " GROUP BY status",
        (session,),
    ):
        counts[str(status)] = int(count)
    return counts


def clock(conn: sqlite3.Connection, session: str) -> SessionClock:
    row = conn.execute(
        "SELECT epoch, last_gc_epoch, last_gc_at, sweeps, collected, last_sweep FROM"
        " canon_sessions WHERE group_id=?",
        (session,),
    ).fetchone()
    if row is None:
        return SessionClock()
    return SessionClock(
        int(row[0]),
        int(row[1]),
        _time(row[2]),
        int(row[3]),
        int(row[4]),
        None if row[5] is None else orjson.loads(row[5]),
    )


def memory_position(conn: sqlite3.Connection, session: str) -> int | None:
    """The memory projection's position in the session (None while it has none, as during a
    rebuild): its rows change only when it moves. A pinned session's is None too."""
    return projection_position(conn, "memory", session)


def projection_position(conn: sqlite3.Connection, projection: str, session: str) -> int | None:
    """A projection's position in the session; None while it has none or is pinned."""
    row = conn.execute(
        "SELECT position, pinned_to FROM projection_positions WHERE projection=? AND group_id=?",
        (projection, session),
    ).fetchone()
    if row is None or row[1] is not None:
        return None
    return int(row[0])


def history(
    conn: sqlite3.Connection, session: str, node: str | None = None, limit: int = 1000
) -> list[HistoryRow]:
    """Transitions, oldest first (one node's, or the session's last `limit`)."""
    where, args = (
        ("group_id=? AND node_id=?", (session, node)) if node else ("group_id=?", (session,))
    )
    rows = conn.execute(
        "SELECT seq, node_id, from_status, to_status, blast_radius, cause, occurred_at,"
        f" superseded_by FROM canon_history WHERE {where} ORDER BY seq DESC, position DESC"
        " LIMIT ?",
        (*args, limit),
    ).fetchall()
    return [
        HistoryRow(int(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], str(r[5]),
                   datetime.fromisoformat(r[6]), r[7])
        for r in reversed(rows)
    ]  # fmt: skip


def reverts(conn: sqlite3.Connection, session: str) -> dict[str, int]:
    """Each concept's moves down the ladder (Solo's `reverts`)."""
    return {
        str(node): int(count)
        for node, count in conn.execute(
            "SELECT node_id, COUNT(*) FROM canon_history WHERE group_id=? AND"
            " from_status='Canonical' AND to_status='None' GROUP BY node_id",
            (session,),
        )
    }
