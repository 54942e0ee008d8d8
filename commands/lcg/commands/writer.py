"""The single write path: handlers decide inside a batch, the WAL commits, then the projection.

Group commit (docs/adr/0005-durability-and-group-commit.md): callers queue; whoever takes the
batch lock runs every queued handler in one projection transaction, appends all their events
to the WAL in one commit, then commits the projection and wakes the callers. A caller is
answered only after its events are durable and visible to reads. Handlers run without
savepoints (docs/adr/0017-write-and-replay-fast-paths.md): one refused before appending
changed nothing; one that fails after appending rolls the batch back, which is then run again
without it. A group whose projections are behind its WAL (a commit that failed on a full disk,
an unreadable event at open) is caught up from the log before a batch writes to it
(docs/adr/0019-wal-identity-and-storage-failures.md). An append that loses its seqs to
another node's (`ConcurrentAppend`, a shared PostgreSQL log) rolls the batch back, catches
the group up and decides the batch again, a bounded number of times
(docs/adr/0075-multi-node-writes-and-leases.md).
"""

from __future__ import annotations

import contextvars
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Protocol, TypeVar, cast

from lcg.commands.tenure import Fence
from lcg.domain.errors import Conflict
from lcg.domain.events import DomainEvent
from lcg.domain.ids import GroupId, Seq
from lcg.projections.faults import (
    CorruptEvent,
    GroupBehind,
    LogBehindProjections,
    StorageFailure,
    is_storage_error,
)
from lcg.projections.runner import Positions, ProjectionError, ProjectionRunner
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.store import ConcurrentAppend, RecordedEvent

T = TypeVar("T")
log = logging.getLogger(__name__)
# Where a call's writes are noted, `{group: last seq}` (ADR 0086): a transport sets a dict
# for the call, `Writer.execute` fills it once the write is durable, and the transport sends
# it beside the result (MCP `_meta`, the socket's `written`), never inside it.
WRITTEN: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar(
    "lcg_written", default=None
)


def note_written(written: dict[str, int]) -> None:
    """Add a durable write's `{group: last seq}` to the calling context's record, if any."""
    record = WRITTEN.get()
    if record is None:
        return
    for group, seq in written.items():
        record[group] = max(seq, record.get(group, 0))


@contextmanager
def recording_writes(record: dict[str, int]) -> Iterator[dict[str, int]]:
    """Note the writes made in this block (this thread, or a context copied from it)."""
    token = WRITTEN.set(record)
    try:
        yield record
    finally:
        WRITTEN.reset(token)


class CommitListener(Protocol):
    """A derived store outside the projection transaction (FAISS files) that follows it."""

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None: ...

    def rebuilt(self, conn: sqlite3.Connection, groups: Sequence[GroupId] | None) -> None: ...


class _FencedLog(Protocol):
    """A log whose append takes a lease's fence (`PostgresLog`, ADR 0075)."""

    def append(self, batch: Sequence[RecordedEvent], *, fence: Fence | None = None) -> None: ...


class GroupPinned(Conflict):
    """Writes to a group held at a seq by a bounded replay are refused until it is released."""


class WriteContext:
    """What a handler sees: the projection as of every earlier write, and `append`."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self.conn = writer.conn
        self.recorded: list[RecordedEvent] = []

    def is_pinned(self, group_id: GroupId) -> bool:
        """Whether a bounded replay holds the group (its writes are refused)."""
        try:
            self._writer.refuse_if_pinned(group_id)
        except GroupPinned:
            return True
        return False

    def applied_seq(self, group_id: GroupId) -> int:
        """The group's applied seq as this batch sees it (the lowest of its projections'
        positions, counting the events this batch applied): a pointer's bound_at_seq."""
        return self._writer.applied_seq(group_id)

    def append(self, group_id: GroupId, events: Sequence[DomainEvent]) -> list[RecordedEvent]:
        """Give the events the group's next seqs and apply them to the projections."""
        if not events:
            return []
        batch = self._writer.stage(group_id, events)
        self.recorded.extend(batch)
        return batch


