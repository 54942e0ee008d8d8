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
    """The transient failures this server owes a replay: every one in the projection but
    those it failed itself (nothing retries a write on the server that failed it). Read
    afresh at each drain, so a failure recorded by an earlier server, or on a PostgreSQL log
    by another node, is owed as soon as this server applies the session's writes (the node
    holding the intents lease, ADR 0085), whenever its projection received the failure."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed_here: set[str] = set()  # first attempts this server failed, owed onward
        self._counted: set[str] = set()  # owed replays already counted in replay_owed

    def owed(self, conn: sqlite3.Connection) -> tuple[list[WriteRow], int]:
        """The owed replays' rows, in stream order per session (in a session a bounded
        replay pins, they wait), and how many of them this server had not counted yet."""
        with self._lock:
            failed_here = frozenset(self._failed_here)
        rows = state.replays_owed(conn, failed_here)
        with self._lock:
            new = {row.receipt for row in rows} - self._counted
            self._counted |= new
        return rows, len(new)

    def failed_here(self, receipt: str) -> None:
        """This server failed the write's first attempt for a transient cause: the server
        after it owes the replay, never this one."""
        with self._lock:
            self._failed_here.add(receipt)

    def owes(self, receipt: str) -> bool:
        """Whether this server owes the write (failed for a transient cause) its replay."""
        with self._lock:
            return receipt not in self._failed_here


def in_stream_order(pending: list[WriteRow], replays: list[WriteRow], limit: int) -> list[WriteRow]:
    """The first `limit` of both, by stream position: `pending` holds the first of the
    intents and `replays` every owed replay, so this is the first `limit` owed writes."""
    merged = sorted([*pending, *replays], key=lambda row: (row.intent_seq, row.group_id))
    return merged[:limit]
