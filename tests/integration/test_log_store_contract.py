"""One contract, both stores of the log (ADR 0067): the SQLite file (`EventLog`) and the
PostgreSQL database (`PostgresLog`) answer every call of the `LogStore` port alike.

The postgres cases need the machine's server (tests/helpers/postgres.py): each run has its own
database and each test an empty schema.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from lcg.domain.events import EpisodeAdded, EventCodec, GroupPurged
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.faults import CorruptEvent
from lcg.projections.wal.dump import GroupPlan, write_dump
from lcg.projections.wal.marks import MarkExists
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.postgres import PostgresLog
from lcg.projections.wal.store import ConcurrentAppend, EventLog, RecordedEvent, stream_id

NOW = datetime(2026, 1, 1, tzinfo=UTC)
A = GroupId("a")
B = GroupId("b")


def episode(n: int) -> EpisodeAdded:
    return EpisodeAdded(
        NOW, EpisodeUuid(f"ep-{n}"), f"e{n}", f"body {n}", "text", "", NOW, None, None
    )


def events(group: GroupId, first: int, last: int) -> list[RecordedEvent]:
    return [RecordedEvent(group, Seq(n), episode(n)) for n in range(first, last + 1)]


class Opener:
    """Opens the test's log (the same one each call) and edits its rows behind its back."""

    def __init__(self, url: str, path: Path) -> None:
        self.url = url
        self.path = path
        self.opened: list[LogStore] = []

    def __call__(self) -> LogStore:
        log: LogStore = (
            PostgresLog(self.url, EventCodec()) if self.url else EventLog(self.path, EventCodec())
        )
        self.opened.append(log)
        return log

    def change_state(self, group: GroupId, seq: int, state: bytes) -> None:
        """Rewrite one stored event's bytes (a failing disk, a stray write)."""
        if not self.url:
            with closing(sqlite3.connect(self.path)) as conn, conn:
                conn.execute(
                    "UPDATE stored_events SET state=? WHERE originator_id=?"
                    " AND originator_version=?",
                    (state, stream_id(group).hex, seq),
                )
            return
        with psycopg.connect(self.url, autocommit=True) as server:
            server.execute(
                "UPDATE stored_events SET state=%s WHERE originator_id=%s"
                " AND originator_version=%s",
                (state, stream_id(group), seq),
            )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else ""
    opener = Opener(url, tmp_path / "wal.sqlite")
    yield opener
    for log in opener.opened:
        log.close()


@pytest.fixture
def store(reopen: Opener) -> LogStore:
    return reopen()


def all_events(log: LogStore, group: GroupId, **bounds: int) -> list[RecordedEvent]:
    return [r for page in log.read(group, **bounds) for r in page]


def test_k_wal_001_each_group_has_its_own_stream_numbered_from_one(store: LogStore) -> None:
    store.append([*events(A, 1, 3), *events(B, 1, 2)])
    store.append(events(A, 4, 4))
    assert store.groups() == [A, B]
    assert store.heads() == {A: 4, B: 2}
    assert (store.head(A), store.head(B), store.head("nobody")) == (4, 2, 0)
    assert (store.bounds(A), store.bounds("nobody")) == ((1, 4), None)
    assert all_events(store, A) == events(A, 1, 4)
    assert all_events(store, B) == events(B, 1, 2)


def test_pages_hold_the_seqs_after_and_up_to_their_bounds(store: LogStore) -> None:
    store.append(events(A, 1, 7))
    pages = list(store.read(A, after=1, upto=6, page=2))
    assert [[r.seq for r in page] for page in pages] == [[2, 3], [4, 5], [6]]
    assert all_events(store, A, after=7) == []
    assert list(store.read(GroupId("nobody"))) == []


def test_last_seq_of_finds_the_last_event_of_the_given_kinds(store: LogStore) -> None:
    store.append([*events(A, 1, 2), RecordedEvent(A, Seq(3), GroupPurged(NOW)), *events(A, 4, 5)])
    purged = (GroupPurged.wire_name,)
    assert store.last_seq_of(A, purged, 5) == 3
    assert store.last_seq_of(A, purged, 2) == 0
    assert store.last_seq_of(A, (), 5) == 0


def test_an_append_at_a_taken_seq_is_refused_and_stores_nothing_of_its_batch(
    store: LogStore,
) -> None:
    store.append(events(A, 1, 2))
    clash = [*events(B, 1, 1), *events(A, 2, 3)]  # B's event is new, A's seq 2 is taken
    with pytest.raises(ConcurrentAppend, match="nothing was stored"):
        store.append(clash)
    assert store.heads() == {A: 2}
    assert all_events(store, B) == []
    store.append(events(A, 3, 3))  # the store goes on
    assert store.head(A) == 3


