"""Reading the projections' positions: per group, for every group, against the WAL's heads.

Positions are written by the runner in the projection transaction (ADR 0004); these reads
serve the runner, knowledge_status (one statement for every group) and the open-time checks
that the projections belong to this WAL and are not ahead of it (ADR 0019).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lcg.domain.ids import GroupId


@dataclass(frozen=True, slots=True)
class GroupPosition:
    """How far the projections of a group have applied its stream, and any pin."""

    position: int
    pinned_to: int | None


def _group_position(
    names: Sequence[str], by_name: dict[str, tuple[int, int | None]]
) -> GroupPosition:
    """A group's position: the lowest over the projections (they move together)."""
    positions = [by_name.get(name, (0, None)) for name in names]
    pins = [pin for _, pin in positions if pin is not None]
    return GroupPosition(min(pos for pos, _ in positions), min(pins) if pins else None)


def read_position(conn: sqlite3.Connection, names: Sequence[str], group_id: str) -> GroupPosition:
    """One group's position."""
    rows = conn.execute(
        "SELECT projection, position, pinned_to FROM projection_positions WHERE group_id=?",
        (group_id,),
    ).fetchall()
    return _group_position(names, {row[0]: (row[1], row[2]) for row in rows})


def read_positions(
    conn: sqlite3.Connection, names: Sequence[str], groups: Iterable[str] = ()
) -> dict[GroupId, GroupPosition]:
    """Positions of `groups` and of every group with a recorded position, in one query."""
    by_group: dict[str, dict[str, tuple[int, int | None]]] = {group: {} for group in groups}
    for projection, group, position, pin in conn.execute(
        "SELECT projection, group_id, position, pinned_to FROM projection_positions"
    ):
        by_group.setdefault(group, {})[projection] = (position, pin)
    return {
        GroupId(group): _group_position(names, by_name)
        for group, by_name in sorted(by_group.items())
    }


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)
    ).fetchone()
    return row is not None


def applied_seqs(conn: sqlite3.Connection) -> dict[str, int]:
    """The highest seq any projection applied, per group ({} for a new projection database)."""
    if not _has_table(conn, "projection_positions"):
        return {}
    rows = conn.execute(
        "SELECT group_id, MAX(position) FROM projection_positions GROUP BY group_id"
    ).fetchall()
    return {str(group): int(position) for group, position in rows}


def recorded_wal_identity(conn: sqlite3.Connection) -> str | None:
    """The identity of the WAL the positions refer to; None before one was recorded."""
    if not _has_table(conn, "projection_wal"):
        return None
    row = conn.execute("SELECT identity FROM projection_wal").fetchone()
    return None if row is None else str(row[0])


def behind_log(conn: sqlite3.Connection, heads: dict[GroupId, int]) -> list[tuple[str, int, int]]:
    """(group, WAL head, applied seq) of every group applied past what the WAL holds."""
    return [
        (group, heads.get(GroupId(group), 0), applied)
        for group, applied in sorted(applied_seqs(conn).items())
        if applied > heads.get(GroupId(group), 0)
    ]
