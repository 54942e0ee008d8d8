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
from lcg.projections.follower import CommitFollower
from lcg.projections.vectors.catalog import touched_owners
from lcg.projections.vectors.index import VectorIndex
from lcg.projections.wal.store import RecordedEvent

log = logging.getLogger(__name__)


class VectorFollower(CommitFollower):
    """A CommitListener that updates the vector indexes on a background thread."""

    label = "VectorIndex"

    def __init__(self, index: VectorIndex, connect: Callable[[], sqlite3.Connection]) -> None:
        self.index = index
        super().__init__(connect, thread_name="lcg-vectors")

    def _relevant(self, recorded: Sequence[RecordedEvent]) -> list[RecordedEvent]:
        """Events that touch no vector (a memory write's intent, access counts) are not
        queued: nothing wakes."""
        return [item for item in recorded if touched_owners(item.event) != ()]

    def rebuilt(self, conn: sqlite3.Connection, groups: Sequence[GroupId] | None) -> None:
        """Let the follower finish, then re-sync the rebuilt groups here."""
        self.settle()
        self.index.rebuilt(conn, groups)

    def _on_thread_start(self) -> None:
        _yield_to_searches()

    def _apply(self, conn: sqlite3.Connection, batch: Sequence[RecordedEvent]) -> None:
        if self.failure is not None:  # an earlier batch was lost: every group to the catalog
            self.index.rebuilt(conn, None)
        self.index.committed(conn, batch)


FOLLOWER_NICENESS = 10


def _yield_to_searches() -> None:
    """Run this thread at a lower CPU priority (Linux: per-thread nice), so that under a write
    burst the model embedding writes does not slow the searches competing for the same cores;
    where it cannot be set, the follower runs at normal priority."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FOLLOWER_NICENESS)
    except (AttributeError, OSError):
        log.debug("the vector follower runs at normal priority")
