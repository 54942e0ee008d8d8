"""The WAL: one eventsourcing stream per group in a SQLite file, seq = originator_version.

See docs/adr/0002-wal-schema.md. The library's recorder creates `stored_events`; appends and
reads use that table directly through one sqlite3 connection (docs/adr/0017-write-and-replay-
fast-paths.md: `EventStore.put` and `select_events` built a `StoredEvent`, a `UUID` and a
pooled transaction per call or row). tests/test_wal_store.py checks that the library reads
what we write and we read what it writes. Group names are kept in a `lcg_groups` table beside
`stored_events` because a stream id (uuid5 of the group) cannot be reversed.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteDatastore

from lcg.domain.events import DomainEvent, EventCodec
from lcg.domain.ids import GroupId, Seq

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
        datastore = SQLiteDatastore(str(path), originator_id_type="uuid")
        try:  # the library owns the table's layout; we only read and write its rows
            SQLiteAggregateRecorder(datastore).create_table()
        finally:
            datastore.close()
        self._lock = threading.Lock()  # one connection, shared by the writer and readers
        self._conn = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=10
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS lcg_groups ("
            "group_id TEXT PRIMARY KEY, stream_id TEXT NOT NULL UNIQUE)"
        )
        self._known_groups: set[str] = set(self.groups())

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
        missing = {r.group_id for r in batch} - self._known_groups
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR IGNORE INTO lcg_groups (group_id, stream_id) VALUES (?, ?)",
                    [(group, stream_id(group).hex) for group in sorted(missing)],
                )
                self._conn.executemany(_INSERT, rows)
            except BaseException as error:
                self._conn.execute("ROLLBACK")
                if isinstance(error, sqlite3.IntegrityError):
                    raise ConcurrentAppend(
                        "another writer appended to the same stream position; nothing was stored"
                    ) from error
                raise
            self._conn.execute("COMMIT")
        self._known_groups |= missing

    def read(
        self, group_id: GroupId, *, after: int = 0, upto: int | None = None, page: int = PAGE_SIZE
    ) -> Iterator[list[RecordedEvent]]:
        """Pages of the group's events with `after < seq <= upto`, in order."""
        originator = stream_id(group_id).hex
        last = _NO_LIMIT if upto is None else upto
        position = after
        decode = self.codec.decode
        while position < last:
            with self._lock:
                rows = self._conn.execute(_PAGE, (originator, position, last, page)).fetchall()
            if not rows:
                return
            yield [
                RecordedEvent(group_id, Seq(seq), decode(topic, orjson.loads(state)))
                for seq, topic, state in rows
            ]
            position = rows[-1][0]
            if len(rows) < page:
                return

    def truncate_all(self) -> None:
        """Erase every stream (knowledge_clear_all without preserve_wal)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute("DELETE FROM stored_events")
            self._conn.execute("DELETE FROM lcg_groups")
            self._conn.execute("COMMIT")
        self._known_groups.clear()

    def byte_size(self) -> int:
        """Bytes on disk of the WAL file and its SQLite journal."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            candidate = Path(f"{self.path}{suffix}")
            if candidate.exists():
                total += candidate.stat().st_size
        return total