def test_two_writers_at_one_seq_exactly_one_wins(reopen: Opener) -> None:
    first, second = reopen(), reopen()
    first.append(events(A, 1, 1))
    barrier = threading.Barrier(2)
    won: list[str] = []
    refused: list[str] = []

    def write(log: LogStore, body: str) -> None:
        event = RecordedEvent(A, Seq(2), replace(episode(2), body=body))
        barrier.wait()
        try:
            log.append([event])
            won.append(body)
        except ConcurrentAppend:
            refused.append(body)

    threads = [
        threading.Thread(target=write, args=(log, body))
        for log, body in ((first, "x"), (second, "y"))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    assert len(refused) == 1
    (stored,) = all_events(reopen(), A, after=1)
    assert isinstance(stored.event, EpisodeAdded)
    assert stored.event.body == won[0]


def test_identity_is_made_once_and_kept(reopen: Opener) -> None:
    first = reopen()
    identity = first.identity
    first.append(events(A, 1, 1))
    assert len(identity) == 32
    assert reopen().identity == identity


def test_pins_are_recorded_and_released_in_the_log(reopen: Opener) -> None:
    store = reopen()
    assert not store.pins()  # None (never recorded) or empty
    store.set_pins({A: 3, B: 0})
    store.set_pins({A: 5})
    assert reopen().pins() == {A: 5, B: 0}
    store.set_pins({A: None, B: None})
    assert store.pins() == {}


def test_k_wal_010_marks_are_created_listed_and_tombstoned_per_group(store: LogStore) -> None:
    store.append(events(A, 1, 3))
    made = store.create_mark(A, "good", 2, NOW)
    assert (made.group_id, made.name, made.seq, made.generation) == (A, "good", 2, 1)
    with pytest.raises(MarkExists):
        store.create_mark(A, "good", 3, NOW)
    store.create_mark(B, "good", 0, NOW)
    assert [m.name for m in store.marks(A)] == ["good"]
    gone = store.delete_mark(A, "good", NOW)
    assert gone is not None
    assert gone.seq == 2
    assert gone.deleted_at == NOW.isoformat()
    assert store.delete_mark(A, "good", NOW) is None
    assert store.marks(A) == []
    assert store.create_mark(A, "good", 3, NOW).seq == 3  # the name is free again
    assert [m.seq for m in store.marks(B)] == [0]


def test_truncate_all_erases_streams_and_pins_and_moves_the_marks_generation(
    reopen: Opener,
) -> None:
    store = reopen()
    store.append([*events(A, 1, 2), *events(B, 1, 1)])
    store.set_pins({A: 1})
    assert store.generation() == 1
    store.truncate_all()  # no mark was ever made: the numbering stays
    assert (store.generation(), store.heads(), store.pins()) == (1, {}, {})
    store.append(events(A, 1, 2))
    store.create_mark(A, "m", 2, NOW)
    store.truncate_all()
    again = reopen()
    assert (again.generation(), again.groups(), again.pins()) == (2, [], {})
    assert [(m.name, m.generation) for m in again.marks(A)] == [("m", 1)]
    again.append(events(A, 1, 1))  # seqs restart at 1
    assert all_events(again, A) == events(A, 1, 1)


def test_check_passes_a_whole_stream_and_names_a_missing_event(store: LogStore) -> None:
    store.append(events(A, 1, 3))
    assert store.check(A, 3, seal=True) is None
    missing = store.check(A, 4, seal=False)
    assert isinstance(missing, CorruptEvent)
    assert (missing.group_id, missing.seq, missing.applied) == (A, 4, True)
    assert "missing" in missing.reason


def test_an_event_changed_after_it_was_written_is_named_by_check_and_read(
    reopen: Opener,
) -> None:
    store = reopen()
    store.append(events(A, 1, 3))
    reopen.change_state(A, 2, b'{"_v":1}')  # decodes or not, its checksum differs
    damage = store.check(A, 3, seal=False)
    assert damage is not None
    assert damage.seq == 2
    pages = store.read(A)
    assert [r.seq for r in next(pages)] == [1]
    with pytest.raises(CorruptEvent) as raised:
        next(pages)
    assert raised.value.seq == 2
    assert raised.value.group_id == A


def test_k_wal_004_005_a_dump_of_the_log_restores_into_sqlite_with_the_same_events(
    store: LogStore, tmp_path: Path
) -> None:
    store.append([*events(A, 1, 4), *events(B, 1, 2)])
    store.create_mark(A, "m", 4, NOW)
    target = tmp_path / "dump"
    target.mkdir()
    plans = [GroupPlan(A, 1, 4), GroupPlan(B, 0, 2)]
    manifest = write_dump(store, plans, target, NOW)
    assert manifest["source_wal"] == store.identity
    assert manifest["events"] == 5
    dumped = EventLog(target / "wal.sqlite", EventCodec())
    try:
        assert dumped.heads() == {A: 3, B: 2}  # K-WAL-004: renumbered from 1
        assert [r.event for r in all_events(dumped, A)] == [r.event for r in events(A, 2, 4)]
        assert all_events(dumped, B) == events(B, 1, 2)
        assert dumped.marks(A) == []  # K-WAL-005: no marks in a dump
        assert dumped.identity != store.identity
    finally:
        dumped.close()