class _Rerun(Exception):
    """A handler failed after its events were applied: the batch is rolled back and re-run."""


class _Behind(Exception):
    """A handler wrote to a group whose projections are behind its WAL: the batch is rolled
    back, the group caught up, and the batch run again (the handler read stale rows)."""


@dataclass
class _Pending(Generic[T]):
    handler: Callable[[WriteContext], T]
    done: threading.Event = field(default_factory=threading.Event)
    result: T | None = None
    error: BaseException | None = None
    written: dict[str, int] = field(default_factory=dict)  # {group: last seq} it appended


class Writer:
    """Serialises every mutation of a workspace through one queue and one batch lock."""

    def __init__(
        self,
        log: LogStore,
        runner: ProjectionRunner,
        clock: Callable[[], datetime],
        max_batch: int = 512,
    ) -> None:
        self.log = log
        self.runner = runner
        self.clock = clock
        self.max_batch = max_batch
        # appends a batch may lose to another node's (ConcurrentAppend) before its write is
        # refused with the storage error; each loss catches the group up and decides again.
        # Each loss is another node's append, so a write fails only when other nodes appended
        # more than this many batches to the group while it was being decided (ADR 0075)
        self.max_contention = 64
        # Caches of committed state, valid while this writer holds the batch lock; cleared by
        # exclusive() (rebuilds, clears) and by a failed batch.
        self._heads: dict[GroupId, int] = {}
        self._positions: Positions = {}  # projection positions, read lazily
        self._moved: set[tuple[str, str]] = set()  # positions the running batch moved
        self._pins: dict[GroupId, int | None] = {}  # pins change only under exclusive()
        self._checked: set[GroupId] = set()  # groups whose positions were seen at their head
        # Groups behind their WAL, to catch up before the next batch; those whose catch-up
        # failed, with why; those retried in the running batch.
        self.lagging: set[GroupId] = set()
        self._blocked: dict[GroupId, BaseException] = {}
        # Groups whose log holds a damaged event the projections applied (the check at open,
        # ADR 0049): their writes are refused until a rebuild of the group succeeds.
        self._damaged: dict[GroupId, CorruptEvent] = {}
        self._retried: set[GroupId] = set()
        self.storage_failure: str | None = None  # the last write's, until a write commits
        self.listeners: list[CommitListener] = []
        self.listener_failure: str | None = None
        self._queue: list[_Pending[object]] = []
        self._queue_lock = threading.Lock()
        self._batch_lock = threading.RLock()

    @property
    def conn(self) -> sqlite3.Connection:
        """The projection connection handlers read through (inside the batch's transaction)."""
        return self.runner.conn

    def applied_seq(self, group_id: GroupId) -> int:
        """See WriteContext.applied_seq."""
        return min(
            self._positions[(name, group_id)]
            if (name, group_id) in self._positions
            else self.runner.stored_position(name, group_id)
            for name in self.runner.names
        )

    def head(self, group_id: GroupId) -> int:
        if group_id not in self._heads:
            self._heads[group_id] = self.log.head(group_id)
        return self._heads[group_id]

    def stage(self, group_id: GroupId, events: Sequence[DomainEvent]) -> list[RecordedEvent]:
        """Give the events the group's next seqs and apply them in the open batch."""
        self.refuse_if_pinned(group_id)
        damaged = self._damaged.get(group_id)
        if damaged is not None:  # a new exception each time: one raised twice grows its trace
            raise CorruptEvent(
                damaged.path, damaged.group_id, damaged.seq, damaged.reason, applied=True
            )
        head = self.head(group_id)
        if group_id not in self._checked:
            self._check_caught_up(group_id, head)
        batch = [
            RecordedEvent(group_id, Seq(head + offset), event)
            for offset, event in enumerate(events, start=1)
        ]
        self._heads[group_id] = head + len(batch)  # before applying: a failure discards it
        self.runner.apply_tracked(batch, self._positions, self._moved)
        return batch

    def _check_caught_up(self, group_id: GroupId, head: int) -> None:
        """Refuse to stage past a gap: a group behind its WAL is caught up first (the batch
        is re-run), one whose catch-up failed is refused with the reason."""
        positions = [
            self._positions.setdefault(
                (name, group_id), self.runner.stored_position(name, group_id)
            )
            for name in self.runner.names
        ]
        if max(positions) > head:  # the log lost events under a running writer
            raise LogBehindProjections(
                self.log.where, self.runner.path, [(group_id, head, max(positions))]
            )
        if min(positions) < head:
            blocked = self._blocked.get(group_id)
            if blocked is not None and group_id in self._retried:
                raise GroupBehind(group_id, min(positions), head, blocked)
            self.lagging.add(group_id)
            raise _Behind
        self._checked.add(group_id)

    def faults(self) -> list[str]:
        """What keeps writes from working: the last storage failure, groups not caught up."""
        found = [self.storage_failure] if self.storage_failure else []
        found += [
            f"group {group!r} is behind its WAL: {error}"
            for group, error in sorted(self._blocked.items())
        ]
        found += [str(error) for _, error in sorted(self._damaged.items())]
        return found

    def refuse_if_pinned(self, group_id: GroupId) -> None:
        if group_id not in self._pins:
            self._pins[group_id] = self.runner.position(group_id).pinned_to
        pinned = self._pins[group_id]
        if pinned is not None:
            raise GroupPinned(
                f"group_id: group {group_id!r} is pinned at seq {pinned} by a bounded replay; "
                "writes are refused until `lcg replay --group "
                f"{group_id}` (or knowledge_rebuild_from_wal with from_seq {pinned + 1}) "
                "replays the rest and releases it",
                field="group_id",
                rule="must not be pinned by a bounded replay",
            )

    def execute(self, handler: Callable[[WriteContext], T], *, fence: Fence | None = None) -> T:
        """Run the handler in the next batch and return its result once durable.

        `fence` (a lease's name and the caller's epoch, ADR 0085): the handler runs in a batch
        of its own whose append is refused (`Fenced`, nothing written) unless the lease is
        still at that epoch: a job's holder paused past its lease writes nothing after a
        takeover."""
        if fence is not None:
            return self._execute_fenced(handler, fence)
        pending: _Pending[T] = _Pending(handler)
        with self._queue_lock:
            self._queue.append(pending)  # type: ignore[arg-type]
        with self._batch_lock:
            if not pending.done.is_set():
                self._run_queued()
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        note_written(pending.written)
        return pending.result  # type: ignore[return-value]

    def _execute_fenced(self, handler: Callable[[WriteContext], T], fence: Fence) -> T:
        pending: _Pending[T] = _Pending(handler)
        with self._batch_lock:
            self._run_batch([pending], fence)  # type: ignore[list-item]
        if pending.error is not None:
            raise pending.error
        note_written(pending.written)
        return pending.result  # type: ignore[return-value]

    def execute_many(self, handlers: Sequence[Callable[[WriteContext], T]]) -> list[T | Exception]:
        """Run the handlers as one batch (one WAL commit); a failed handler yields its error."""
        done = threading.Event()  # one batch, one completion: nobody waits on single items
        items: list[_Pending[T]] = [_Pending(h, done) for h in handlers]
        with self._batch_lock:
            self._run_batch(items)  # type: ignore[arg-type]
        results: list[T | Exception] = []
        for item in items:
            if isinstance(item.error, Exception):
                results.append(item.error)
            elif item.error is not None:
                raise item.error
            else:
                note_written(item.written)
                results.append(item.result)  # type: ignore[arg-type]
        return results

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold off every batch (rebuilds, purges of the whole graph)."""
        with self._batch_lock:
            try:
                yield
            except StorageFailure as failure:  # health says so until a write commits
                if failure.of_workspace:  # not a dump's target directory (ADR 0048)
                    self.storage_failure = str(failure)
                raise
            finally:
                self._forget()

    def follow(self, page: Sequence[RecordedEvent]) -> None:
        """Apply a page of one group's events that another node appended (a log follower's,
        ADR 0076), between batches, in a transaction of its own; events at or below the
        group's position are skipped, a pinned group is left alone. Derived stores follow as
        after a batch."""
        if not page:
            return
        group = page[0].group_id
        conn = self.runner.conn
        with self._batch_lock:
            state = self.runner.position(group)
            fresh = [r for r in page if r.seq > state.position]
            if state.pinned_to is not None or not fresh:
                return
            positions: Positions = {}
            moved: set[tuple[str, str]] = set()
            conn.execute("BEGIN IMMEDIATE")
            try:
                self.runner.apply_tracked(fresh, positions, moved)
                self.runner.store_positions({key: positions[key] for key in moved})
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._forget()  # the cached heads and positions are behind the log now
            self._notify(lambda listener: listener.committed(conn, fresh))

    def applied_position(self, group_id: GroupId) -> int:
        """The group's committed position (the lowest of its projections'), between batches."""
        with self._batch_lock:
            return self.runner.position(group_id).position

    def _run_queued(self) -> None:
        while True:
            with self._queue_lock:
                items, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            if not items:
                return
            self._run_batch(items)

    def _run_batch(self, items: Sequence[_Pending[object]], fence: Fence | None = None) -> None:
        conn = self.runner.conn
        recorded: list[RecordedEvent] = []
        self._retried = set()
        try:
            contended = 0
            while True:
                self._catch_up_lagging()
                conn.execute("BEGIN IMMEDIATE")
                try:
                    recorded = self._run_handlers(items)
                except _Rerun:
                    _rollback(conn)
                    self._forget()
                    continue
                self.runner.store_positions({key: self._positions[key] for key in self._moved})
                try:
                    self._append(recorded, fence)
                except ConcurrentAppend as taken:
                    # Another node appended at these seqs (ADR 0075): its events are caught
                    # up before the batch is decided again, on the state that includes them.
                    _rollback(conn)
                    self._forget()
                    contended += 1
                    if contended > self.max_contention:
                        raise self._contention_failure(contended, taken) from taken
                    for item in items:
                        item.error, item.result = None, None
                    continue
                break
        except BaseException as error:
            failure = self._storage_failure(error, "write to")
            self._abort(conn, items, failure)
            if failure is error:
                raise
            raise failure from error
        try:
            conn.execute("COMMIT")
        except BaseException as error:  # noqa: BLE001 (reported to every caller of the batch)
            # The events are durable in the WAL; only the projection lost them. Apply them
            # again from the log so callers' writes become visible, or say exactly that.
            self._abort(conn, (), error)
            self._reapply_after_failed_commit(items, recorded, error)
        else:
            self._committed(conn, items, recorded)
        finally:
            self._moved = set()
            for item in items:
                item.done.set()

    def _committed(
        self,
        conn: sqlite3.Connection,
        items: Sequence[_Pending[object]],
        recorded: list[RecordedEvent],
    ) -> None:
        """A batch's transaction committed. The store takes writes again only when it took
        every one of the batch's: one it refused (SQLITE_FULL) keeps the failure reported."""
        if not any(isinstance(item.error, StorageFailure) for item in items):
            self.storage_failure = None
        self._notify(lambda listener: listener.committed(conn, recorded))

    def _append(self, recorded: list[RecordedEvent], fence: Fence | None) -> None:
        if fence is None:
            self.log.append(recorded)
        elif recorded:  # a fenced batch that decided nothing writes nothing
            cast(_FencedLog, self.log).append(recorded, fence=fence)

    def _contention_failure(self, attempts: int, taken: ConcurrentAppend) -> StorageFailure:
        return StorageFailure(
            self.log.where,
            "append to",
            f"{taken}; another writer took the group's next seq {attempts} times in a row",
            note="the batch was decided again on the caught-up state each time; nothing was "
            "stored: retry the write",
        )

    def _catch_up_lagging(self) -> None:
        """Apply the WAL events a group's projections miss (their own transactions)."""
        for group in sorted(self.lagging):
            self.lagging.discard(group)
            self._retried.add(group)
            try:
                self.runner.catch_up([group])
            except Exception as error:  # noqa: BLE001 (the group's writes are refused with it)
                self._blocked[group] = self._storage_failure(error, "catch up")
                log.warning("group %r could not be caught up from the WAL: %s", group, error)
            else:
                if self._blocked.pop(group, None) is not None:
                    log.info("group %r caught up from the WAL", group)
            finally:
                self._forget()

    def _storage_failure(self, error: BaseException, action: str) -> BaseException:
        """A raw SQLite or OS error of the projection database, named with its file."""
        if isinstance(error, StorageFailure):
            self.storage_failure = str(error)
            return error
        if not is_storage_error(error):
            return error
        failure = StorageFailure(self.runner.path, action, error)
        self.storage_failure = str(failure)
        return failure

    def _run_handlers(self, items: Sequence[_Pending[object]]) -> list[RecordedEvent]:
        """Run every handler not yet failed; raise _Rerun if one failed after appending."""
        recorded: list[RecordedEvent] = []
        for item in items:
            if item.error is not None:
                continue  # failed in an earlier attempt of this batch
            context = WriteContext(self)
            try:
                item.result = item.handler(context)
            except _Behind:
                raise _Rerun from None  # not this handler's failure: run it again
            except Exception as raised:  # noqa: BLE001 (it becomes its caller's error)
                error = self._storage_failure(raised, "write to")
                item.error, item.result = error, None
                if context.recorded or isinstance(error, ProjectionError | StorageFailure):
                    raise _Rerun from error  # its rows are in the transaction: start again
                continue
            item.written = {}
            for event in context.recorded:
                item.written[event.group_id] = max(event.seq, item.written.get(event.group_id, 0))
            recorded.extend(context.recorded)
        return recorded

    def block(self, group_id: GroupId, error: BaseException) -> None:
        """The group could not be caught up (at open): its writes retry, else are refused."""
        self._blocked[group_id] = error

    def refuse_damaged(self, group_id: GroupId, error: CorruptEvent) -> None:
        """The group's log holds a damaged event its projections applied (found at open):
        its writes are refused, naming it, until the group is rebuilt."""
        self._damaged[group_id] = error

    def _recheck(self, group_id: GroupId) -> None:
        """After a rebuild: the group's writes are taken again unless the log it now applies
        (to its position: a pin, or the head) still holds the damage."""
        applied = self.runner.position(group_id).position
        damage = self.log.check(group_id, applied, seal=False) if applied else None
        if damage is None:
            self._damaged.pop(group_id, None)
            log.info("group %r was rebuilt: its log is whole again to seq %s", group_id, applied)
        else:
            self._damaged[group_id] = damage

    def notify_rebuilt(self, groups: Sequence[GroupId] | None) -> None:
        """Tell derived stores that the projections of these groups (None: all) were rebuilt."""
        for group in list(self._blocked) if groups is None else groups:
            self._blocked.pop(group, None)  # a later write finds any remaining lag again
        for group in list(self._damaged) if groups is None else groups:
            if group in self._damaged:  # still damaged in what the rebuild applied?
                self._recheck(group)
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
            self.lagging.update(groups)
            failure = StorageFailure(
                self.runner.path,
                "apply the write to",
                f"{error}; retrying: {again}",
                note="the write is durable in the WAL; it is applied from the log before the "
                "next write, or at the next start",
            )
            self.storage_failure = str(failure)
            for item in items:
                if item.error is None:
                    item.error, item.result = failure, None
            raise failure from again
        else:
            self.storage_failure = None

    def _abort(
        self, conn: sqlite3.Connection, items: Sequence[_Pending[object]], error: BaseException
    ) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        self._forget()
        for item in items:
            if item.error is None:
                item.error, item.result = error, None
            item.done.set()

    def _forget(self) -> None:
        """Drop the caches; they are read again from the log and the projection."""
        self._heads.clear()
        self._positions.clear()
        self._moved = set()
        self._pins.clear()
        self._checked.clear()


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll the batch back, unless SQLite already did (it may on SQLITE_FULL or an I/O error,
    and a ROLLBACK then fails with "no transaction is active", hiding the real cause)."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")
