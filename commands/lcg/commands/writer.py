"""The single write path: handlers decide inside a batch, the WAL commits, then the projection.

Group commit (docs/adr/0005-durability-and-group-commit.md): callers queue; whoever takes the
batch lock runs every queued handler in one projection transaction, appends all their events
to the WAL in one commit, then commits the projection and wakes the callers. A caller is
answered only after its events are durable and visible to reads.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from lcg.domain.errors import Conflict
from lcg.domain.events import DomainEvent
from lcg.domain.ids import GroupId, Seq
from lcg.projections.runner import Positions, ProjectionError, ProjectionRunner
from lcg.projections.wal.store import EventLog, RecordedEvent

T = TypeVar("T")
log = logging.getLogger(__name__)


class CommitListener(Protocol):
    """A derived store outside the projection transaction (FAISS files) that follows it."""

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None: ...

    def rebuilt(self, conn: sqlite3.Connection, groups: Sequence[GroupId] | None) -> None: ...


class GroupPinned(Conflict):
    """Writes to a group held at a seq by a bounded replay are refused until it is released."""


class WriteContext:
    """What a handler sees: the projection as of every earlier write, and `append`."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self.conn = writer.runner.conn
        self.recorded: list[RecordedEvent] = []

    def append(self, group_id: GroupId, events: Sequence[DomainEvent]) -> list[RecordedEvent]:
        """Give the events the group's next seqs and apply them to the projections."""
        if not events:
            return []
        self._writer.refuse_if_pinned(group_id)
        head = self._writer.head(group_id)
        batch = [
            RecordedEvent(group_id, Seq(head + offset), event)
            for offset, event in enumerate(events, start=1)
        ]
        self._writer.runner.apply_tracked(batch, self._writer.positions)
        self._writer.heads[group_id] = head + len(batch)
        self.recorded.extend(batch)
        return batch


@dataclass
class _Pending(Generic[T]):
    handler: Callable[[WriteContext], T]
    done: threading.Event = field(default_factory=threading.Event)
    result: T | None = None
    error: BaseException | None = None


