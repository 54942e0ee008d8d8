"""The cluster-wide lease in PostgreSQL (ADR 0075): tenures with a fencing epoch, taken over
after the holder stops renewing (the server's clock), and a stale holder's write refused.

Real processes hold the leases: a SIGKILLed holder, a SIGSTOPped one woken after takeover.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest

from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.faults import StorageFailure
from lcg.projections.wal.pg_lease import Fenced, Keeper, PgLease, fence
from lcg.projections.wal.postgres import PostgresLog
from lcg.projections.wal.store import RecordedEvent

pytestmark = pytest.mark.postgres
NOW = datetime(2026, 1, 1, tzinfo=UTC)
G = GroupId("g")

HOLDER = """
import sys, time
from lcg.projections.wal.pg_lease import Keeper, PgLease
keeper = Keeper(PgLease(sys.argv[1]), "applier", "child", float(sys.argv[2]),
                on_change=lambda epoch: print(f"epoch {epoch}", flush=True))
keeper.start()
time.sleep(600)
"""

STALE_WRITER = """
import sys
from datetime import UTC, datetime
from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.wal.pg_lease import Fenced, PgLease
from lcg.projections.wal.postgres import PostgresLog
from lcg.projections.wal.store import RecordedEvent
url, ttl = sys.argv[1], float(sys.argv[2])
epoch = PgLease(url).acquire("applier", "stale", ttl)
events = PostgresLog(url, EventCodec())
print(f"epoch {epoch}", flush=True)
sys.stdin.readline()  # paused here (SIGSTOP) until the test says write
now = datetime(2026, 1, 1, tzinfo=UTC)
event = EpisodeAdded(now, EpisodeUuid("ep-1"), "e1", "b", "text", "", now, None, None)
try:
    events.append([RecordedEvent(GroupId("g"), Seq(1), event)], fence=("applier", epoch))
except Fenced as refused:
    print(f"fenced: {refused}", flush=True)
else:
    print("stored", flush=True)
"""


def episode(n: int) -> EpisodeAdded:
    return EpisodeAdded(NOW, EpisodeUuid(f"ep-{n}"), f"e{n}", "b", "text", "", NOW, None, None)


@pytest.fixture
def leases(pg_url: str) -> Iterator[PgLease]:
    made = PgLease(pg_url)
    yield made
    made.close()


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def take_when_free(leases: PgLease, holder: str, ttl: float) -> int:
    """Ask until the lease is ours (the test's bound, not an assertion of speed)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        epoch = leases.acquire("applier", holder, ttl)
        if epoch is not None:
            return epoch
        time.sleep(0.05)
    raise AssertionError("the lease was never free")


def test_a_tenure_has_an_epoch_and_excludes_others_until_released(leases: PgLease) -> None:
    assert leases.acquire("applier", "a", 30) == 1
    assert leases.acquire("applier", "b", 30) is None
    assert leases.renew("applier", "a", 1, 30) is True
    assert leases.acquire("other", "b", 30) == 1  # leases are per name
    leases.release("applier", "a", 1)
    assert leases.acquire("applier", "b", 30) == 2
    assert leases.renew("applier", "a", 1, 30) is False  # a's tenure was taken over
    leases.release("applier", "a", 1)  # a stale release leaves b's tenure alone
    state = leases.state("applier")
    assert state is not None
    assert (state.holder, state.epoch, state.expired) == ("b", 2, False)


def test_bad_lease_arguments_name_the_field(leases: PgLease) -> None:
    with pytest.raises(ValueError, match="ttl: must be a number of seconds above 0"):
        leases.acquire("applier", "a", 0)
    with pytest.raises(ValueError, match="holder: a lease needs a holder"):
        leases.acquire("applier", "", 5)
    with pytest.raises(ValueError, match="name: a lease needs a name"):
        leases.renew("", "a", 1, 5)
    assert leases.state("applier") is None


def test_an_unreachable_server_is_the_storage_error_without_the_password() -> None:
    with pytest.raises(
        StorageFailure, match=re.escape("postgresql://nobody@127.0.0.1:1/x")
    ) as raised:
        PgLease("postgresql://nobody:s3cret@127.0.0.1:1/x", connect_timeout=1)
    assert "s3cret" not in str(raised.value)


def test_a_holder_sigkilled_is_taken_over_after_its_expiry_with_the_next_epoch(
    pg_url: str, leases: PgLease
) -> None:
    child = spawn(HOLDER, pg_url, "2")
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "epoch 1"
        assert leases.acquire("applier", "parent", 2) is None  # renewed: held
        child.send_signal(signal.SIGKILL)
        child.wait()
        held = leases.state("applier")
        assert held is not None
        assert held.holder == "child"
        epoch = take_when_free(leases, "parent", 2)
    finally:
        child.kill()
        child.wait()
    assert epoch == 2
    taken = leases.state("applier")
    assert taken is not None
    assert taken.holder == "parent"
    # taken over no earlier than the dead holder's tenure ran out, by the server's clock
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT %s::timestamptz - make_interval(secs => 2) >= %s::timestamptz",
            (taken.expires_at, held.expires_at),
        ).fetchone()
    assert row is not None
    assert row[0] is True


def test_a_paused_holder_woken_after_takeover_has_its_fenced_write_refused(
    pg_url: str, leases: PgLease
) -> None:
    child = spawn(STALE_WRITER, pg_url, "1")
    try:
        assert child.stdout is not None
        assert child.stdin is not None
        assert child.stdout.readline().strip() == "epoch 1"
        child.send_signal(signal.SIGSTOP)
        assert take_when_free(leases, "successor", 30) == 2
        child.send_signal(signal.SIGCONT)
        child.stdin.write("write\n")
        child.stdin.flush()
        answer = child.stdout.readline().strip()
        child.wait(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert answer.startswith("fenced: the lease 'applier' was taken over")
    assert "epoch is 1, it is at epoch 2" in answer
    events = PostgresLog(pg_url, EventCodec())
    try:
        assert events.head(G) == 0  # nothing of the stale write was stored
        events.append([RecordedEvent(G, Seq(1), episode(1))], fence=("applier", 2))
        assert events.head(G) == 1  # the current holder's write is taken
    finally:
        events.close()


def test_a_takeover_waits_for_a_fenced_write_in_flight(pg_url: str, leases: PgLease) -> None:
    assert leases.acquire("applier", "old", 30) == 1
    with psycopg.connect(pg_url) as writer:
        fence(writer, "applier", 1)  # the write's transaction holds the row shared
        with psycopg.connect(pg_url, autocommit=True) as other:
            other.execute("SET lock_timeout = '300ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):  # a takeover must wait
                other.execute("UPDATE lcg_leases SET expires_at = now() WHERE name = 'applier'")
        writer.commit()
    with psycopg.connect(pg_url) as writer:
        leases.release("applier", "old", 1)
        assert leases.acquire("applier", "new", 30) == 2
        with pytest.raises(Fenced, match="epoch is 1, it is at epoch 2"):
            fence(writer, "applier", 1)


def test_a_keeper_renews_and_releases(leases: PgLease) -> None:
    changes: list[int | None] = []
    keeper = Keeper(leases, "applier", "k", 3, on_change=changes.append)
    keeper.start()
    try:
        deadline = time.monotonic() + 30
        while keeper.epoch is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert keeper.epoch == 1
        time.sleep(3.5)  # beyond its ttl: only renewals keep it
        assert leases.acquire("applier", "other", 5) is None
    finally:
        keeper.stop()
    assert changes == [1, None]
    assert leases.acquire("applier", "other", 5) == 2
