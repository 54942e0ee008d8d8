"""PostgresLog reads and writes eventsourcing's `stored_events` with its own statements (ADR
0067), as EventLog does in SQLite (ADR 0017): the library must read what we append, and we
must read what the library appends, through its own `PostgresApplicationRecorder`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import orjson
import psycopg
import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

from lcg.domain.events import EpisodeAdded, EventCodec, GroupPurged
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.wal.postgres import PostgresLog
from lcg.projections.wal.store import RecordedEvent, stream_id

pytestmark = pytest.mark.postgres
NOW = datetime(2026, 1, 1, tzinfo=UTC)
G = GroupId("g")


def episode(n: int) -> EpisodeAdded:
    return EpisodeAdded(
        NOW, EpisodeUuid(f"ep-{n}"), f"e{n}", f"body {n}", "text", "", NOW, None, None
    )


@pytest.fixture
def recorder(pg_url: str) -> Iterator[PostgresApplicationRecorder]:
    PostgresLog(pg_url, EventCodec()).close()  # the tables, made as lcg makes them
    params = psycopg.conninfo.conninfo_to_dict(pg_url)
    datastore = PostgresDatastore(
        str(params["dbname"]), str(params["host"]), str(params["port"]), str(params["user"]), ""
    )
    yield PostgresApplicationRecorder(datastore)
    datastore.close()


def test_the_library_reads_the_events_lcg_appends(
    pg_url: str, recorder: PostgresApplicationRecorder
) -> None:
    log = PostgresLog(pg_url, EventCodec())
    log.append([RecordedEvent(G, Seq(n), episode(n)) for n in (1, 2, 3)])
    log.close()
    stored = recorder.select_events(stream_id(G), gt=1)
    assert [s.originator_version for s in stored] == [2, 3]
    codec = EventCodec()
    assert [codec.decode(s.topic, orjson.loads(s.state)) for s in stored] == [
        episode(2),
        episode(3),
    ]
    notifications = recorder.select_notifications(start=None, limit=10)
    assert [n.id for n in notifications] == [1, 2, 3]  # ids in append order, no gap


def test_lcg_reads_the_events_the_library_appends(
    pg_url: str, recorder: PostgresApplicationRecorder
) -> None:
    codec = EventCodec()
    events = [episode(1), GroupPurged(NOW), episode(2)]
    recorder.insert_events(
        [
            StoredEvent(stream_id(G), seq, e.wire_name, orjson.dumps(codec.encode(e)))
            for seq, e in enumerate(events, start=1)
        ]
    )
    log = PostgresLog(pg_url, EventCodec())
    try:
        assert log.head(G) == 3
        assert [r.event for page in log.read(G, page=2) for r in page] == events
        assert log.check(G, 3, seal=True) is None  # no sums yet: decoded, then sealed
        assert log.check(G, 3, seal=False) is None
    finally:
        log.close()
