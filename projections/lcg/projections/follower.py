"""A derived store that follows committed writes on a thread of its own (ADR 0022, 0039, 0047).

The writer hands each committed batch to `committed` and answers its callers at once; the
thread applies whatever work arrived meanwhile, through its own read connection to
graph.sqlite. `settle` waits until every batch committed so far is applied, or, given lanes,
only the work of those lanes (a lane is a group, or a part of one a subclass names), and a
lane someone waits for is applied first (`_take`). `stop` applies what is queued and ends the
thread. A batch that fails is logged and kept in `failure` (the stores mend a lost batch at
the next one); the thread goes on.
"""

from __future__ import annotations

import itertools
import logging
import sqlite3
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from lcg.projections.wal.store import RecordedEvent

log = logging.getLogger(__name__)

Lane = tuple[str, str]  # (group, what of it: "" unless a subclass says more)
Lanes = tuple[Lane, ...]  # the lanes one piece of work belongs to: its queue
LaneFilter = Callable[[Lane], bool]
W = TypeVar("W")  # one piece of queued work (a committed event, unless a subclass adds more)


class CommitFollower(Generic[W]):
    """The queue, the thread and the waits; subclasses say what a batch does (`_apply`)."""

    label = "a follower"  # in log lines and `failure`

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        *,
        thread_name: str,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._connect = connect
        self._clock = clock  # times batches, for `expected_seconds`
        # queued work, one queue per lane set, each item with its arrival number
        self._queues: dict[Lanes, deque[tuple[int, W]]] = {}
        self._arrivals = itertools.count()
        self._queued_items = 0
        self._weight = 0  # what `pending` reports: queued work, in the subclass's units
        self._queued: Counter[Lane] = Counter()  # work queued per lane, ever
        self._done: Counter[Lane] = Counter()  # work applied (or failed) per lane, ever
        self._waits: list[dict[Lane, int]] = []  # what each lane-bound settle waits for
        self._busy = False
        self._helping = 0  # callers applying work themselves (settle with a helper)
        self._in_hand: set[Lanes] = set()  # the queues of the batch the thread is applying
        self._stopping = False
        self._changed = threading.Condition()
        self.failure: str | None = None
        self.processed_batches = 0
        # seconds the thread takes per unit of work (`_size`), a moving average of its batches;
        # None until one is measured
        self._unit_seconds: float | None = None
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()

    # -- what a subclass says ----------------------------------------------------------------

    def _relevant(self, recorded: Sequence[RecordedEvent]) -> list[W]:
        """What of a committed batch is queued."""
        raise NotImplementedError

    def _lanes(self, work: W) -> tuple[Lane, ...]:
        """The lanes a piece of work belongs to (settle waits per lane)."""
        raise NotImplementedError

    def _size(self, work: W) -> int:
        """How much a piece of work counts in `pending`."""
        return 1

    def _apply(self, conn: sqlite3.Connection, batch: Sequence[W]) -> None:
        raise NotImplementedError

    def _on_thread_start(self) -> None:
        """Called once on the follower's thread before it waits for work."""

    def _skip_at_stop(self, work: W) -> bool:
        """Work a stop leaves undone (the next open derives it again)."""
        return False

    def _take(self) -> list[W]:
        """The next batch (called under the lock, with work queued): all of it, in the order
        it arrived."""
        return self._pull(lambda _: True)

    # -- the queues (under the lock) -------------------------------------------------------

    def _pull(self, chosen: Callable[[Lanes], bool]) -> list[W]:
        """Take every queued piece of work of the chosen queues, in arrival order."""
        keys = [key for key in self._queues if chosen(key)]
        pairs = [pair for key in keys for pair in self._queues.pop(key)]
        if len(keys) > 1:
            pairs.sort(key=lambda pair: pair[0])
        self._queued_items -= len(pairs)
        return [work for _, work in pairs]

    def _head(self, key: Lanes) -> tuple[int, W]:
        return self._queues[key][0]

    def _pop(self, key: Lanes) -> W:
        """Take the oldest piece of work of one queue."""
        queue = self._queues[key]
        _, work = queue.popleft()
        if not queue:
            del self._queues[key]
        self._queued_items -= 1
        return work

    # -- the queue -----------------------------------------------------------------------

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None:
        """Queue the batch; the writer does not wait for it to be applied."""
        self._queue(self._relevant(recorded))

    def _queue(self, work: Sequence[W]) -> None:
        if not work:
            return
        with self._changed:
            for item in work:
                key = self._lanes(item)
                self._queues.setdefault(key, deque()).append((next(self._arrivals), item))
                self._queued_items += 1
                self._count(item, self._queued)
            self._changed.notify_all()

    def _count(self, work: W, into: Counter[Lane]) -> None:
        """Count work queued (`_queued`) or finished (`_done`), per lane and in `pending`."""
        size = self._size(work)
        self._weight += size if into is self._queued else -size
        for lane in self._lanes(work):
            into[lane] += size

    @property
    def pending(self) -> int:
        """Committed work not applied yet."""
        with self._changed:
            return self._weight

    def pending_in(self, lanes: LaneFilter) -> int:
        """Queued work of the chosen lanes not applied yet."""
        with self._changed:
            return sum(
                count - self._done[lane] for lane, count in self._queued.items() if lanes(lane)
            )

    def expected_seconds(self, lanes: LaneFilter) -> float | None:
        """How long the chosen lanes' queued work should take the thread, at the rate of its
        recent batches (None before any was measured)."""
        with self._changed:
            if self._unit_seconds is None:
                return None
            unit = self._unit_seconds
        return self.pending_in(lanes) * unit

    def _measured(self, batch: Sequence[W], seconds: float) -> None:
        """Fold one applied batch into the rate (under the lock)."""
        units = sum(self._size(work) for work in batch)
        if units <= 0:
            return
        rate = seconds / units
        previous = self._unit_seconds
        self._unit_seconds = rate if previous is None else 0.8 * previous + 0.2 * rate

    def _urgent(self) -> set[Lane]:
        """Lanes a settle waits for that still have work queued (under the lock)."""
        return {
            lane
            for wait in self._waits
            for lane, target in wait.items()
            if self._done[lane] < target
        }

    def settle(
        self,
        timeout: float | None = None,
        lanes: LaneFilter | None = None,
        *,
        helper: sqlite3.Connection | None = None,
        hopeless: bool = False,
    ) -> bool:
        """Wait until every batch committed so far is applied (with `lanes`: only the work of
        the lanes it chooses, which the thread then applies first); False on timeout.

        With `hopeless` (and lanes and a timeout), a wait that the thread's recent rate says
        cannot end within the timeout is not begun: False at once, since under a sustained
        burst a read would otherwise pay the whole bound for nothing (ADR 0047).

        With `helper` (a read connection of the calling thread), the caller applies the
        chosen lanes' queued work itself instead of waiting for the thread to reach it, and
        waits only for such work the thread is applying already."""
        if hopeless and lanes is not None and timeout is not None:
            expected = self.expected_seconds(lanes)
            if expected is not None and expected > timeout:
                return False
        if helper is not None and lanes is not None:
            self._help(helper, lanes)
        with self._changed:
            if lanes is None:
                return self._changed.wait_for(
                    lambda: (
                        (not self._queued_items and not self._busy and not self._helping)
                        or not self._thread.is_alive()
                    ),
                    timeout,
                )
            wait = {
                lane: count
                for lane, count in self._queued.items()
                if lanes(lane) and self._done[lane] < count
            }
            if not wait:
                return True
            self._waits.append(wait)
            self._changed.notify_all()
            try:
                return self._changed.wait_for(
                    lambda: (
                        all(self._done[lane] >= n for lane, n in wait.items())
                        or not self._thread.is_alive()
                    ),
                    timeout,
                )
            finally:
                self._waits.remove(wait)

    def _help(self, conn: sqlite3.Connection, lanes: LaneFilter) -> None:
        """Apply the chosen lanes' queued work on the calling thread."""
        with self._changed:
            # a queue whose earlier work the thread has in hand is left to it: in order
            mine = self._pull(
                lambda key: key not in self._in_hand and any(lanes(lane) for lane in key)
            )
            if not mine:
                return
            self._helping += 1
        try:
            self._apply(conn, mine)
        except Exception as error:  # kept until a later batch mends it, as on the thread
            self.failure = f"{self.label}: {error}"
            log.exception("%s could not follow a commit", self.label)
        finally:
            with self._changed:
                for work in mine:
                    self._count(work, self._done)
                self._helping -= 1
                self._changed.notify_all()

    def stop(self) -> None:
        """Apply what is queued (but what `_skip_at_stop` leaves), then end the thread."""
        with self._changed:
            for key, queue in list(self._queues.items()):
                kept = deque(pair for pair in queue if not self._skip_at_stop(pair[1]))
                for _, work in queue:
                    if self._skip_at_stop(work):
                        self._count(work, self._done)
                self._queued_items -= len(queue) - len(kept)
                if kept:
                    self._queues[key] = kept
                else:
                    del self._queues[key]
            self._stopping = True
            self._changed.notify_all()
        self._thread.join()

    def _run(self) -> None:
        self._on_thread_start()
        conn: sqlite3.Connection | None = None
        try:
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: bool(self._queued_items) or self._stopping)
                    if not self._queued_items:
                        return  # stopping, and nothing left to apply
                    batch = self._take()
                    self._in_hand = {self._lanes(work) for work in batch}
                    self._busy = True
                started = self._clock()
                try:
                    if conn is None:
                        conn = self._connect()
                    self._apply(conn, batch)
                    self.failure = None
                except Exception as error:  # kept until a later batch mends it
                    self.failure = f"{self.label}: {error}"
                    log.exception("%s could not follow a commit", self.label)
                finally:
                    self.processed_batches += 1
                    with self._changed:
                        for item in batch:
                            self._count(item, self._done)
                        self._measured(batch, self._clock() - started)
                        self._busy = False
                        self._in_hand = set()
                        self._changed.notify_all()
        finally:
            if conn is not None:
                conn.close()
