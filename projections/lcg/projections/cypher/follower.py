"""The Cypher projection follows committed writes on a thread of its own (ADR 0039).

A ladybug commit costs ~4 ms here (its own durable write), whatever it holds: in the write's
path it made every write several times slower. The follower takes it off that path, as the
vector follower does (ADR 0022): the writer hands it each committed batch and answers at once;
the follower coalesces what arrived meanwhile into one ladybug transaction, reading the rows
through its own read connection in one snapshot. A Cypher query first waits for the follower
(`settle`), so it sees every write acknowledged before it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence

from lcg.projections.cypher.store import CypherGraph
from lcg.projections.follower import CommitFollower, Lane
from lcg.projections.wal.store import RecordedEvent


class CypherFollower(CommitFollower[RecordedEvent]):
    """A CommitListener that applies committed batches to a CypherGraph on a background thread."""

    label = "the Cypher projection"

    def __init__(self, graph: CypherGraph, connect: Callable[[], sqlite3.Connection]) -> None:
        self.graph = graph
        super().__init__(connect, thread_name="lcg-cypher")

    def _relevant(self, recorded: Sequence[RecordedEvent]) -> list[RecordedEvent]:
        """A batch with no entity or edge event still moves the groups' positions: all of it
        is queued; only an empty batch is not."""
        return list(recorded)

    def _lanes(self, work: RecordedEvent) -> tuple[Lane, ...]:
        return ((work.group_id, ""),)

    def rebuilt(self, conn: sqlite3.Connection, groups: Iterable[str] | None) -> None:
        """Let the follower finish, then copy the rebuilt groups here."""
        self.settle()
        self.graph.rebuilt(conn, groups)

    def _apply(self, conn: sqlite3.Connection, batch: Sequence[RecordedEvent]) -> None:
        conn.execute("BEGIN")  # one snapshot: the rows and the positions agree
        try:
            self.graph.committed(conn, batch)
        finally:
            conn.execute("COMMIT")
