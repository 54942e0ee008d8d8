"""A derived store that follows committed writes on a thread of its own (ADR 0022, 0039).

The writer hands each committed batch to `committed` and answers its callers at once; the
thread applies whatever batches arrived meanwhile in one go, through its own read connection
to graph.sqlite. `settle` waits until every batch committed so far is applied, `stop` applies
what is queued and ends the thread. A batch that fails is logged and kept in `failure` (the
stores mend a lost batch at the next one); the thread goes on.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence

from lcg.projections.wal.store import RecordedEvent

log = logging.getLogger(__name__)


class CommitFollower:
    """The queue, the thread and the waits; subclasses say what a batch does (`_apply`)."""

    label = "a follower"  # in log lines and `failure`

    def __init__(self, connect: Callable[[], sqlite3.Connection], *, thread_name: str) -> None:
        self._connect = connect
        self._pending: list[RecordedEvent] = []
        self._busy = False
        self._stopping = False
        self._changed = threading.Condition()
        self.failure: str | None = None
        self.processed_batches = 0
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()

    def _relevant(self, recorded: Sequence[RecordedEvent]) -> list[RecordedEvent]:
        """What of a committed batch is queued (all of it unless a subclass says less)."""
        return list(recorded)

    def _apply(self, conn: sqlite3.Connection, batch: Sequence[RecordedEvent]) -> None:
        raise NotImplementedError

    def _on_thread_start(self) -> None:
        """Called once on the follower's thread before it waits for work."""

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None:
        """Queue the batch; the writer does not wait for it to be applied."""
        relevant = self._relevant(recorded)
        if not relevant:
            return
        with self._changed:
            self._pending.extend(relevant)
            self._changed.notify_all()

    @property
    def pending(self) -> int:
        """Committed events not applied yet."""
        with self._changed:
            return len(self._pending)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until every batch committed so far is applied; False on timeout."""
        with self._changed:
            return self._changed.wait_for(
                lambda: (not self._pending and not self._busy) or not self._thread.is_alive(),
                timeout,
            )

    def stop(self) -> None:
        """Apply what is queued, then end the thread."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        self._thread.join()

    def _run(self) -> None:
        self._on_thread_start()
        conn: sqlite3.Connection | None = None
        try:
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: bool(self._pending) or self._stopping)
                    if not self._pending:
                        return  # stopping, and nothing left to apply
                    batch, self._pending = self._pending, []
                    self._busy = True
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
                        self._busy = False
                        self._changed.notify_all()
        finally:
            if conn is not None:
                conn.close()
