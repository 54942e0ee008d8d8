"""Reads held off while a run that must not be read half-done is in progress (K-SEM-011).

The writer's batch lock holds off writes only: reads have their own connections and never wait
for it. A real `knowledge_backfill_summary_embeddings` run must also hold off the
knowledge reads issued meanwhile (seed 000: "blocking all other reads and writes"), so the run
holds this, and the dispatch makes each knowledge read wait for it first (ADR 0105). The
holding thread itself is never held off.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadHold:
    """Which threads hold reads off now; `wait` returns once none (but the caller) does."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._holders: dict[int, int] = {}  # thread id -> how many holds it has open
        self._waiting = 0  # reads held off now

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Hold off every other thread's `wait` until the block ends."""
        me = threading.get_ident()
        with self._changed:
            self._holders[me] = self._holders.get(me, 0) + 1
        try:
            yield
        finally:
            with self._changed:
                self._holders[me] -= 1
                if not self._holders[me]:
                    del self._holders[me]
                self._changed.notify_all()

    def wait(self) -> None:
        """Return once no other thread holds reads off (at once when none does)."""
        me = threading.get_ident()
        with self._changed:
            self._waiting += 1
            try:
                self._changed.wait_for(lambda: not self._holders.keys() - {me})
            finally:
                self._waiting -= 1

    @property
    def waiting(self) -> int:
        """How many reads are held off now (a test sees a read wait for a run)."""
        with self._changed:
            return self._waiting
