"""The FAISS indexes follow committed writes on a thread of their own (ADR 0022).

Embedding a write's new texts costs the model 10 ms or more per text here (~100 texts/s on
one core whatever the batch size), and it ran in the write's batch, under the writer's lock:
under eight clients every write waited for the model (issue 9, "Load"). The follower takes
the commits off that path: the writer hands it each committed batch and answers its callers
at once; the follower reads the catalog through its own read connection, embeds the new texts
(through the content-addressed cache) and updates the indexes, coalescing whatever commits
arrived meanwhile. Graph reads and the BM25 leg see a write when it is acknowledged; the vector
legs see it once the follower has caught up (`settle` waits for that).

Rebuilds and clears (`rebuilt`) first let the follower finish, then sync on the caller's
thread, so they never interleave with it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence

from lcg.domain.ids import GroupId
from lcg.projections.vectors.catalog import touched_owners
from lcg.projections.vectors.index import VectorIndex
from lcg.projections.wal.store import RecordedEvent

log = logging.getLogger(__name__)


class VectorFollower:
    """A CommitListener that updates the vector indexes on a background thread."""

    def __init__(self, index: VectorIndex, connect: Callable[[], sqlite3.Connection]) -> None:
        self.index = index
        self._connect = connect
        self._pending: list[RecordedEvent] = []
        self._busy = False
        self._stopping = False
        self._changed = threading.Condition()
        self.failure: str | None = None
        self.processed_batches = 0
        self._thread = threading.Thread(target=self._run, name="lcg-vectors", daemon=True)
        self._thread.start()

    # -- CommitListener ---------------------------------------------------------------------

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None:
        """Queue the batch; the writer does not wait for the model. Events that touch no
        vector (a memory write's intent, access counts) are not queued: nothing wakes."""
        relevant = [item for item in recorded if touched_owners(item.event) != ()]
        if not relevant:
            return
        with self._changed:
            self._pending.extend(relevant)
            self._changed.notify_all()

    def rebuilt(self, conn: sqlite3.Connection, groups: Sequence[GroupId] | None) -> None:
        """Let the follower finish, then re-sync the rebuilt groups here."""
        self.settle()
        self.index.rebuilt(conn, groups)

    # -- state ------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Committed events the indexes have not followed yet."""
        with self._changed:
            return len(self._pending)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until every batch committed so far is in the indexes; False on timeout."""
        with self._changed:
            return self._changed.wait_for(
                lambda: (not self._pending and not self._busy) or not self._thread.is_alive(),
                timeout,
            )

    def stop(self) -> None:
        """Follow what is queued, then end the thread (close: before the index checkpoint)."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        self._thread.join()

    # -- the thread -------------------------------------------------------------------------

    def _run(self) -> None:
        _yield_to_searches()
        conn: sqlite3.Connection | None = None
        try:
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: bool(self._pending) or self._stopping)
                    if not self._pending:
                        return  # stopping, and nothing left to follow
                    batch, self._pending = self._pending, []
                    self._busy = True
                try:
                    if conn is None:
                        conn = self._connect()
                    if self.failure is not None:
                        # an earlier batch was lost: bring every group in line with the catalog
                        self.index.rebuilt(conn, None)
                    self.index.committed(conn, batch)
                    self.failure = None
                except Exception as error:  # reported in status until a later commit mends it
                    self.failure = f"VectorIndex: {error}"
                    log.exception("the vector indexes could not follow a commit")
                finally:
                    self.processed_batches += 1
                    with self._changed:
                        self._busy = False
                        self._changed.notify_all()
        finally:
            if conn is not None:
                conn.close()


FOLLOWER_NICENESS = 10


def _yield_to_searches() -> None:
    """Run this thread at a lower CPU priority (Linux: per-thread nice), so that under a write
    burst the model embedding writes does not slow the searches competing for the same cores;
    where it cannot be set, the follower runs at normal priority."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FOLLOWER_NICENESS)
    except (AttributeError, OSError):
        log.debug("the vector follower runs at normal priority")
