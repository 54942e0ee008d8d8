"""The WAL: one eventsourcing stream per group in a SQLite file, seq = originator_version.

See docs/adr/0002-wal-schema.md. The library's recorder creates `stored_events`; appends and
reads use that table directly through one sqlite3 connection (docs/adr/0017-write-and-replay-
fast-paths.md: `EventStore.put` and `select_events` built a `StoredEvent`, a `UUID` and a
pooled transaction per call or row). tests/test_wal_store.py checks that the library reads
what we write and we read what it writes. Group names are kept in a `lcg_groups` table beside
`stored_events` because a stream id (uuid5 of the group) cannot be reversed, and a random
identity in `lcg_wal_identity`, created with the file, which the projections record so that a
log and the projections built from another log are never used together
(docs/adr/0019-wal-identity-and-storage-failures.md). Each appended event's CRC-32 goes into
`lcg_event_sums` in the same transaction; `check` compares them at open
(docs/adr/0049-wal-event-checksums.md).
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import orjson
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteDatastore

from lcg.domain.events import DomainEvent, EventCodec
from lcg.domain.ids import GroupId, Seq
from lcg.projections.faults import CorruptEvent, StorageFailure, is_storage_error
from lcg.projections.own_files import refuse_foreign_sqlite
from lcg.projections.wal import marks, sums
from lcg.projections.wal.marks import Mark

log = logging.getLogger(__name__)
STREAM_NAMESPACE = uuid.UUID("5d3f4b8e-2c1a-4e7b-9f60-1c0de11a6e55")
Durability = Literal["normal", "full"]
PAGE_SIZE = 5_000


@functools.lru_cache(maxsize=4096)
def stream_id(group_id: str) -> uuid.UUID:
    """The stream (originator) id of a group: uuid5 over a fixed namespace."""
    return uuid.uuid5(STREAM_NAMESPACE, group_id)


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """An event at its place in its group's stream."""

    group_id: GroupId
    seq: Seq
    event: DomainEvent


class ConcurrentAppend(Exception):
    """Another writer appended at the same seq; nothing of this append was stored."""


_INSERT = (
    "INSERT INTO stored_events (originator_id, originator_version, topic, state)"
    " VALUES (?, ?, ?, ?)"
)
_PAGE = (
    "SELECT originator_version, topic, state FROM stored_events WHERE originator_id=?"
    " AND originator_version>? AND originator_version<=? ORDER BY originator_version LIMIT ?"
)
_NO_LIMIT = 2**62


