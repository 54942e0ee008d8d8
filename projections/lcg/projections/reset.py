"""Helpers the projections share for whole-table work (resets of a group that is alone)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable


def only_group(conn: sqlite3.Connection, tables: Iterable[str], group_id: str) -> bool:
    """True when no row of these tables belongs to another group than `group_id`.

    A reset of the only group can then empty whole tables, which SQLite does in one step
    (the truncate optimisation; FTS5 tables are dropped and re-created), instead of deleting
    row by row through every index: the difference is most of a full rebuild's reset.
    """
    for table in tables:
        for probe in ("<", ">"):
            row = conn.execute(
                f"SELECT 1 FROM {table} WHERE group_id {probe} ? LIMIT 1", (group_id,)
            ).fetchone()
            if row is not None:
                return False
    return True
