"""A node's follower of a PostgreSQL log: the events other nodes append, applied here
(issue 28 item 2, ADR 0076).

Every append notifies the channel `lcg_log` with `<group>:<last seq>` in its own transaction,
so the notice arrives after the commit, never before. The follower LISTENs on a connection of
its own; a notice whose seq is above what the node applied of that group has the group read
from its position by pages (`PostgresLog.read`: per group, by seq, each page against its
checksums) and handed to the sink. Reading each group by seq, not the table by notification
id: positions are per group and seq already (the projections' checkpoints), a group's seqs
are gap-free and taken in order, so a follower never passes an event committed later, and
the append's table lock is not needed for the follower's sake.

When the LISTEN connection cannot be made or drops (the server restarted, the backend
terminated), the follower polls: it compares every group's head with its position each
`poll_seconds` and reconnects; after every (re)connection it compares once more, so whatever
was appended while it was not listening is read then. Nothing is missed either way: a notice
only says where to look, the log says what is there.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

import psycopg

from lcg.domain.ids import GroupId
from lcg.projections.faults import StorageFailure
from lcg.projections.wal.postgres import CHANNEL, PostgresLog, parse_notice
from lcg.projections.wal.store import RecordedEvent

log = logging.getLogger(__name__)
_WAKE_SECONDS = 0.25  # how long a wait for notices lasts: `stop` is seen within it
APPLICATION_NAME = "lcg-log-follower"  # the LISTEN connection's, in pg_stat_activity


class Sink(Protocol):
    """Where followed events go: a node's projections (through its writer, so a page and a
    local write never interleave), or a test's list."""

    def applied(self, group_id: GroupId) -> int:
        """The group's last applied seq."""
        ...

    def apply(self, page: list[RecordedEvent]) -> None:
        """Apply a page of one group's events in order; events at or below the group's
        position are skipped (a local write may have applied them meanwhile)."""
        ...


class LogFollower:
    """Follows one PostgreSQL log into a sink on a thread of its own."""

    def __init__(
        self,
        url: str,
        events: PostgresLog,
        sink: Sink,
        *,
        poll_seconds: float = 1.0,
        connect_timeout: float = 5.0,
        on_applied: Callable[[GroupId, int], None] | None = None,
    ) -> None:
        if not poll_seconds > 0:
            raise ValueError(f"poll_seconds: must be above 0 (got {poll_seconds!r})")
        self._url = url
        self.log = events
        self.sink = sink
        self.poll_seconds = poll_seconds
        self._timeout = max(1, round(connect_timeout))
        self._on_applied = on_applied  # called after each group's catch-up (bench timing)
        self.listening = False
        self.connections = 0  # LISTEN connections made (more than one: it reconnected)
        self.sweeps = 0  # comparisons of every group's head with its position
        self.failure: str | None = None  # the last error, until a catch-up succeeds
        self.listen_failure: str | None = None  # why it polls, until it listens again
        self._conn: psycopg.Connection[Any] | None = None
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="lcg-log-follower", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop following and close the LISTEN connection (woken by an empty notice rather
        than at the end of its wait: a node's close does not wait out `_WAKE_SECONDS`)."""
        self._stop.set()
        if self.listening and self._thread.is_alive():
            # The server gone, the wait ends by itself within _WAKE_SECONDS.
            with contextlib.suppress(StorageFailure):
                self.log.wake_followers()
        self._thread.join()

    def wait_for(self, group_id: GroupId, seq: int, timeout: float) -> bool:
        """Wait until the sink applied the group to `seq`, at most `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.sink.applied(group_id) >= seq, timeout=timeout
            )

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self._conn is None and not self._listen():
                    self._sweep()  # polling, until the LISTEN connection is back
                    self._stop.wait(self.poll_seconds)
                    continue
                self._receive()
        finally:
            self._drop()

    def _listen(self) -> bool:
        """(Re)connect and LISTEN, then compare every group once: what was appended while
        not listening is read now, what is appended from here on is notified."""
        try:
            conn = psycopg.connect(
                self._url,
                autocommit=True,
                connect_timeout=self._timeout,
                application_name=APPLICATION_NAME,
            )
            conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as error:
            reason = f"cannot listen for appends: {type(error).__name__}: {error}"
            if reason != self.listen_failure:
                log.warning("%s; polling every %s s", reason, self.poll_seconds)
            self.listen_failure = reason
            return False
        self._conn = conn
        self.listen_failure = None
        self.connections += 1
        self.listening = True
        if self.connections > 1:
            log.info("the log follower listens again")
        self._sweep()
        return True

    def _receive(self) -> None:
        """Wait a moment for notices and catch up the groups they name (while listening,
        notices alone say when to read: no polling)."""
        assert self._conn is not None
        try:
            for notice in self._conn.notifies(timeout=_WAKE_SECONDS):
                parsed = parse_notice(notice.payload)
                if parsed is not None and parsed[1] > self._applied(parsed[0]):
                    self._catch_up(parsed[0])
                if self._stop.is_set():
                    return
        except psycopg.Error as error:
            log.warning("the log follower's LISTEN connection dropped (%s); polling", error)
            self.listen_failure = f"the LISTEN connection dropped: {error}"
            self._drop()
            self._sweep()

    def _drop(self) -> None:
        self.listening = False
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _applied(self, group_id: GroupId) -> int:
        return self.sink.applied(group_id)

    def _sweep(self) -> None:
        """Catch up every group whose head is past its position."""
        self.sweeps += 1
        try:
            heads = self.log.heads()
        except StorageFailure as failure:
            self._note_failure(str(failure))
            return
        for group, head in heads.items():
            if head > self._applied(group):
                self._catch_up(group)

    def _catch_up(self, group_id: GroupId) -> None:
        try:
            for page in self.log.read(group_id, after=self._applied(group_id)):
                self.sink.apply(page)
                with self._changed:
                    self._changed.notify_all()
        except Exception as error:  # noqa: BLE001 (kept in `failure`; the next notice retries)
            self._note_failure(f"cannot follow group {group_id!r}: {error}")
            return
        self.failure = None
        if self._on_applied is not None:
            self._on_applied(group_id, self._applied(group_id))

    def _note_failure(self, reason: str) -> None:
        if reason != self.failure:
            log.warning("%s", reason)
        self.failure = reason
