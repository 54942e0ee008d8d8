"""The follower's waits: a wait its recent rate says cannot end in time is not begun."""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Sequence

from lcg.projections.follower import CommitFollower, Lane
from lcg.projections.wal.store import RecordedEvent


class _Items(CommitFollower[str]):
    """Work is `group:n` strings; every batch takes 100 s of the test's clock."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.applied: list[str] = []
        ticks = itertools.count(step=100)
        super().__init__(
            lambda: sqlite3.connect(":memory:", check_same_thread=False),
            thread_name="test-follower",
            clock=lambda: float(next(ticks)),
        )

    def add(self, items: Sequence[str]) -> None:
        self._queue(items)

    def _relevant(self, recorded: Sequence[RecordedEvent]) -> list[str]:
        return []

    def _lanes(self, work: str) -> tuple[Lane, ...]:
        return ((work.split(":", maxsplit=1)[0], ""),)

    def _apply(self, conn: sqlite3.Connection, batch: Sequence[str]) -> None:
        assert self.gate.wait(30), "the test never opened the gate"
        self.applied.extend(batch)


def test_adr_0047_a_read_does_not_begin_a_wait_the_followers_rate_says_is_hopeless() -> None:
    follower = _Items()
    try:
        follower.gate.set()
        follower.add(["g:1"])
        assert follower.settle(30)
        assert follower.expected_seconds(lambda lane: lane[0] == "g") == 0.0  # nothing queued
        follower.gate.clear()
        follower.add(["g:2"])
        # one unit at the measured 100 s a unit: far past a 30 s bound
        assert follower.expected_seconds(lambda lane: lane[0] == "g") == 100.0
        answers: list[bool] = []
        read = threading.Thread(
            target=lambda: answers.append(
                follower.settle(30, lambda lane: lane[0] == "g", hopeless=True)
            )
        )
        read.start()
        read.join(10)
        assert not read.is_alive(), "the hopeless wait was begun"
        assert answers == [False]
        assert follower.applied == ["g:1"]  # it answered while the work was still queued
        # a writer's own wait (not hopeless) still waits for the work to be applied
        writer = threading.Thread(
            target=lambda: answers.append(follower.settle(30, lambda lane: lane[0] == "g"))
        )
        writer.start()
        follower.gate.set()
        writer.join(30)
        assert answers == [False, True]
        assert follower.applied == ["g:1", "g:2"]
    finally:
        follower.gate.set()
        follower.stop()


def test_adr_0047_before_any_batch_is_measured_a_read_waits() -> None:
    follower = _Items()
    try:
        follower.add(["g:1"])
        assert follower.expected_seconds(lambda lane: lane[0] == "g") is None
        answers: list[bool] = []
        read = threading.Thread(
            target=lambda: answers.append(
                follower.settle(30, lambda lane: lane[0] == "g", hopeless=True)
            )
        )
        read.start()
        follower.gate.set()
        read.join(30)
        assert answers == [True]
    finally:
        follower.gate.set()
        follower.stop()
