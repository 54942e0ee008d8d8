"""Writes failed for a transient cause, replayed once by the next server on the session (ADR 0108).

A write whose texts the embedder could not embed (it raised, or did not answer in time) fails
on its receipt where it was attempted, and nothing retries it there; its failure event says a
replay is owed (`MemoryWriteFailed.replay_owed`), so its row waits as `failed_transient`. The
next server on the session finds those rows at start and replays each one once, in stream
order with the durable intents it owes: applied, it answers `applied_after_restart`; failed
again for a transient cause, or for a permanent one, it is failed for good.
"""

from __future__ import annotations

import sqlite3
import threading

from lcg.projections.memory import state
from lcg.projections.memory.state import WriteRow


def embedder_failure(error: BaseException, *, replaying: bool) -> tuple[str, bool]:
    """The receipt's detail for a write the embedder failed, and whether a replay is owed:
    one is at the write's first attempt, never at its replay."""
    cause = f"the embedder failed ({type(error).__name__})"
    if replaying:
        return (
            f"store error: {cause} again when this server replayed the write; the detail was"
            " logged; nothing was written, and the write has failed for good: it is not"
            " replayed again",
            False,
        )
    return (
        f"store error: {cause}; the detail was logged; nothing was written; the cause is"
        " transient, so nothing retries the write on this server, and the next server on"
        " this session replays it once",
        True,
    )


class Replays:
    """The transient failures an earlier server left owed, found at this server's start, and
    on a PostgreSQL log those another node left when this one takes the intents lease; a
    write failed transiently here is never among them (nothing retries it on this server)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owed: set[str] = set()
        self._failed_here: set[str] = set()  # first attempts this server failed, owed onward

    def load(self, conn: sqlite3.Connection) -> int:
        """Take the owed replays from the projection, at start; how many there are (in a
        session a bounded replay pins, they wait and are not counted, like its intents)."""
        owed = set(state.transient_failures(conn))
        with self._lock:
            self._owed = owed
        return len(state.replays_owed(conn, owed))

    def take_over(self, conn: sqlite3.Connection) -> int:
        """At a new tenure of the intents lease (nodes on one PostgreSQL log, ADR 0085): the
        transient failures other nodes recorded since this server started are owed by it
        now, as the next server to apply the session's writes; how many were added."""
        found = set(state.transient_failures(conn))
        with self._lock:
            added = found - self._owed - self._failed_here
            self._owed |= added
        return len(state.replays_owed(conn, added))

    def failed_here(self, receipt: str) -> None:
        """This server failed the write's first attempt for a transient cause: the server
        after it owes the replay, never this one."""
        with self._lock:
            self._failed_here.add(receipt)

    def owes(self, receipt: str) -> bool:
        """Whether this server still owes the write its replay."""
        with self._lock:
            return receipt in self._owed

    def rows(self, conn: sqlite3.Connection) -> list[WriteRow]:
        """The owed replays' rows still waiting, in stream order per session."""
        with self._lock:
            owed = frozenset(self._owed)
        return state.replays_owed(conn, owed)

    def settled(self, receipt: str) -> None:
        """The write's replay has its outcome (or another server's outcome arrived)."""
        with self._lock:
            self._owed.discard(receipt)


def in_stream_order(pending: list[WriteRow], replays: list[WriteRow], limit: int) -> list[WriteRow]:
    """The first `limit` of both, by stream position: `pending` holds the first of the
    intents and `replays` every owed replay, so this is the first `limit` owed writes."""
    merged = sorted([*pending, *replays], key=lambda row: (row.intent_seq, row.group_id))
    return merged[:limit]
