"""The log in PostgreSQL: the same per-group streams as the SQLite WAL, on a server.

docs/adr/0067-the-log-in-postgresql.md. eventsourcing's `PostgresApplicationRecorder` creates
`stored_events` (its layout: `originator_id uuid, originator_version bigint, topic text, state
bytea, notification_id bigserial`); we read and write its rows with our own statements, as
ADR 0017 does for SQLite: one stream per group (`stream_id(group)`), seq = originator_version,
the same topic and state bytes. An append takes the table's EXCLUSIVE lock, as the library's
insert does, so that notification ids are handed out in commit order (a follower reading by
notification id never passes a gap filled later). Beside the streams: `lcg_groups`, the
identity, checksums (ADR 0049), pins (ADR 0023) and marks (ADR 0032), as in the SQLite file.

Credentials come from the URL or libpq's environment (PGPASSWORD, PGHOST, ...). Messages name
the store as `postgresql://user@host:port/dbname`; a password is never put in one.
"""

from __future__ import annotations

import getpass
import logging
import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import orjson
import psycopg
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg import errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from lcg.domain.events import EventCodec
from lcg.domain.ids import GroupId
from lcg.projections.faults import CorruptEvent, StorageFailure
from lcg.projections.wal import pg_lease, sums
from lcg.projections.wal.marks import FIRST_GENERATION, Mark, MarkExists
from lcg.projections.wal.store import (
    PAGE_SIZE,
    ConcurrentAppend,
    RecordedEvent,
    Row,
    read_pages,
    stream_id,
)

log = logging.getLogger(__name__)
SCHEMES = ("postgresql://", "postgres://")
_CREATE = (
    "CREATE TABLE IF NOT EXISTS lcg_groups (group_id TEXT PRIMARY KEY,"
    " stream_id UUID NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS lcg_wal_identity (one INTEGER PRIMARY KEY CHECK (one = 1),"
    " identity TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lcg_event_sums (stream_id UUID NOT NULL, first_seq BIGINT"
    " NOT NULL, sums BYTEA NOT NULL, PRIMARY KEY (stream_id, first_seq))",
    "CREATE TABLE IF NOT EXISTS lcg_marks (id BIGSERIAL PRIMARY KEY, group_id TEXT NOT NULL,"
    " name TEXT NOT NULL, seq BIGINT NOT NULL, generation INTEGER NOT NULL,"
    " created_at TEXT NOT NULL, deleted_at TEXT)",
    "CREATE UNIQUE INDEX IF NOT EXISTS lcg_marks_active ON lcg_marks (group_id, name)"
    " WHERE deleted_at IS NULL",
    "CREATE TABLE IF NOT EXISTS lcg_generation (one INTEGER PRIMARY KEY CHECK (one = 1),"
    " generation INTEGER NOT NULL)",
)
_PINS = "CREATE TABLE IF NOT EXISTS lcg_pins (group_id TEXT PRIMARY KEY, pinned_to BIGINT NOT NULL)"
RECONNECT_TIMEOUT = 10.0  # seconds the pool keeps retrying a lost connection in the background
_SCHEMA_LOCK = 0x6C6367  # an advisory lock: two processes creating the tables take turns
_LOCK = "LOCK TABLE stored_events IN EXCLUSIVE MODE"
_INSERT = (
    "INSERT INTO stored_events (originator_id, originator_version, topic, state)"
    " VALUES (%s, %s, %s, %s)"
)
_INSERT_SUMS = (
    "INSERT INTO lcg_event_sums VALUES (%s, %s, %s)"
    " ON CONFLICT (stream_id, first_seq) DO UPDATE SET sums = EXCLUDED.sums"
)
_PAGE = (
    "SELECT originator_version, topic, state FROM stored_events WHERE originator_id=%s"
    " AND originator_version>%s AND originator_version<=%s ORDER BY originator_version LIMIT %s"
)
_SUMS_OF_PAGE = (
    "SELECT first_seq, sums FROM lcg_event_sums WHERE stream_id=%(s)s AND first_seq<=%(last)s"
    " AND first_seq>=COALESCE((SELECT MAX(first_seq) FROM lcg_event_sums WHERE"
    " stream_id=%(s)s AND first_seq<=%(first)s), 0) ORDER BY first_seq"
)
_MARK_COLUMNS = "group_id, name, seq, generation, created_at, deleted_at"
CHANNEL = "lcg_log"  # the channel appends notify on (ADR 0076)
_NOTIFY = f"SELECT pg_notify('{CHANNEL}', %s)"


