"""Checksums of the WAL's events, kept beside them, and the check at open that uses them.

docs/adr/0049-wal-event-checksums.md. The library owns `stored_events` (it inserts `VALUES
(?,?,?,?)` and selects `*`, so a column of ours would break it): a CRC-32 of each event's topic
and state goes into `lcg_event_sums`, one row per group per append holding the sums of a run of
consecutive seqs, little-endian uint32 each. An event with no sum (written before this table, or
by the library itself) is decoded instead, and sealed once it decodes. The functions here run on
the caller's connection, inside its transaction where they write.
"""

from __future__ import annotations

import array
import sqlite3
import struct
import sys
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS lcg_event_sums (stream_id TEXT NOT NULL,"
    " first_seq INTEGER NOT NULL, sums BLOB NOT NULL, PRIMARY KEY (stream_id, first_seq))"
    " WITHOUT ROWID"
)
_SUM = struct.Struct("<I")
_EVENTS = (
    "SELECT originator_version, CAST(topic AS BLOB), state FROM stored_events"
    " WHERE originator_id=? AND originator_version<=? ORDER BY originator_version"
)

Decode = Callable[[str, bytes], object]
Stream = TypeVar("Stream", str, UUID)  # a stream id as the store keeps it
CHANGED = "its bytes differ from those written (checksum mismatch)"
MISSING = "the event is missing"


def event_sum(topic: bytes, state: bytes) -> int:
    """The CRC-32 of an event's stored topic and state."""
    return zlib.crc32(state, zlib.crc32(topic))


def has_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='lcg_event_sums'"
    ).fetchone()
    return row is not None


def record(conn: sqlite3.Connection, events: Iterable[tuple[str, int, int]]) -> None:
    """Store the sums of (stream id, seq, sum), one row per run of consecutive seqs of a stream
    (a batch may interleave groups; each group's seqs rise)."""
    conn.executemany("INSERT OR REPLACE INTO lcg_event_sums VALUES (?, ?, ?)", sum_rows(events))


def sum_rows(events: Iterable[tuple[Stream, int, int]]) -> list[tuple[Stream, int, bytes]]:
    """The rows (stream id, first seq, packed sums) that hold the sums of (stream, seq, sum):
    one per run of consecutive seqs of a stream."""
    runs: dict[Stream, list[tuple[int, list[int]]]] = {}
    for stream, seq, value in events:
        stream_runs = runs.setdefault(stream, [])
        if stream_runs and stream_runs[-1][0] + len(stream_runs[-1][1]) == seq:
            stream_runs[-1][1].append(value)
        else:
            stream_runs.append((seq, [value]))
    return [
        (stream, first, b"".join(_SUM.pack(value) for value in values))
        for stream, stream_runs in runs.items()
        for first, values in stream_runs
    ]


@dataclass(frozen=True, slots=True)
class Damage:
    """The first event of a stream that is not what was written, and why."""

    seq: int
    reason: str


@dataclass(frozen=True, slots=True)
class Checked:
    damage: Damage | None
    unsealed: list[tuple[int, int]]  # (seq, sum) of events that decoded but had no sum


def check(conn: sqlite3.Connection, stream: str, upto: int, decode: Decode) -> Checked:
    """Every event of the stream up to `upto`: present (seqs 1.. without a gap), equal to its
    sum, or decodable when it has none. Stops at the first damaged one."""
    sealed = has_table(conn)
    try:
        if sealed and _all_whole(conn, stream, upto):
            return Checked(None, [])
    except sqlite3.DatabaseError:
        pass  # found again below, event by event, and named
    expected, bad_sums = _expected(conn, stream) if sealed else ({}, None)
    events = conn.execute(_EVENTS, (stream, upto))
    return walk(events, expected, bad_sums, upto, decode, store_errors=(sqlite3.DatabaseError,))


def walk(
    events: Iterable[tuple[int, bytes, bytes | str]],
    expected: dict[int, int],
    bad_sums: int | None,
    upto: int,
    decode: Decode,
    *,
    store_errors: tuple[type[Exception], ...],
    after: int = 0,
) -> Checked:
    """The check of a stream's events (seq, topic bytes, state) read in order from `after + 1`
    up to `upto`, against their stored sums; one of `store_errors` while reading damages the
    first seq not yet checked."""
    unsealed: list[tuple[int, int]] = []
    previous = after
    try:
        for seq, topic, state in events:
            damage = _damage(seq, previous, bad_sums)
            if damage is None:
                data = _as_bytes(state)
                value = event_sum(topic, data)
                want = expected.get(seq)
                if want is None:
                    problem = _undecodable(decode, topic, data)
                    damage = None if problem is None else Damage(seq, problem)
                    unsealed.append((seq, value))
                elif want != value:
                    damage = Damage(seq, CHANGED)
            if damage is not None:
                return Checked(damage, [])
            previous = seq
    except store_errors as error:  # the store's pages, not one event's bytes
        return Checked(Damage(previous + 1, f"{type(error).__name__}: {error}"), [])
    if previous < upto:
        return Checked(Damage(previous + 1, MISSING), [])
    return Checked(None, unsealed)


