"""Following a PostgreSQL log from another node (ADR 0076): appends notify, the follower reads
the named group by seq from its position, falls back to polling when it cannot listen, and
misses nothing across a terminated LISTEN connection.

Two `PostgresLog`s on one database are two nodes: A appends, B follows into a list.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import psycopg
import pytest

from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.wal.pg_follow import APPLICATION_NAME, LogFollower
from lcg.projections.wal.postgres import PostgresLog, notices, parse_notice
from lcg.projections.wal.store import RecordedEvent
from tests.helpers.postgres import with_database

pytestmark = pytest.mark.postgres
NOW = datetime(2026, 1, 1, tzinfo=UTC)
G1, G2 = GroupId("team:one"), GroupId("g2")


def episode(n: int) -> EpisodeAdded:
    return EpisodeAdded(NOW, EpisodeUuid(f"ep-{n}"), f"e{n}", "b", "text", "", NOW, None, None)


class ListSink:
    """A node's projections, as a list of what was applied per group."""

    def __init__(self) -> None:
        self.events: dict[GroupId, list[tuple[int, str]]] = {}
        self._lock = threading.Lock()

    def applied(self, group_id: GroupId) -> int:
        with self._lock:
            seen = self.events.get(group_id, [])
            return seen[-1][0] if seen else 0

    def apply(self, page: list[RecordedEvent]) -> None:
        with self._lock:
            seen = self.events.setdefault(page[0].group_id, [])
            for recorded in page:
                if not seen or recorded.seq > seen[-1][0]:
                    seen.append((recorded.seq, recorded.event.name))  # type: ignore[attr-defined]


class Node:
    def __init__(self, url: str) -> None:
        self.log = PostgresLog(url, EventCodec())
        self.next: dict[GroupId, int] = {}

    def append(self, group: GroupId, count: int) -> None:
        first = self.log.head(group) + 1
        self.log.append(
            [RecordedEvent(group, Seq(n), episode(n)) for n in range(first, first + count)]
        )


@pytest.fixture
def nodes(pg_url: str) -> Iterator[tuple[Node, Node]]:
    a, b = Node(pg_url), Node(pg_url)
    yield a, b
    a.log.close()
    b.log.close()


def expected(last: int) -> list[tuple[int, str]]:
    return [(n, f"e{n}") for n in range(1, last + 1)]


def until(condition: Callable[[], bool]) -> None:
    """Wait for a condition (the test's bound, not an assertion of speed)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def test_a_notice_names_each_group_once_with_its_last_seq() -> None:
    batch = [RecordedEvent(G1, Seq(n), episode(n)) for n in (4, 5)]
    batch.append(RecordedEvent(G2, Seq(1), episode(1)))
    assert notices(batch) == ["g2:1", "team:one:5"]
    assert parse_notice("team:one:5") == (G1, 5)
    assert parse_notice("stop") is None
    assert parse_notice("g:x") is None


def test_node_b_follows_node_a_through_notices_alone(pg_url: str, nodes: tuple[Node, Node]) -> None:
    a, b = nodes
    a.append(G1, 3)  # before B follows: read by its first comparison
    sink = ListSink()
    follower = LogFollower(pg_url, b.log, sink, poll_seconds=3600)
    follower.start()
    try:
        assert follower.wait_for(G1, 3, 60)
        for _ in range(5):
            a.append(G1, 2)
            a.append(G2, 1)
        assert follower.wait_for(G1, 13, 60)
        assert follower.wait_for(G2, 5, 60)
        # one comparison of heads, at the start: everything after came by notice
        assert (follower.sweeps, follower.connections, follower.listening) == (1, 1, True)
        assert follower.failure is None
    finally:
        follower.stop()
    assert sink.events == {G1: expected(13), G2: expected(5)}
    assert not follower.listening


def test_a_terminated_listen_connection_reconnects_and_misses_nothing(
    pg_url: str, nodes: tuple[Node, Node]
) -> None:
    a, b = nodes
    sink = ListSink()
    follower = LogFollower(pg_url, b.log, sink, poll_seconds=0.2)
    follower.start()
    try:
        until(lambda: follower.listening)
        a.append(G1, 2)
        assert follower.wait_for(G1, 2, 60)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s AND datname = current_database()",
                (APPLICATION_NAME,),
            ).fetchall()
            assert killed == [(True,)]
            a.append(G1, 3)  # while the follower finds out its connection is gone
            a.append(G2, 2)
        assert follower.wait_for(G1, 5, 60)
        assert follower.wait_for(G2, 2, 60)
        until(lambda: follower.connections == 2 and follower.listening)
        a.append(G1, 1)  # and notices work again on the new connection
        assert follower.wait_for(G1, 6, 60)
    finally:
        follower.stop()
    assert sink.events == {G1: expected(6), G2: expected(2)}


def test_a_follower_that_cannot_listen_polls(pg_url: str, nodes: tuple[Node, Node]) -> None:
    a, b = nodes
    sink = ListSink()
    nowhere = with_database(pg_url, "lcg_no_such_database")
    follower = LogFollower(nowhere, b.log, sink, poll_seconds=0.1, connect_timeout=1)
    follower.start()
    try:
        a.append(G1, 2)
        assert follower.wait_for(G1, 2, 60)
        a.append(G1, 2)
        assert follower.wait_for(G1, 4, 60)
        assert (follower.connections, follower.listening) == (0, False)
        assert follower.listen_failure is not None
        assert "cannot listen for appends" in follower.listen_failure
        assert follower.failure is None
    finally:
        follower.stop()
    assert sink.events == {G1: expected(4)}


def test_poll_seconds_must_be_positive(pg_url: str, nodes: tuple[Node, Node]) -> None:
    with pytest.raises(ValueError, match="poll_seconds: must be above 0"):
        LogFollower(pg_url, nodes[1].log, ListSink(), poll_seconds=0)
