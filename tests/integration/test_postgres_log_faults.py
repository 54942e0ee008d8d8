"""The PostgreSQL log when the server fails it (issue 28, "Faults", first slice; ADR 0067): a
server that cannot be reached at open, and a connection killed with `pg_terminate_backend`
in the middle of an append. The real server; the append is held mid-transaction by a lock
another connection takes, so the kill lands inside it every time."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

import psycopg
import pytest

from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.faults import StorageFailure
from lcg.projections.wal.postgres import PostgresLog, describe
from lcg.projections.wal.store import RecordedEvent

pytestmark = pytest.mark.postgres
NOW = datetime(2026, 1, 1, tzinfo=UTC)
G = GroupId("g")
SECRET = "pw-never-shown-4711"  # noqa: S105 (a made-up one, to be looked for)


def event(seq: int) -> RecordedEvent:
    body = f"body {seq}"
    return RecordedEvent(
        G,
        Seq(seq),
        EpisodeAdded(NOW, EpisodeUuid(f"ep-{seq}"), f"e{seq}", body, "text", "", NOW, None, None),
    )


def with_password(url: str) -> str:
    """The same database with a password in the URL (the server's trust auth ignores it)."""
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@")


def test_an_unreachable_server_is_a_storage_error_naming_the_host_never_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"postgresql://lcg:{SECRET}@127.0.0.1:1/nowhere"
    with pytest.raises(StorageFailure) as raised:
        PostgresLog(url, EventCodec(), connect_timeout=2)
    message = str(raised.value)
    assert "cannot open the log in postgresql://lcg@127.0.0.1:1/nowhere" in message
    assert SECRET not in message
    assert SECRET not in repr(raised.value.__cause__) + caplog.text


def test_the_description_of_a_url_drops_its_password() -> None:
    described = describe(f"postgresql://u:{SECRET}@db.example:6432/lcg?sslmode=require")
    assert described == "postgresql://u@db.example:6432/lcg"


def held_appends(admin: psycopg.Connection[tuple[object, ...]]) -> list[int]:
    """The server pids of appends waiting for the table lock."""
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        " AND query LIKE 'LOCK TABLE stored_events%%'"
    ).fetchall()
    return [int(str(row[0])) for row in rows]


def test_a_connection_killed_mid_append_loses_no_acked_event_and_refuses_the_unacked(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    log = PostgresLog(with_password(pg_url), EventCodec())
    try:
        log.append([event(1), event(2)])  # acked
        outcome: list[BaseException | None] = []
        with psycopg.connect(pg_url, autocommit=True) as admin:
            blocker = psycopg.connect(pg_url)
            blocker.execute("LOCK TABLE stored_events IN ACCESS EXCLUSIVE MODE")

            def append() -> None:
                try:
                    log.append([event(3)])
                    outcome.append(None)
                except BaseException as error:  # noqa: BLE001 (the test reads it below)
                    outcome.append(error)

            writer = threading.Thread(target=append)
            writer.start()
            pids: list[int] = []
            for _ in range(200):  # until the append waits inside its transaction
                pids = held_appends(admin)
                if pids:
                    break
                time.sleep(0.05)
            assert len(pids) == 1
            admin.execute("SELECT pg_terminate_backend(%s)", (pids[0],))
            writer.join(timeout=30)
            blocker.rollback()
            blocker.close()
        (error,) = outcome
        assert isinstance(error, StorageFailure)
        assert "cannot append to the log in postgresql://postgres@127.0.0.1" in str(error)
        assert SECRET not in str(error) + caplog.text
        assert log.head(G) == 2  # every acked event, nothing of the refused one
        log.append([event(3)])  # the next append works, on a new connection
        assert [r.seq for page in log.read(G) for r in page] == [1, 2, 3]
    finally:
        log.close()


def test_the_log_reopens_on_the_same_database_after_its_connections_were_killed(
    pg_url: str,
) -> None:
    log = PostgresLog(pg_url, EventCodec())
    log.append([event(1)])
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    log.append([event(2)])  # the pool checks each connection before handing it out
    assert log.head(G) == 2
    log.close()
