"""WAL marks: named positions of a group's stream, kept in the WAL file (ADR 0032).

A mark is the operator's note "this group was good at seq N", for a later bounded replay
(`knowledge_rebuild_from_wal {to_seq: N}`). Like a pin (ADR 0023) it is a decision, not a
derived fact, so it lives beside the events it points into and survives a rebuilt graph.sqlite.
It is not an event: appending one would move the position it names, and a dump, which carries
events, must not carry marks (K-WAL-005). Deleting a mark stamps `deleted_at` on its row (the
tombstone); the name is free again. The functions here run inside the caller's transaction.

`generation` counts how often the file's streams were erased (`knowledge_clear_all` without
`preserve_wal`): seqs restart then, so a mark of an older generation names nothing any more.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from lcg.domain.ids import GroupId

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS lcg_marks (id INTEGER PRIMARY KEY, group_id TEXT NOT NULL,"
    " name TEXT NOT NULL, seq INTEGER NOT NULL, generation INTEGER NOT NULL,"
    " created_at TEXT NOT NULL, deleted_at TEXT)",
    # one active mark per name and group; tombstones keep their rows
    "CREATE UNIQUE INDEX IF NOT EXISTS lcg_marks_active ON lcg_marks (group_id, name)"
    " WHERE deleted_at IS NULL",
    "CREATE TABLE IF NOT EXISTS lcg_generation (one INTEGER PRIMARY KEY CHECK (one = 1),"
    " generation INTEGER NOT NULL)",
)
FIRST_GENERATION = 1
_COLUMNS = "group_id, name, seq, generation, created_at, deleted_at"


@dataclass(frozen=True, slots=True)
class Mark:
    """A named seq of one group's stream, in the numbering of `generation`."""

    group_id: GroupId
    name: str
    seq: int
    generation: int
    created_at: str
    deleted_at: str | None = None


class MarkExists(Exception):
    """The group already has an active mark of that name; nothing was written."""


def install(conn: sqlite3.Connection) -> None:
    """Create the tables (on first use, so that a read-only WAL still opens)."""
    for statement in SCHEMA:
        conn.execute(statement)


def has_tables(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='lcg_marks'"
    ).fetchone()
    return row is not None


def generation(conn: sqlite3.Connection) -> int:
    """The numbering generation of the file's streams."""
    if not has_tables(conn):
        return FIRST_GENERATION
    row = conn.execute("SELECT generation FROM lcg_generation").fetchone()
    return FIRST_GENERATION if row is None else int(row[0])


def next_generation(conn: sqlite3.Connection) -> None:
    """The streams were erased: every mark made so far names a seq of the old numbering."""
    current = generation(conn)
    install(conn)
    conn.execute("INSERT OR REPLACE INTO lcg_generation VALUES (1, ?)", (current + 1,))


def create(conn: sqlite3.Connection, group_id: GroupId, name: str, seq: int, at: str) -> Mark:
    install(conn)
    mark = Mark(group_id, name, seq, generation(conn), at)
    try:
        conn.execute(
            f"INSERT INTO lcg_marks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, NULL)",
            (group_id, name, seq, mark.generation, at),
        )
    except sqlite3.IntegrityError as error:
        raise MarkExists(name) from error
    return mark


def active(conn: sqlite3.Connection, group_id: GroupId) -> list[Mark]:
    """The group's marks that are not deleted, oldest first."""
    if not has_tables(conn):
        return []
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM lcg_marks WHERE group_id=? AND deleted_at IS NULL ORDER BY id",
        (group_id,),
    ).fetchall()
    return [Mark(GroupId(row[0]), *row[1:]) for row in rows]


def tombstone(conn: sqlite3.Connection, group_id: GroupId, name: str, at: str) -> Mark | None:
    """Delete the active mark `name` of the group; None when there is none."""
    found = [mark for mark in active(conn, group_id) if mark.name == name]
    if not found:
        return None
    conn.execute(
        "UPDATE lcg_marks SET deleted_at=? WHERE group_id=? AND name=? AND deleted_at IS NULL",
        (at, group_id, name),
    )
    return Mark(group_id, name, found[0].seq, found[0].generation, found[0].created_at, at)


def adopt(conn: sqlite3.Connection, generation_: int, marks: list[Mark]) -> None:
    """Take another log's generation and active marks (a copy of that log: ADR 0073)."""
    if generation_ == FIRST_GENERATION and not marks:
        return
    install(conn)
    conn.execute("INSERT OR REPLACE INTO lcg_generation VALUES (1, ?)", (generation_,))
    conn.executemany(
        f"INSERT INTO lcg_marks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        [(m.group_id, m.name, m.seq, m.generation, m.created_at, m.deleted_at) for m in marks],
    )