def _damage(seq: int, previous: int, bad_sums: int | None) -> Damage | None:
    """A gap before `seq`, or a sums row that cannot be read covering it."""
    if seq != previous + 1:
        return Damage(previous + 1, MISSING)
    if bad_sums is not None and seq >= bad_sums:
        return Damage(bad_sums, "its stored checksum is damaged")
    return None


def _all_whole(conn: sqlite3.Connection, stream: str, upto: int) -> bool:
    """The common case, fast (ADR 0049 measures it): seqs 1..upto all there, all sealed by
    contiguous sums rows, and the sums of their bytes equal, compared as one byte string.
    False sends the caller to the event-by-event check, which names what differs."""
    count, top = conn.execute(
        "SELECT COUNT(*), MAX(originator_version) FROM stored_events WHERE originator_id=?"
        " AND originator_version<=?",
        (stream, upto),
    ).fetchone()
    if count != upto or top != upto:  # seqs are unique integers: count == max == upto is 1..upto
        return False
    parts: list[bytes] = []
    covered = 0
    for first, blob in conn.execute(
        "SELECT first_seq, sums FROM lcg_event_sums WHERE stream_id=? ORDER BY first_seq",
        (stream,),
    ):
        if first != covered + 1 or not isinstance(blob, bytes) or len(blob) % _SUM.size:
            return False
        parts.append(blob)
        covered += len(blob) // _SUM.size
        if covered >= upto:
            break
    if covered < upto:
        return False
    crc = zlib.crc32
    try:
        actual = array.array(
            "I",
            [
                crc(state, crc(topic))
                for topic, state in conn.execute(
                    "SELECT CAST(topic AS BLOB), state FROM stored_events WHERE originator_id=?"
                    " AND originator_version<=? ORDER BY originator_version",
                    (stream, upto),
                )
            ],
        )
    except TypeError:  # a state stored as text: the slow path reads it
        return False
    if actual.itemsize != _SUM.size:
        return False
    if sys.byteorder == "big":
        actual.byteswap()
    return actual.tobytes() == b"".join(parts)[: upto * _SUM.size]


def expected_between(
    conn: sqlite3.Connection, stream: str, first: int, last: int
) -> dict[int, int]:
    """The stored sums of the stream's seqs `first..last` (a page being read): the rows from
    the one that covers `first` (an index seek) up to `last`."""
    rows = conn.execute(
        "SELECT first_seq, sums FROM lcg_event_sums WHERE stream_id=?1 AND first_seq<=?3 AND"
        " first_seq>=COALESCE((SELECT MAX(first_seq) FROM lcg_event_sums WHERE stream_id=?1"
        " AND first_seq<=?2), 0) ORDER BY first_seq",
        (stream, first, last),
    )
    return sums_within(rows, first, last)


def sums_within(rows: Iterable[tuple[int, object]], first: int, last: int) -> dict[int, int]:
    """The sums of seqs `first..last` held by rows (first seq, packed sums); a damaged row is
    skipped (the check at open names it)."""
    expected: dict[int, int] = {}
    for start, blob in rows:
        if not isinstance(blob, bytes):
            continue
        for offset, (value,) in enumerate(_SUM.iter_unpack(blob[: len(blob) // 4 * 4])):
            if first <= start + offset <= last:
                expected[start + offset] = value
    return expected


def first_changed(rows: Sequence[tuple[int, str, bytes]], expected: dict[int, int]) -> int | None:
    """The index of the first row whose bytes differ from its stored sum; None if none does
    (a row without a sum is left to decoding)."""
    if not expected:
        return None
    for index, (seq, topic, state) in enumerate(rows):
        want = expected.get(seq)
        if want is not None and want != event_sum(topic.encode("utf-8"), _as_bytes(state)):
            return index
    return None


def _expected(conn: sqlite3.Connection, stream: str) -> tuple[dict[int, int], int | None]:
    """The stored sum of each seq, and the first seq of a sums row that cannot be read."""
    return parse_sums(
        conn.execute(
            "SELECT first_seq, sums FROM lcg_event_sums WHERE stream_id=? ORDER BY first_seq",
            (stream,),
        )
    )


def parse_sums(rows: Iterable[tuple[int, object]]) -> tuple[dict[int, int], int | None]:
    """The sum of each seq from rows (first seq, packed sums) in order, and the first seq of
    a row that cannot be read."""
    expected: dict[int, int] = {}
    for first, blob in rows:
        if not isinstance(blob, bytes) or len(blob) % _SUM.size:
            return expected, int(first)
        for offset, (value,) in enumerate(_SUM.iter_unpack(blob)):
            expected[first + offset] = value
    return expected, None


def _as_bytes(state: bytes | str) -> bytes:
    """The stored state's bytes (the library stores bytes; a hand-written row may be text)."""
    return state.encode("utf-8") if isinstance(state, str) else bytes(state)


def _undecodable(decode: Decode, topic: bytes, state: bytes) -> str | None:
    try:
        decode(topic.decode("utf-8"), state)
    except Exception as error:  # noqa: BLE001 (any undecodable event is damaged)
        return f"{type(error).__name__}: {error}"
    return None
