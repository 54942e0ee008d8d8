"""The Cypher projection follows committed writes on a thread of its own (ADR 0039).

A ladybug commit costs ~4 ms here (its own durable write), whatever it holds: in the write's
path it made every write several times slower. The follower takes it off that path, as the
vector follower does (ADR 0022): the writer hands it each committed batch and answers at once;
the follower coalesces what arrived meanwhile into one ladybug transaction, reading the rows
through its own read connection in one snapshot. A Cypher query first waits for the follower
(`settle`), so it sees every write acknowledged before it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence

from lcg.projections.cypher.store import CypherGraph
from lcg.projections.wal.store import RecordedEvent

log = logging.getLogger(__name__)


class CypherFollower:
    """A CommitListener that applies committed batches to a CypherGraph on a background thread."""

    def __init__(self, graph: CypherGraph, connect: Callable[[], sqlite3.Connection]) -> None:
        self.graph = graph
        self._connect = connect
        self._pending: list[RecordedEvent] = []
        self._busy = False
        self._stopping = False
        self._changed = threading.Condition()
        self.processed_batches = 0
        self._thread = threading.Thread(target=self._run, name="lcg-cypher", daemon=True)
        self._thread.start()

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None:
        """Queue the batch. A batch with no entity or edge event still moves the groups'
        positions, so it is queued too; only an empty batch is not."""
        if not recorded:
            return
        with self._changed:
            self._pending.extend(recorded)
            self._changed.notify_all()

    def rebuilt(self, conn: sqlite3.Connection, groups: Iterable[str] | None) -> None:
        """Let the follower finish, then copy the rebuilt groups here."""
        self.settle()
        self.graph.rebuilt(conn, groups)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until every batch committed so far is in the Cypher graph; False on timeout."""
        with self._changed:
            return self._changed.wait_for(
                lambda: (not self._pending and not self._busy) or not self._thread.is_alive(),
                timeout,
            )

    def stop(self) -> None:
        """Follow what is queued, then end the thread (close: before the database closes)."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        self._thread.join()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: bool(self._pending) or self._stopping)
                    if not self._pending:
                        return
                    batch, self._pending = self._pending, []
                    self._busy = True
                try:
                    if conn is None:
                        conn = self._connect()
                    self._follow(conn, batch)
                except Exception:  # recorded in graph.failure; the next batch re-syncs
                    log.exception("the Cypher projection could not follow a commit")
                finally:
                    self.processed_batches += 1
                    with self._changed:
                        self._busy = False
                        self._changed.notify_all()
        finally:
            if conn is not None:
                conn.close()

    def _follow(self, conn: sqlite3.Connection, batch: Sequence[RecordedEvent]) -> None:
        conn.execute("BEGIN")  # one snapshot: the rows and the positions agree
        try:
            self.graph.committed(conn, batch)
        finally:
            conn.execute("COMMIT")