class Writer:
    """Serialises every mutation of a workspace through one queue and one batch lock."""

    def __init__(
        self,
        log: EventLog,
        runner: ProjectionRunner,
        clock: Callable[[], datetime],
        max_batch: int = 512,
    ) -> None:
        self.log = log
        self.runner = runner
        self.clock = clock
        self.max_batch = max_batch
        self.heads: dict[GroupId, int] = {}
        self.positions: Positions = {}  # projection positions moved by the running batch
        self._pins: dict[GroupId, int | None] = {}  # pins change only under exclusive()
        self.listeners: list[CommitListener] = []
        self.listener_failure: str | None = None
        self._queue: list[_Pending[object]] = []
        self._queue_lock = threading.Lock()
        self._batch_lock = threading.RLock()

    def head(self, group_id: GroupId) -> int:
        if group_id not in self.heads:
            self.heads[group_id] = self.log.head(group_id)
        return self.heads[group_id]

    def refuse_if_pinned(self, group_id: GroupId) -> None:
        if group_id not in self._pins:
            self._pins[group_id] = self.runner.position(group_id).pinned_to
        pinned = self._pins[group_id]
        if pinned is not None:
            raise GroupPinned(
                f"group_id: group {group_id!r} is pinned at seq {pinned} by a bounded replay; "
                "writes are refused until `lcg replay --group "
                f"{group_id}` (or knowledge_rebuild_from_wal without to_seq) releases it",
                field="group_id",
                rule="must not be pinned by a bounded replay",
            )

    def execute(self, handler: Callable[[WriteContext], T]) -> T:
        """Run the handler in the next batch and return its result once durable."""
        pending: _Pending[T] = _Pending(handler)
        with self._queue_lock:
            self._queue.append(pending)  # type: ignore[arg-type]
        with self._batch_lock:
            if not pending.done.is_set():
                self._run_queued()
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return pending.result  # type: ignore[return-value]

    def execute_many(self, handlers: Sequence[Callable[[WriteContext], T]]) -> list[T | Exception]:
        """Run the handlers as one batch (one WAL commit); a failed handler yields its error."""
        items: list[_Pending[T]] = [_Pending(h) for h in handlers]
        with self._batch_lock:
            self._run_batch(items)  # type: ignore[arg-type]
        results: list[T | Exception] = []
        for item in items:
            if isinstance(item.error, Exception):
                results.append(item.error)
            elif item.error is not None:
                raise item.error
            else:
                results.append(item.result)  # type: ignore[arg-type]
        return results

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold off every batch (rebuilds, purges of the whole graph)."""
        with self._batch_lock:
            try:
                yield
            finally:
                self.heads.clear()
                self._pins.clear()

    def _run_queued(self) -> None:
        while True:
            with self._queue_lock:
                items, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            if not items:
                return
            self._run_batch(items)

    def _run_batch(self, items: Sequence[_Pending[object]]) -> None:
        conn = self.runner.conn
        recorded: list[RecordedEvent] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for item in items:
                self._run_one(conn, item, recorded)
            self.runner.store_positions(self.positions)
            self.log.append(recorded, self.clock())
        except BaseException as error:
            self._abort(conn, items, error)
            raise
        try:
            conn.execute("COMMIT")
        except BaseException as error:  # noqa: BLE001 (reported to every caller of the batch)
            # The events are durable in the WAL; only the projection lost them. Apply them
            # again from the log so callers' writes become visible, or say exactly that.
            self._abort(conn, (), error)
            self._reapply_after_failed_commit(items, recorded, error)
        else:
            self._notify(lambda listener: listener.committed(conn, recorded))
        finally:
            self.positions = {}
            for item in items:
                item.done.set()

    def notify_rebuilt(self, groups: Sequence[GroupId] | None) -> None:
        """Tell derived stores that the projections of these groups (None: all) were rebuilt."""
        self._notify(lambda listener: listener.rebuilt(self.runner.conn, groups))

    def _notify(self, call: Callable[[CommitListener], None]) -> None:
        # The write is durable and visible in the graph; a listener that cannot follow
        # (an embedder error) is reported in knowledge_status and re-synced at the next start.
        for listener in self.listeners:
            try:
                call(listener)
            except Exception as error:
                self.listener_failure = f"{type(listener).__name__}: {error}"
                log.exception("a derived index could not follow the commit")

    def _reapply_after_failed_commit(
        self,
        items: Sequence[_Pending[object]],
        recorded: list[RecordedEvent],
        error: BaseException,
    ) -> None:
        groups = sorted({r.group_id for r in recorded})
        try:
            self.runner.catch_up(groups)
        except Exception as again:
            failure = ProjectionError(
                f"the write is durable in the WAL but the projection could not apply it "
                f"({error}; retrying: {again}); it is applied at the next start"
            )
            self.runner.failure = str(failure)
            for item in items:
                if item.error is None:
                    item.error, item.result = failure, None
            raise failure from again

    def _run_one(
        self, conn: sqlite3.Connection, item: _Pending[object], recorded: list[RecordedEvent]
    ) -> None:
        heads_before = dict(self.heads)
        positions_before = dict(self.positions)
        conn.execute("SAVEPOINT command")
        context = WriteContext(self)
        try:
            item.result = item.handler(context)
        except Exception as error:  # noqa: BLE001 (a handler failure is this caller's alone)
            conn.execute("ROLLBACK TO command")
            conn.execute("RELEASE command")
            self.heads = heads_before
            self.positions = positions_before
            item.error = error
            return
        conn.execute("RELEASE command")
        recorded.extend(context.recorded)

    def _abort(
        self, conn: sqlite3.Connection, items: Sequence[_Pending[object]], error: BaseException
    ) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        self.heads.clear()
        self.positions = {}
        self._pins.clear()
        for item in items:
            if item.error is None:
                item.error, item.result = error, None
            item.done.set()
