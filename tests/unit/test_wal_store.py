"""The WAL reads and writes the eventsourcing library's `stored_events` table directly (ADR
0017): the library must read what we append, and we must read what the library appends."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteDatastore

from lcg.domain.events import EpisodeAdded, EventCodec, GroupPurged
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.wal.store import (
    ConcurrentAppend,
    Durability,
    EventLog,
    RecordedEvent,
    stream_id,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
G = GroupId("g")


def episode(n: int) -> EpisodeAdded:
    return EpisodeAdded(
        NOW, EpisodeUuid(f"ep-{n}"), f"e{n}", f"body {n}", "text", "", NOW, None, None
    )


def library(path: Path) -> tuple[SQLiteDatastore, SQLiteAggregateRecorder]:
    datastore = SQLiteDatastore(str(path), originator_id_type="uuid")
    return datastore, SQLiteAggregateRecorder(datastore)


def test_the_library_reads_the_events_lcg_appends(tmp_path: Path) -> None:
    path = tmp_path / "wal.sqlite"
    log = EventLog(path, EventCodec())
    log.append([RecordedEvent(G, Seq(n), episode(n)) for n in (1, 2, 3)])
    log.close()
    datastore, recorder = library(path)
    stored = recorder.select_events(stream_id(G), gt=1)
    datastore.close()
    assert [s.originator_version for s in stored] == [2, 3]
    assert [s.originator_id for s in stored] == [stream_id(G)] * 2
    codec = EventCodec()
    assert [codec.decode(s.topic, orjson.loads(s.state)) for s in stored] == [
        episode(2),
        episode(3),
    ]


def test_lcg_reads_the_events_the_library_appends(tmp_path: Path) -> None:
    path = tmp_path / "wal.sqlite"
    EventLog(path, EventCodec()).close()
    datastore, recorder = library(path)
    codec = EventCodec()
    events = [episode(1), GroupPurged(NOW), episode(2)]
    recorder.insert_events(
        [
            StoredEvent(stream_id(G), seq, e.wire_name, orjson.dumps(codec.encode(e)))
            for seq, e in enumerate(events, start=1)
        ]
    )
    datastore.close()
    log = EventLog(path, EventCodec())
    assert log.head(G) == 3
    pages = list(log.read(G, after=0, page=2))
    assert [len(page) for page in pages] == [2, 1]
    assert [r.event for page in pages for r in page] == events
    assert [r.seq for r in next(log.read(G, after=1, upto=2))] == [2]
    log.close()


def test_a_taken_seq_is_a_concurrent_append_and_stores_nothing(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "wal.sqlite", EventCodec())
    log.append([RecordedEvent(G, Seq(1), episode(1))])
    with pytest.raises(ConcurrentAppend):
        log.append([RecordedEvent(G, Seq(2), episode(2)), RecordedEvent(G, Seq(1), episode(9))])
    assert log.head(G) == 1
    assert log.groups() == [G]
    log.close()


@pytest.mark.parametrize(("durability", "level"), [("normal", 1), ("full", 2)])
def test_each_durability_commits_with_its_synchronous_level(
    tmp_path: Path, durability: Durability, level: int
) -> None:
    """ADR 0005: normal is `synchronous=NORMAL` (1), full is `synchronous=FULL` (2). A killed
    process cannot tell them apart (the page cache survives it), so the level itself is the
    check. The pragma belongs to the connection, not the file: a reopened log sets it again."""
    path = tmp_path / "wal.sqlite"
    for n in (1, 2):
        log = EventLog(path, EventCodec(), durability)
        try:
            log.append([RecordedEvent(G, Seq(n), episode(n))])
            assert log.synchronous == level
        finally:
            log.close()