def notices(batch: Sequence[RecordedEvent]) -> list[str]:
    """`<group>:<last seq>` for each group of the batch: what an append notifies."""
    last: dict[str, int] = {}
    for recorded in batch:
        last[recorded.group_id] = max(last.get(recorded.group_id, 0), recorded.seq)
    return [f"{group}:{seq}" for group, seq in sorted(last.items())]


def parse_notice(payload: str) -> tuple[GroupId, int] | None:
    """The group and seq of a notice (a group id may hold ':'; the seq is after the last)."""
    group, sep, seq = payload.rpartition(":")
    if not sep or not group or not seq.isdigit():
        return None
    return GroupId(group), int(seq)


def is_postgres_url(url: str) -> bool:
    return url.startswith(SCHEMES)


def describe(url: str) -> str:
    """The store as messages name it: scheme, user, host, port and database, never the
    password (from the URL, else libpq's environment, else its defaults)."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error:
        params = {}

    def part(key: str, env: str, default: str) -> str:
        return str(params.get(key) or os.environ.get(env) or default)

    user = part("user", "PGUSER", getpass.getuser())
    host = part("host", "PGHOST", "localhost")
    port = part("port", "PGPORT", "5432")
    return f"postgresql://{user}@{host}:{port}/{part('dbname', 'PGDATABASE', user)}"


def _password(url: str) -> str | None:
    try:
        found = conninfo_to_dict(url).get("password")
    except psycopg.Error:
        return None
    return str(found) if found else os.environ.get("PGPASSWORD") or None


class PostgresLog:
    """Append to and read from the per-group streams of one PostgreSQL database."""

    def __init__(
        self,
        url: str,
        codec: EventCodec,
        *,
        lock_table: bool = True,
        pool_size: int = 4,
        connect_timeout: float = 5.0,
    ) -> None:
        self.codec = codec
        self.lock_table = lock_table
        self._where = describe(url)
        self._secret = _password(url)
        timeout = max(1, round(connect_timeout))
        try:
            self._identity = self._install(url, timeout)
        except psycopg.Error as error:
            raise self._failure("open the log in", error) from None
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "connect_timeout": timeout},
            check=ConnectionPool.check_connection,  # a killed connection is replaced, not used
            name="lcg-log",
            timeout=connect_timeout,
            # a failed reconnection gives up soon: the next call starts a fresh one, so a node
            # takes writes again as soon as the server does (no backoff grown through an outage)
            reconnect_timeout=RECONNECT_TIMEOUT,
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except psycopg.Error as error:
            self._pool.close()
            raise self._failure("open the log in", error) from None
        self._known_groups: set[str] = set(self.groups())

    def _install(self, url: str, timeout: int) -> str:
        """Create the library's table and ours (once, whoever comes first); the identity."""
        with psycopg.connect(url, autocommit=True, connect_timeout=timeout) as conn:
            info = conn.info
            datastore = PostgresDatastore(
                info.dbname,
                info.host,
                info.port,
                info.user,
                info.password or "",
                connect_timeout=timeout,
            )
            try:  # the library owns the table's layout; we only read and write its rows
                PostgresApplicationRecorder(datastore).create_table()
            finally:
                datastore.close()
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                for statement in _CREATE:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO lcg_wal_identity VALUES (1, %s) ON CONFLICT DO NOTHING",
                    (uuid.uuid4().hex,),
                )
            row = conn.execute("SELECT identity FROM lcg_wal_identity").fetchone()
        assert row is not None
        return str(row[0])

    def _failure(self, action: str, error: BaseException) -> StorageFailure:
        """The storage error, naming the store and never its password."""
        reason = f"{type(error).__name__}: {error}"
        if self._secret:
            reason = reason.replace(self._secret, "***")
        return StorageFailure(self._where, action, reason)

    @contextmanager
    def _connection(
        self, action: str, timeout: float | None = None
    ) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection (waited for at most `timeout` s, else the pool's); a server or
        connection failure is a StorageFailure."""
        try:
            with self._pool.connection(timeout=timeout) as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, psycopg.InternalError) as error:
            raise self._failure(action, error) from error
        except psycopg.DatabaseError as error:
            if isinstance(error, psycopg.IntegrityError | psycopg.ProgrammingError):
                raise
            raise self._failure(action, error) from error

    @property
    def where(self) -> str:
        return self._where

    @property
    def identity(self) -> str:
        return self._identity

    def close(self) -> None:
        self._pool.close()

    def byte_size(self) -> int:
        """Bytes of the log's relations on the server (tables, indexes, TOAST): the streams'
        table is shared by the whole database's log, as the WAL file is by its groups."""
        return int(
            self._one(
                "measure",
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r'"
                " AND n.nspname = current_schema() AND (c.relname = 'stored_events'"
                " OR c.relname LIKE 'lcg\\_%%')",
            )
        )

    def _one(self, action: str, statement: str, params: Sequence[object] = ()) -> Any:
        with self._connection(action) as conn:
            row = conn.execute(statement, params).fetchone()
        assert row is not None
        return row[0]

    def probe(self, timeout: float = 2.0) -> None:
        """A round trip to the server (health_check's probe); the storage error when it cannot
        be made within about `timeout` seconds."""
        with self._connection("reach", timeout) as conn:
            conn.execute("SELECT 1").fetchone()

    def wake_followers(self, timeout: float = 1.0) -> None:
        """An empty notice on the channel: a follower waiting for notices wakes at once and
        ignores it (`parse_notice` reads no group from it). `LogFollower.stop` sends it."""
        with self._connection("wake the followers of", timeout) as conn:
            conn.execute(_NOTIFY, ("",))

    def groups(self) -> list[GroupId]:
        with self._connection("list the groups of") as conn:
            rows = conn.execute("SELECT group_id FROM lcg_groups ORDER BY group_id").fetchall()
        return [GroupId(row[0]) for row in rows]

    def heads(self) -> dict[GroupId, int]:
        with self._connection("read the heads of") as conn:
            rows = conn.execute(
                "SELECT g.group_id, (SELECT MAX(e.originator_version) FROM stored_events e"
                " WHERE e.originator_id = g.stream_id) FROM lcg_groups g ORDER BY g.group_id"
            ).fetchall()
        return {GroupId(row[0]): int(row[1] or 0) for row in rows}

    def head(self, group_id: str) -> int:
        return int(
            self._one(
                "read the head of a group in",
                "SELECT MAX(originator_version) FROM stored_events WHERE originator_id=%s",
                (stream_id(group_id),),
            )
            or 0
        )

    def bounds(self, group_id: str) -> tuple[int, int] | None:
        with self._connection("read the bounds of a group in") as conn:
            row = conn.execute(
                "SELECT MIN(originator_version), MAX(originator_version) FROM stored_events"
                " WHERE originator_id=%s",
                (stream_id(group_id),),
            ).fetchone()
        return None if row is None or row[0] is None else (int(row[0]), int(row[1]))

    def last_seq_of(self, group_id: str, wire_names: Sequence[str], upto: int) -> int:
        if not wire_names:
            return 0
        found = self._one(
            "read a group's events in",
            "SELECT MAX(originator_version) FROM stored_events WHERE originator_id=%s"
            " AND originator_version<=%s AND topic = ANY(%s)",
            (stream_id(group_id), upto, list(wire_names)),
        )
        return int(found or 0)

    def append(
        self, batch: Sequence[RecordedEvent], *, fence: tuple[str, int] | None = None
    ) -> None:
        """Store the events in one transaction; their seqs must continue each stream gap-free.
        A connection lost before the commit is acknowledged is a StorageFailure: the append
        may or may not have been stored, and is never retried here. `fence` (a lease's name
        and the writer's epoch, ADR 0075): refused with `Fenced`, nothing stored, when the
        lease was taken over. The commit notifies `lcg_log` with `<group>:<last seq>` for
        each group appended to, for followers on other nodes (ADR 0076)."""
        if not batch:
            return
        encode = self.codec.encode
        rows = [
            (stream_id(r.group_id), r.seq, r.event.wire_name, orjson.dumps(encode(r.event)))
            for r in batch
        ]
        event_sums = sums.sum_rows(
            (stream, seq, sums.event_sum(topic.encode("utf-8"), state))
            for stream, seq, topic, state in rows
        )
        missing = {r.group_id for r in batch} - self._known_groups
        with self._connection("append to the log in") as conn:
            try:  # one round trip: the statements are pipelined, the commit waits for them
                with conn.pipeline(), conn.transaction(), conn.cursor() as cursor:
                    if fence is not None:
                        pg_lease.fence(conn, *fence)
                    if self.lock_table:
                        cursor.execute(_LOCK)
                    if missing:
                        cursor.executemany(
                            "INSERT INTO lcg_groups VALUES (%s, %s) ON CONFLICT DO NOTHING",
                            [(group, stream_id(group)) for group in sorted(missing)],
                        )
                    cursor.executemany(_INSERT, rows)
                    cursor.executemany(_INSERT_SUMS, event_sums)
                    cursor.executemany(_NOTIFY, [(note,) for note in notices(batch)])
            except errors.UniqueViolation as error:
                raise ConcurrentAppend(
                    "another writer appended to the same stream position; nothing was stored"
                ) from error
        self._known_groups |= missing

    def read(
        self, group_id: GroupId, *, after: int = 0, upto: int | None = None, page: int = PAGE_SIZE
    ) -> Iterator[list[RecordedEvent]]:
        """Pages of the group's events with `after < seq <= upto`, in order, each compared
        with its checksum (ADR 0049)."""
        stream = stream_id(group_id)

        def fetch(position: int, last: int) -> tuple[list[Row], dict[int, int]]:
            action = f"read the events of group {group_id!r} after seq {position} from"
            with self._connection(action) as conn:
                rows = [
                    (int(seq), str(topic), bytes(state))
                    for seq, topic, state in conn.execute(_PAGE, (stream, position, last, page))
                ]
                if not rows:
                    return rows, {}
                first, final = rows[0][0], rows[-1][0]
                held = conn.execute(_SUMS_OF_PAGE, {"s": stream, "first": first, "last": final})
                return rows, sums.sums_within(held, first, final)

        return read_pages(fetch, self.codec, self._where, group_id, after, upto, page)

    def check(
        self, group_id: GroupId, upto: int, *, seal: bool, after: int = 0
    ) -> CorruptEvent | None:
        """The group's first event in `after + 1..upto` that is missing, differs from its
        checksum or (having none) cannot be decoded; None if all are whole. `seal` stores the
        missing sums. `after`: what this node checked at an earlier open (ADR 0085)."""
        decode = self.codec.decode

        def decodes(topic: str, state: bytes) -> object:
            return decode(topic, orjson.loads(state))

        stream = stream_id(group_id)
        with self._connection(f"check the events of group {group_id!r} in") as conn:
            expected, bad_sums = sums.parse_sums(
                conn.execute(
                    "SELECT first_seq, sums FROM lcg_event_sums WHERE stream_id=%s"
                    " ORDER BY first_seq",
                    (stream,),
                )
            )
            events = (
                (int(seq), str(topic).encode("utf-8"), bytes(state))
                for seq, topic, state in conn.execute(
                    "SELECT originator_version, topic, state FROM stored_events"
                    " WHERE originator_id=%s AND originator_version>%s"
                    " AND originator_version<=%s ORDER BY originator_version",
                    (stream, after, upto),
                )
            )
            checked = sums.walk(
                events,
                expected,
                bad_sums,
                upto,
                decodes,
                store_errors=(psycopg.DataError,),
                after=after,
            )
            if checked.damage is not None:
                damage = checked.damage
                return CorruptEvent(self._where, group_id, damage.seq, damage.reason, applied=True)
            if seal and checked.unsealed:
                with conn.transaction(), conn.cursor() as cursor:
                    cursor.executemany(
                        _INSERT_SUMS,
                        sums.sum_rows((stream, seq, value) for seq, value in checked.unsealed),
                    )
        return None

    def truncate_all(self) -> None:
        """Erase every stream and pin; marks stay, in the old generation (ADR 0032)."""
        with self._connection("erase the log in") as conn, conn.transaction():
            conn.execute(_LOCK)
            conn.execute("DELETE FROM stored_events")
            conn.execute("DELETE FROM lcg_groups")
            conn.execute("DELETE FROM lcg_event_sums")
            if self._has_pins(conn):
                conn.execute("DELETE FROM lcg_pins")
            conn.execute(  # as in SQLite: the numbering moves on once marks were ever made
                "INSERT INTO lcg_generation SELECT 1, %s WHERE EXISTS (SELECT 1 FROM lcg_marks)"
                " ON CONFLICT (one) DO UPDATE SET generation = lcg_generation.generation + 1",
                (FIRST_GENERATION + 1,),
            )
        self._known_groups.clear()

    @staticmethod
    def _has_pins(conn: psycopg.Connection[Any]) -> bool:
        row = conn.execute("SELECT to_regclass('lcg_pins') IS NOT NULL").fetchone()
        return bool(row and row[0])

    def pins(self) -> dict[GroupId, int] | None:
        """Each pinned group's seq (ADR 0023); None when the log never recorded a pin."""
        with self._connection("read the pins of") as conn:
            if not self._has_pins(conn):
                return None
            rows = conn.execute("SELECT group_id, pinned_to FROM lcg_pins").fetchall()
        return {GroupId(group): int(seq) for group, seq in rows}

    def set_pins(self, pins: dict[GroupId, int | None]) -> None:
        """Record (an int) or release (None) each group's pin, in one transaction."""
        with self._connection("record a pin in") as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(_PINS)
            for group, seq in pins.items():
                if seq is None:
                    conn.execute("DELETE FROM lcg_pins WHERE group_id=%s", (group,))
                else:
                    conn.execute(
                        "INSERT INTO lcg_pins VALUES (%s, %s) ON CONFLICT (group_id)"
                        " DO UPDATE SET pinned_to = EXCLUDED.pinned_to",
                        (group, seq),
                    )

    def adopt(self, identity: str, generation: int, active: list[Mark]) -> None:
        """Take another log's identity, generation and active marks: this log becomes a copy
        of it (`lcg store copy`, ADR 0073), so the projections built from it stay valid."""
        action = "record the identity of the copied log in"
        with self._connection(action) as conn, conn.transaction():
            conn.execute("UPDATE lcg_wal_identity SET identity=%s", (identity,))
            if generation != FIRST_GENERATION or active:
                conn.execute(
                    "INSERT INTO lcg_generation VALUES (1, %s) ON CONFLICT (one)"
                    " DO UPDATE SET generation = EXCLUDED.generation",
                    (generation,),
                )
            for m in active:
                conn.execute(
                    f"INSERT INTO lcg_marks ({_MARK_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                    (m.group_id, m.name, m.seq, m.generation, m.created_at, m.deleted_at),
                )
        self._identity = identity

    def generation(self) -> int:
        found = self._one("read the generation of", "SELECT MAX(generation) FROM lcg_generation")
        return FIRST_GENERATION if found is None else int(found)

    def marks(self, group_id: GroupId) -> list[Mark]:
        with self._connection("read the marks of") as conn:
            rows = conn.execute(
                f"SELECT {_MARK_COLUMNS} FROM lcg_marks WHERE group_id=%s"
                " AND deleted_at IS NULL ORDER BY id",
                (group_id,),
            ).fetchall()
        return [Mark(GroupId(row[0]), row[1], int(row[2]), int(row[3]), *row[4:]) for row in rows]

    def create_mark(self, group_id: GroupId, name: str, seq: int, at: datetime) -> Mark:
        """Record the mark; `MarkExists` if the group already has an active one so named."""
        generation = self.generation()
        created = at.isoformat()
        with self._connection("record a mark in") as conn:
            try:
                conn.execute(
                    f"INSERT INTO lcg_marks ({_MARK_COLUMNS}) VALUES (%s, %s, %s, %s, %s, NULL)",
                    (group_id, name, seq, generation, created),
                )
            except errors.UniqueViolation as error:
                raise MarkExists(name) from error
        return Mark(group_id, name, seq, generation, created)

    def delete_mark(self, group_id: GroupId, name: str, at: datetime) -> Mark | None:
        """Tombstone the group's active mark `name`; None if there is none."""
        with self._connection("delete a mark in") as conn:
            row = conn.execute(
                "UPDATE lcg_marks SET deleted_at=%s WHERE group_id=%s AND name=%s"
                " AND deleted_at IS NULL RETURNING seq, generation, created_at",
                (at.isoformat(), group_id, name),
            ).fetchone()
        if row is None:
            return None
        return Mark(group_id, name, int(row[0]), int(row[1]), row[2], at.isoformat())
