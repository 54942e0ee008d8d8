"""A workspace's memory writes read straight from its SQLite files, as a test checks them.

`wal.sqlite` holds every group's stream (`stored_events`: originator_id = the group's stream
id, originator_version = seq, topic = the event's wire name, state = its JSON); graph.sqlite
holds the memory projection (`memory_nodes`, `memory_edges`, `memory_writes`). Both are read
with plain sqlite3 connections, so this works beside a running service (WAL mode) and after
one was killed.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from lcg.interfaces.config import Settings
from lcg.projections.graph import schema
from lcg.projections.memory import state
from lcg.projections.wal.store import stream_id

ACCEPTED = "memory_write_accepted"
APPLIED = "memory_write_applied"
FAILED = "memory_write_failed"


@dataclass(frozen=True, slots=True)
class Logged:
    """One event of a session's stream."""

    seq: int
    topic: str
    payload: dict[str, Any]


def session_events(workspace: Path, session: str) -> list[Logged]:
    """Every event of the session's stream in seq order ([] before its first write)."""
    wal = Settings(workspace).wal_path
    if not wal.exists():
        return []
    with closing(sqlite3.connect(wal, timeout=30)) as conn:
        rows = conn.execute(
            "SELECT originator_version, topic, state FROM stored_events WHERE originator_id=?"
            " ORDER BY originator_version",
            (stream_id(session).hex,),
        ).fetchall()
    return [Logged(int(seq), str(topic), orjson.loads(state)) for seq, topic, state in rows]


def head(workspace: Path, session: str) -> int:
    """The session's last seq (0 when it has none)."""
    events = session_events(workspace, session)
    return events[-1].seq if events else 0


def outcomes_per_receipt(events: list[Logged]) -> Counter[str]:
    """How many outcome events (applied or failed) the log holds for each receipt."""
    return Counter(e.payload["receipt"] for e in events if e.topic in (APPLIED, FAILED))


def graph_rows(workspace: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows of a query on graph.sqlite (the projections)."""
    with closing(sqlite3.connect(Settings(workspace).graph_path, timeout=30)) as conn:
        return [tuple(row) for row in conn.execute(sql, params).fetchall()]


def concepts_and_writes(workspace: Path, session: str, content: str) -> tuple[int, list[str]]:
    """(concepts of `session` holding `content`, the states of every write of the session),
    read from graph.sqlite: a write applied once is (1, [..., "applied", ...])."""
    conn = schema.connect(str(Settings(workspace).graph_path), read_only=True)
    try:
        found = len(state.concepts_with_content(conn, session, content))
        rows = conn.execute("SELECT state FROM memory_writes WHERE group_id=?", (session,))
        states = [row[0] for row in rows.fetchall()]
    finally:
        conn.close()
    return found, states
