"""Each event's checksum is stored beside it and checked (ADR 0049): runs of interleaved groups,
events the library wrote without one, and a damaged checksum row itself."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import orjson
import pytest
from eventsourcing.persistence import StoredEvent

from lcg.domain.events import EventCodec
from lcg.domain.ids import GroupId, Seq
from lcg.projections.faults import CorruptEvent
from lcg.projections.wal.store import EventLog, RecordedEvent, stream_id
from lcg.projections.wal.sums import CHANGED
from tests.unit.test_wal_store import episode, library

A, B = GroupId("a"), GroupId("b")


def interleaved_log(path: Path) -> EventLog:
    """Group a at seqs 1..4 and b at 1..3, in batches that interleave them."""
    log = EventLog(path, EventCodec())
    log.append([RecordedEvent(A, Seq(1), episode(1)), RecordedEvent(B, Seq(1), episode(2))])
    log.append(
        [
            RecordedEvent(A, Seq(2), episode(3)),
            RecordedEvent(B, Seq(2), episode(4)),
            RecordedEvent(A, Seq(3), episode(5)),
            RecordedEvent(B, Seq(3), episode(6)),
        ]
    )
    log.append([RecordedEvent(A, Seq(4), episode(7))])
    return log


def test_events_appended_in_interleaved_batches_check_whole(tmp_path: Path) -> None:
    log = interleaved_log(tmp_path / "wal.sqlite")
    assert log.check(A, 4, seal=False) is None
    assert log.check(B, 3, seal=False) is None
    assert [r.seq for page in log.read(A) for r in page] == [1, 2, 3, 4]


def test_a_changed_event_is_named_by_the_check_and_stops_the_read_before_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "wal.sqlite"
    log = interleaved_log(path)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE stored_events SET state=CAST(replace(CAST(state AS TEXT), 'body 5', 'body X')"
            " AS BLOB) WHERE originator_id=? AND originator_version=3",
            (stream_id(A).hex,),
        )
    damage = log.check(A, 4, seal=False)
    assert damage is not None
    assert (damage.seq, damage.reason, damage.applied) == (3, CHANGED, True)
    pages = log.read(A)
    assert [r.seq for r in next(pages)] == [1, 2]  # the events before it, then its error
    with pytest.raises(CorruptEvent, match=re.escape(f"seq 3 of group 'a' ({CHANGED})")):
        next(pages)
    assert log.check(B, 3, seal=False) is None


def test_events_the_library_wrote_are_decoded_then_sealed(tmp_path: Path) -> None:
    path = tmp_path / "wal.sqlite"
    log = interleaved_log(path)
    datastore, recorder = library(path)
    codec = EventCodec()
    recorder.insert_events(
        [
            StoredEvent(
                stream_id(A), seq, "episode_added", orjson.dumps(codec.encode(episode(seq)))
            )
            for seq in (5, 6)
        ]
    )
    datastore.close()
    assert log.check(A, 6, seal=True) is None
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE stored_events SET state=x'7b7d' WHERE originator_id=? AND originator_version=6",
            (stream_id(A).hex,),
        )
    damage = log.check(A, 6, seal=False)
    assert damage is not None
    assert (damage.seq, damage.reason) == (6, CHANGED)  # sealed: found by its checksum


def test_a_damaged_checksum_row_is_named(tmp_path: Path) -> None:
    path = tmp_path / "wal.sqlite"
    log = interleaved_log(path)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE lcg_event_sums SET sums=x'000102' WHERE stream_id=? AND first_seq=4",
            (stream_id(A).hex,),
        )
    damage = log.check(A, 4, seal=False)
    assert damage is not None
    assert (damage.seq, damage.reason) == (4, "its stored checksum is damaged")
