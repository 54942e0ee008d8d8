"""The FAISS indexes follow committed writes on a thread of their own (ADR 0022, 0047).

Embedding a write's new texts costs the model 10 ms or more per text here (~100 texts/s on
one core whatever the batch size), and it ran in the write's batch, under the writer's lock:
under eight clients every write waited for the model (issue 9, "Load"). The follower takes
the commits off that path: the writer hands it each committed batch and answers its callers
at once; the follower reads the catalog through its own read connection, embeds the new texts
(through the content-addressed cache) and updates the indexes. Graph reads and the BM25 leg
see a write when it is acknowledged; the vector legs see it once the follower has caught up
(`settle` waits for that).

Work is queued per lane: a group's concepts (agent memory) and the rest of the group
(knowledge). A reader or the intent processor waits only for the lanes it reads, and the
thread applies a waited-for lane's work before anything else, in batches of at most
`BATCH_EVENTS`, so a backlog of other groups' writes never holds up a session's memory writes
(issue 24). A restart hands the rows whose texts need the model to the follower too
(`Backfill`), so the service answers while they are embedded.

Rebuilds and clears (`rebuilt`) first let the follower finish, then sync on the caller's
thread, so they never interleave with it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from lcg.domain.events import GcSwept, MemoryWriteApplied
from lcg.domain.ids import GroupId
from lcg.projections.follower import CommitFollower, Lane
from lcg.projections.vectors.catalog import CONCEPT, touched_owners
from lcg.projections.vectors.index import CatalogRow, VectorIndex
from lcg.projections.wal.store import RecordedEvent

log = logging.getLogger(__name__)

CONCEPTS = "concepts"  # the lane of a group's concept vectors (agent memory)
KNOWLEDGE = "knowledge"  # the lane of its entity, edge and passage vectors
BATCH_EVENTS = 16  # events per batch: what a waiter arriving mid-batch may wait behind
BACKFILL_ROWS = 64  # deferred rows per piece of backfill work


@dataclass(frozen=True, slots=True)
class Backfill:
    """Catalog rows `VectorIndex.open` left for the model, embedded on the follower's thread."""

    group_id: str
    rows: tuple[CatalogRow, ...]


Work = RecordedEvent | Backfill


def lanes_of(work: Work) -> tuple[Lane, ...]:
    """A memory event touches only the group's concept vectors; a backfill the lanes of its
    rows; any other event the knowledge lane, or both when it re-syncs the whole group."""
    group = work.group_id
    if isinstance(work, Backfill):
        kinds = {CONCEPTS if row[1] == CONCEPT else KNOWLEDGE for row in work.rows}
        return tuple((group, kind) for kind in sorted(kinds))
    if isinstance(work.event, MemoryWriteApplied | GcSwept):
        return ((group, CONCEPTS),)
    if touched_owners(work.event) is None:
        return ((group, CONCEPTS), (group, KNOWLEDGE))
    return ((group, KNOWLEDGE),)


def lanes(groups: Iterable[str] | None, kind: str) -> Callable[[Lane], bool]:
    """Chooses the `kind` lanes of the groups (None: of every group)."""
    if groups is None:
        return lambda lane: lane[1] == kind
    chosen = set(groups)
    return lambda lane: lane[1] == kind and lane[0] in chosen


class VectorFollower(CommitFollower[Work]):
    """A CommitListener that updates the vector indexes on a background thread."""

    label = "VectorIndex"

    def __init__(self, index: VectorIndex, connect: Callable[[], sqlite3.Connection]) -> None:
        self.index = index
        super().__init__(connect, thread_name="lcg-vectors")

    def _relevant(self, recorded: Sequence[RecordedEvent]) -> list[Work]:
        """Events that touch no vector (a memory write's intent, access counts) are not
        queued: nothing wakes."""
        return [item for item in recorded if touched_owners(item.event) != ()]

    def _lanes(self, work: Work) -> tuple[Lane, ...]:
        return lanes_of(work)

    def _size(self, work: Work) -> int:
        return len(work.rows) if isinstance(work, Backfill) else 1

    def backfill(self, backlog: Mapping[str, Sequence[CatalogRow]]) -> None:
        """Queue what `VectorIndex.open` deferred, in pieces a waiter can get ahead of."""
        work: list[Work] = []
        for group, rows in backlog.items():
            for kind in (CONCEPTS, KNOWLEDGE):  # one lane per piece: a wait counts its rows
                mine = [row for row in rows if (row[1] == CONCEPT) == (kind == CONCEPTS)]
                work.extend(
                    Backfill(group, tuple(mine[start : start + BACKFILL_ROWS]))
                    for start in range(0, len(mine), BACKFILL_ROWS)
                )
        self._queue(work)

    def _take(self) -> list[Work]:
        """The next batch: one queue's work only, so cheap concept work never waits behind
        the model; a waited-for lane's queue first, else a group's concepts (their texts are
        cached by the intent processor), else the queue holding the oldest work; at most
        BATCH_EVENTS events, or one piece of backfill."""
        urgent = self._urgent()
        keys = list(self._queues)
        chosen = (
            [key for key in keys if urgent.intersection(key)]
            or [key for key in keys if len(key) == 1 and key[0][1] == CONCEPTS]
            or keys
        )
        key = min(chosen, key=lambda k: self._head(k)[0])
        if isinstance(self._head(key)[1], Backfill):
            return [self._pop(key)]
        batch: list[Work] = []
        while (
            key in self._queues
            and len(batch) < BATCH_EVENTS
            and not isinstance(self._head(key)[1], Backfill)
        ):
            batch.append(self._pop(key))
        return batch

    def _skip_at_stop(self, work: Work) -> bool:
        """A close does not wait for the model on a start's backlog: the next open finds
        those rows missing again."""
        return isinstance(work, Backfill)

    def rebuilt(self, conn: sqlite3.Connection, groups: Sequence[GroupId] | None) -> None:
        """Let the follower finish, then re-sync the rebuilt groups here."""
        self.settle()
        self.index.rebuilt(conn, groups)

    def _on_thread_start(self) -> None:
        _yield_to_searches()

    def _apply(self, conn: sqlite3.Connection, batch: Sequence[Work]) -> None:
        if self.failure is not None:  # an earlier batch was lost: every group to the catalog
            self.index.rebuilt(conn, None)
        events = [work for work in batch if isinstance(work, RecordedEvent)]
        if events:
            self.index.committed(conn, events)
        for work in batch:
            if isinstance(work, Backfill):
                self.index.backfill(conn, work.group_id, work.rows)


FOLLOWER_NICENESS = 10


def _yield_to_searches() -> None:
    """Run this thread at a lower CPU priority (Linux: per-thread nice), so that under a write
    burst the model embedding writes does not slow the searches competing for the same cores;
    where it cannot be set, the follower runs at normal priority."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FOLLOWER_NICENESS)
    except (AttributeError, OSError):
        log.debug("the vector follower runs at normal priority")