class EventLog:
    """Append to and read from the per-group streams of one WAL file."""

    def __init__(self, path: Path, codec: EventCodec, durability: Durability = "normal") -> None:
        self.path = path
        self.durability = durability
        self.codec = codec
        self._lock = threading.Lock()  # one connection, shared by the writer and readers
        refuse_foreign_sqlite(path, "open the WAL")  # SQLite would follow a planted link
        try:
            self._conn = self._open(path, durability)
        except Exception as error:
            if is_storage_error(error):
                raise StorageFailure(path, "open the WAL", error) from error
            raise
        self._known_groups: set[str] = set(self.groups())
        with self._lock:
            self._sums_ready = sums.has_table(self._conn)

    @staticmethod
    def _open(path: Path, durability: Durability) -> sqlite3.Connection:
        datastore = SQLiteDatastore(str(path), originator_id_type="uuid")
        try:  # the library owns the table's layout; we only read and write its rows
            SQLiteAggregateRecorder(datastore).create_table()
        finally:
            datastore.close()
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
            conn.execute(  # IF NOT EXISTS writes nothing: a read-only WAL still opens
                "CREATE TABLE IF NOT EXISTS lcg_groups ("
                "group_id TEXT PRIMARY KEY, stream_id TEXT NOT NULL UNIQUE)"
            )
            # One row, written once, by whichever process creates (or first upgrades) the file.
            conn.execute(
                "CREATE TABLE IF NOT EXISTS lcg_wal_identity (one INTEGER PRIMARY KEY"
                " CHECK (one = 1), identity TEXT NOT NULL)"
            )
            if conn.execute("SELECT 1 FROM lcg_wal_identity").fetchone() is None:
                conn.execute(  # OR IGNORE: another process may have just written it
                    "INSERT OR IGNORE INTO lcg_wal_identity VALUES (1, ?)", (uuid.uuid4().hex,)
                )
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def holds_anything(path: Path) -> bool:
        """Whether the file exists with content (a missing or 0-byte WAL holds nothing)."""
        try:
            return path.stat().st_size > 0
        except FileNotFoundError:
            return False

    @property
    def where(self) -> str:
        """The file, as messages name it."""
        return str(self.path)

    @property
    def identity(self) -> str:
        """The random identity the file was created with."""
        with self._lock:
            row = self._conn.execute("SELECT identity FROM lcg_wal_identity").fetchone()
        return str(row[0])

    @property
    def synchronous(self) -> int:
        """The connection's `PRAGMA synchronous` (1 NORMAL, 2 FULL): what a commit waits for
        before it returns (docs/adr/0005-durability-and-group-commit.md)."""
        with self._lock:
            row = self._conn.execute("PRAGMA synchronous").fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def groups(self) -> list[GroupId]:
        """Every group that has ever had a stream here, sorted."""
        with self._lock:
            rows = self._conn.execute("SELECT group_id FROM lcg_groups ORDER BY group_id")
            return [GroupId(row[0]) for row in rows.fetchall()]

    def heads(self) -> dict[GroupId, int]:
        """The last seq of every group's stream, in one statement (status at 4,000 groups)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT g.group_id, (SELECT MAX(e.originator_version) FROM stored_events e"
                " WHERE e.originator_id = g.stream_id) FROM lcg_groups g ORDER BY g.group_id"
            ).fetchall()
        return {GroupId(row[0]): int(row[1] or 0) for row in rows}

    def head(self, group_id: str) -> int:
        """The last seq of the group's stream; 0 for an empty or unknown group."""
        with self._lock:
            row = self._conn.execute(
                "SELECT MAX(originator_version) FROM stored_events WHERE originator_id=?",
                (stream_id(group_id).hex,),
            ).fetchone()
        return int(row[0] or 0)

    def append(self, batch: Sequence[RecordedEvent]) -> None:
        """Store the events in one transaction; their seqs must continue each stream gap-free."""
        if not batch:
            return
        encode = self.codec.encode
        rows = [
            (stream_id(r.group_id).hex, r.seq, r.event.wire_name, orjson.dumps(encode(r.event)))
            for r in batch
        ]
        event_sums = [
            (stream, seq, sums.event_sum(topic.encode("utf-8"), state))
            for stream, seq, topic, state in rows
        ]
        missing = {r.group_id for r in batch} - self._known_groups
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as error:
                raise StorageFailure(self.path, "append to the WAL", error) from error
            try:
                self._conn.executemany(
                    "INSERT OR IGNORE INTO lcg_groups (group_id, stream_id) VALUES (?, ?)",
                    [(group, stream_id(group).hex) for group in sorted(missing)],
                )
                self._conn.executemany(_INSERT, rows)
                self._record_sums(event_sums)
            except BaseException as error:
                self._conn.execute("ROLLBACK")
                if isinstance(error, sqlite3.IntegrityError):
                    raise ConcurrentAppend(
                        "another writer appended to the same stream position; nothing was stored"
                    ) from error
                if is_storage_error(error):
                    raise StorageFailure(self.path, "append to the WAL", error) from error
                raise
            self._commit()
            self._sums_ready = True  # committed with the table: a rollback would have undone it
        self._known_groups |= missing

    def _record_sums(self, event_sums: Sequence[tuple[str, int, int]]) -> None:
        """Inside the caller's transaction; the table is made at the first write that needs
        it (a read-only WAL from before checksums still opens)."""
        if not self._sums_ready:
            self._conn.execute(sums.SCHEMA)
        sums.record(self._conn, event_sums)

    def check(self, group_id: GroupId, upto: int, *, seal: bool) -> CorruptEvent | None:
        """The group's first event up to `upto` that is missing, differs from its checksum, or
        (having none) cannot be decoded; None if all are whole. `seal` stores the sums of the
        events that had none and decoded, so the next open compares instead of decoding."""
        decode = self.codec.decode

        def decodes(topic: str, state: bytes) -> object:
            return decode(topic, orjson.loads(state))

        stream = stream_id(group_id).hex
        with self._lock:
            checked = sums.check(self._conn, stream, upto, decodes)
            if checked.damage is not None:
                damage = checked.damage
                return CorruptEvent(self.path, group_id, damage.seq, damage.reason, applied=True)
            if seal and checked.unsealed:
                self._seal(stream, checked.unsealed)
        return None

    def _seal(self, stream: str, unsealed: list[tuple[int, int]]) -> None:
        """Store sums for events that had none; a WAL that cannot be written is decoded again
        at the next open instead."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            self._record_sums([(stream, seq, value) for seq, value in unsealed])
            self._conn.execute("COMMIT")
            self._sums_ready = True
        except sqlite3.Error as error:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            log.warning("could not store the checksums of %s's events: %s", self.path, error)

    def _commit(self) -> None:
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as error:  # nothing of the transaction is stored
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise StorageFailure(self.path, "append to the WAL", error) from error

    def read(
        self, group_id: GroupId, *, after: int = 0, upto: int | None = None, page: int = PAGE_SIZE
    ) -> Iterator[list[RecordedEvent]]:
        """Pages of the group's events with `after < seq <= upto`, in order."""
        originator = stream_id(group_id).hex

        def fetch(position: int, last: int) -> tuple[list[Row], dict[int, int]]:
            try:
                with self._lock:
                    rows = self._conn.execute(_PAGE, (originator, position, last, page)).fetchall()
                    expected = (
                        sums.expected_between(self._conn, originator, rows[0][0], rows[-1][0])
                        if rows and self._sums_ready
                        else {}
                    )
            except sqlite3.DatabaseError as error:
                action = f"read the events of group {group_id!r} after seq {position} from"
                raise StorageFailure(self.path, action, error) from error
            return rows, expected

        return read_pages(fetch, self.codec, self.path, group_id, after, upto, page)

    def truncate_all(self) -> None:
        """Erase every stream (knowledge_clear_all without preserve_wal) and every pin; the
        marks stay listed, in the old generation, naming nothing (ADR 0032)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.execute("DELETE FROM stored_events")
                self._conn.execute("DELETE FROM lcg_groups")
                if sums.has_table(self._conn):
                    self._conn.execute("DELETE FROM lcg_event_sums")
                if self._has_pins_table():
                    self._conn.execute("DELETE FROM lcg_pins")
                if marks.has_tables(self._conn):  # seqs restart: the marks name nothing now
                    marks.next_generation(self._conn)
                self._conn.execute("COMMIT")
            except BaseException as error:  # nothing is erased; no transaction is left open
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(error, sqlite3.Error) and is_storage_error(error):
                    raise StorageFailure(self.path, "erase the WAL", error) from error
                raise
        self._known_groups.clear()

    def pins(self) -> dict[GroupId, int] | None:
        """The seq each pinned group is held at by a bounded replay (ADR 0023); None for a WAL
        that has never recorded pins (from before them: the graph's own pins are adopted)."""
        with self._lock:
            if not self._has_pins_table():
                return None
            rows = self._conn.execute("SELECT group_id, pinned_to FROM lcg_pins").fetchall()
        return {GroupId(group): int(seq) for group, seq in rows}

    def set_pins(self, pins: dict[GroupId, int | None]) -> None:
        """Record (an int) or release (None) each group's pin, in one transaction. The WAL holds
        the operator's choice, so a graph.sqlite rebuilt after damage replays to it again."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as error:
                raise StorageFailure(self.path, "record a pin in the WAL", error) from error
            try:
                self._conn.execute(  # created on first use: a read-only WAL still opens
                    "CREATE TABLE IF NOT EXISTS lcg_pins ("
                    "group_id TEXT PRIMARY KEY, pinned_to INTEGER NOT NULL)"
                )
                for group, seq in pins.items():
                    if seq is None:
                        self._conn.execute("DELETE FROM lcg_pins WHERE group_id=?", (group,))
                    else:
                        self._conn.execute(
                            "INSERT OR REPLACE INTO lcg_pins VALUES (?, ?)", (group, seq)
                        )
                self._conn.execute("COMMIT")
            except BaseException as error:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(error, sqlite3.Error) and is_storage_error(error):
                    raise StorageFailure(self.path, "record a pin in the WAL", error) from error
                raise

    def _has_pins_table(self) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='lcg_pins'"
        ).fetchone()
        return row is not None

    def bounds(self, group_id: str) -> tuple[int, int] | None:
        """The first and last seq of the group's stream; None when it holds no event."""
        with self._lock:
            row = self._conn.execute(
                "SELECT MIN(originator_version), MAX(originator_version) FROM stored_events"
                " WHERE originator_id=?",
                (stream_id(group_id).hex,),
            ).fetchone()
        return None if row[0] is None else (int(row[0]), int(row[1]))

    def last_seq_of(self, group_id: str, wire_names: Sequence[str], upto: int) -> int:
        """The last seq at or before `upto` whose event is one of `wire_names`; 0 if none."""
        if not wire_names:
            return 0
        places = ", ".join("?" for _ in wire_names)
        with self._lock:
            row = self._conn.execute(
                "SELECT MAX(originator_version) FROM stored_events WHERE originator_id=?"
                f" AND originator_version<=? AND topic IN ({places})",
                (stream_id(group_id).hex, upto, *wire_names),
            ).fetchone()
        return int(row[0] or 0)

    def generation(self) -> int:
        """How many times the streams were erased, plus one: the numbering marks belong to."""
        with self._lock:
            return marks.generation(self._conn)

    def marks(self, group_id: GroupId) -> list[Mark]:
        """The group's active marks, oldest first (ADR 0032)."""
        with self._lock:
            return marks.active(self._conn, group_id)

    def create_mark(self, group_id: GroupId, name: str, seq: int, at: datetime) -> Mark:
        """Record the mark; `MarkExists` if the group already has an active one so named."""
        with self._transaction("record a mark in the WAL"):
            return marks.create(self._conn, group_id, name, seq, at.isoformat())

    def delete_mark(self, group_id: GroupId, name: str, at: datetime) -> Mark | None:
        """Tombstone the group's active mark `name`; None if there is none."""
        with self._transaction("delete a mark in the WAL"):
            return marks.tombstone(self._conn, group_id, name, at.isoformat())

    def adopt(self, identity: str, generation: int, active: list[Mark]) -> None:
        """Take another log's identity, generation and active marks: this log becomes a copy
        of it (`lcg store copy`, ADR 0073), so the projections built from it stay valid."""
        with self._transaction("record the identity of the copied log in the WAL"):
            self._conn.execute("UPDATE lcg_wal_identity SET identity=?", (identity,))
            marks.adopt(self._conn, generation, active)

    @contextmanager
    def _transaction(self, action: str) -> Iterator[None]:
        """One write transaction on the shared connection; a storage error names the file."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as error:
                raise StorageFailure(self.path, action, error) from error
            try:
                yield
                self._conn.execute("COMMIT")
            except BaseException as error:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(error, sqlite3.Error) and is_storage_error(error):
                    raise StorageFailure(self.path, action, error) from error
                raise

    def byte_size(self) -> int:
        """Bytes on disk of the WAL file and its SQLite journal."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            candidate = Path(f"{self.path}{suffix}")
            if candidate.exists():
                total += candidate.stat().st_size
        return total


Row = tuple[int, str, bytes]  # a stored event's seq, topic and state
Fetch = Callable[[int, int], tuple[list[Row], dict[int, int]]]


def read_pages(
    fetch: Fetch,
    codec: EventCodec,
    where: Path | str,
    group_id: GroupId,
    after: int,
    upto: int | None,
    page: int,
) -> Iterator[list[RecordedEvent]]:
    """The pages `fetch(after, upto)` gives (rows and their stored sums), decoded, each row
    compared with its sum; the first that differs or cannot be decoded is raised as a
    CorruptEvent after the page's events before it (ADR 0049)."""
    last = _NO_LIMIT if upto is None else upto
    position = after
    while position < last:
        rows, expected = fetch(position, last)
        if not rows:
            return
        changed = sums.first_changed(rows, expected)
        events, corrupt = decode_rows(
            codec, where, group_id, rows if changed is None else rows[:changed]
        )
        if corrupt is None and changed is not None:
            corrupt = CorruptEvent(where, group_id, rows[changed][0], sums.CHANGED)
        if events:
            yield events
        if corrupt is not None:  # after the events before it, so they can still be applied
            raise corrupt
        position = rows[-1][0]
        if len(rows) < page:
            return


def decode_rows(
    codec: EventCodec, where: Path | str, group_id: GroupId, rows: Sequence[tuple[int, str, bytes]]
) -> tuple[list[RecordedEvent], CorruptEvent | None]:
    """The rows (seq, topic, state) as events, up to the first one that cannot be decoded
    (named with its seq)."""
    decode = codec.decode
    try:
        return [
            RecordedEvent(group_id, Seq(seq), decode(topic, orjson.loads(state)))
            for seq, topic, state in rows
        ], None
    except Exception:  # found again below, row by row, and named
        events: list[RecordedEvent] = []
        for seq, topic, state in rows:
            try:
                events.append(RecordedEvent(group_id, Seq(seq), decode(topic, orjson.loads(state))))
            except Exception as error:  # noqa: BLE001 (any undecodable event is corrupt)
                reason = f"{type(error).__name__}: {error}"
                return events, CorruptEvent(where, group_id, seq, reason)
        raise
