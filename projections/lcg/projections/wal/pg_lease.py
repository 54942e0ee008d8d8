"""A cluster-wide lease in PostgreSQL, with a fencing epoch (issue 28 item 2, ADR 0075).

What must run once across every node on one store (a session's memory intent applier,
canonization cycles, GC sweeps) runs under a lease named for it: one row of `lcg_leases`
(`name` primary key, `holder`, `epoch`, `expires_at`). Time is the server's (`now()`), never
a node's clock. `acquire` succeeds when the lease is free, released or expired, and every
success is a new tenure with the next epoch; `renew` extends the holder's own tenure while
nobody has taken it over; `release` lets it go at once. A holder that stops renewing (paused,
SIGKILLed, cut off) loses it to the next `acquire` after its expiry.

Fencing: a holder can be paused past its expiry and wake believing it still holds the lease.
Whatever it writes under the lease goes through `fence(conn, name, epoch)` inside the write's
own transaction: the row is read `FOR SHARE`, so a takeover (an UPDATE of that row) waits for
the write's commit and the write waits for a takeover's, and the write is refused (`Fenced`)
when the epoch has moved on. An expired lease nobody took over still fences on its epoch
alone: no other holder exists, so the write is safe.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from lcg.projections.faults import Fenced, StorageFailure
from lcg.projections.wal import postgres  # a module import: postgres imports this one

CREATE = (
    "CREATE TABLE IF NOT EXISTS lcg_leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL,"
    " epoch BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)"
)
_SCHEMA_LOCK = 0x6C6368  # an advisory lock: two processes creating the table take turns
_ACQUIRE = (
    "INSERT INTO lcg_leases AS l (name, holder, epoch, expires_at)"
    " VALUES (%(name)s, %(holder)s, 1, now() + make_interval(secs => %(ttl)s))"
    " ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, epoch = l.epoch + 1,"
    " expires_at = EXCLUDED.expires_at WHERE l.expires_at <= now()"
    " RETURNING epoch"
)
_RENEW = (
    "UPDATE lcg_leases SET expires_at = now() + make_interval(secs => %(ttl)s)"
    " WHERE name = %(name)s AND holder = %(holder)s AND epoch = %(epoch)s RETURNING epoch"
)
_RELEASE = (
    "UPDATE lcg_leases SET expires_at = now() WHERE name = %(name)s AND holder = %(holder)s"
    " AND epoch = %(epoch)s"
)
_FENCE = "SELECT epoch FROM lcg_leases WHERE name = %s FOR SHARE"
__all__ = ["Fenced", "Keeper", "LeaseState", "PgLease", "fence"]


@dataclass(frozen=True, slots=True)
class LeaseState:
    """A lease as the server holds it."""

    name: str
    holder: str
    epoch: int
    expires_at: datetime
    expired: bool


def fence(conn: psycopg.Connection[Any], name: str, epoch: int) -> None:
    """Inside the caller's transaction: refuse (`Fenced`) unless the lease is still at
    `epoch`; the row stays share-locked until the transaction ends, so no takeover commits
    in between."""
    row = conn.execute(_FENCE, (name,)).fetchone()
    current = None if row is None else int(row[0])
    if current != epoch:
        raise Fenced(name, epoch, current)


class PgLease:
    """The leases of one PostgreSQL database, through one connection of their own."""

    def __init__(self, url: str, *, connect_timeout: float = 5.0) -> None:
        self._url = url
        self._where = postgres.describe(url)
        try:
            secret = conninfo_to_dict(url).get("password")
        except psycopg.Error:
            secret = None
        self._secret = str(secret) if secret else None
        self._timeout = max(1, round(connect_timeout))
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()  # one statement at a time on the connection
        self._run("create the leases in", _install)

    @property
    def where(self) -> str:
        return self._where

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, action: str, work: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        """Run on the connection (made again after a failure); a failure is the storage
        error, naming the store and never its password."""
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(
                        self._url, autocommit=True, connect_timeout=self._timeout
                    )
                return work(self._conn)
            except (psycopg.OperationalError, psycopg.InterfaceError) as error:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                reason = f"{type(error).__name__}: {error}"
                if self._secret:
                    reason = reason.replace(self._secret, "***")
                raise StorageFailure(self._where, action, reason) from None

    def acquire(self, name: str, holder: str, ttl: float) -> int | None:
        """Take the lease for `ttl` seconds if it is free, released or expired: the new
        tenure's fencing epoch; None while another holder's tenure runs."""
        _check(name, holder, ttl)
        params = {"name": name, "holder": holder, "ttl": float(ttl)}
        row = self._run("take a lease in", lambda c: c.execute(_ACQUIRE, params).fetchone())
        return None if row is None else int(row[0])

    def renew(self, name: str, holder: str, epoch: int, ttl: float) -> bool:
        """Extend this tenure to `ttl` seconds from now; False when it was taken over."""
        _check(name, holder, ttl)
        params = {"name": name, "holder": holder, "epoch": epoch, "ttl": float(ttl)}
        row = self._run("renew a lease in", lambda c: c.execute(_RENEW, params).fetchone())
        return row is not None

    def release(self, name: str, holder: str, epoch: int) -> None:
        """End this tenure now (the next `acquire` takes it with the next epoch); a tenure
        already taken over is left alone."""
        params = {"name": name, "holder": holder, "epoch": epoch}
        self._run("release a lease in", lambda c: c.execute(_RELEASE, params))

    def state(self, name: str) -> LeaseState | None:
        """The lease as the server holds it; None if it was never taken."""
        row = self._run(
            "read a lease in",
            lambda c: c.execute(
                "SELECT name, holder, epoch, expires_at, expires_at <= now() FROM lcg_leases"
                " WHERE name = %s",
                (name,),
            ).fetchone(),
        )
        if row is None:
            return None
        return LeaseState(str(row[0]), str(row[1]), int(row[2]), row[3], bool(row[4]))


def _install(conn: psycopg.Connection[Any]) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        conn.execute(CREATE)


def _check(name: str, holder: str, ttl: float) -> None:
    if not name:
        raise ValueError("name: a lease needs a name (got an empty string)")
    if not holder:
        raise ValueError("holder: a lease needs a holder (got an empty string)")
    if not ttl > 0:
        raise ValueError(f"ttl: must be a number of seconds above 0 (got {ttl!r})")


class Keeper:
    """Holds a lease for a holder: takes it when it can and renews it every third of its
    ttl on a thread of its own. `epoch` is the tenure's fencing epoch (None while not held);
    `on_change` is called with the new epoch (or None when the tenure was lost)."""

    def __init__(
        self,
        leases: PgLease,
        name: str,
        holder: str,
        ttl: float,
        on_change: Callable[[int | None], None] | None = None,
    ) -> None:
        _check(name, holder, ttl)
        self.leases = leases
        self.name = name
        self.holder = holder
        self.ttl = ttl
        self.epoch: int | None = None
        self.failure: str | None = None  # the last storage error, until a call succeeds
        self._on_change = on_change
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lcg-lease-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing and release the tenure held (if the server can be reached)."""
        self._stop.set()
        self._thread.join()
        if self.epoch is not None:
            with contextlib.suppress(StorageFailure):  # unreachable: it expires by itself
                self.leases.release(self.name, self.holder, self.epoch)
            self._set(None)

    def _set(self, epoch: int | None) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            if self._on_change is not None:
                self._on_change(epoch)

    def _step(self) -> None:
        try:
            if self.epoch is not None and self.leases.renew(
                self.name, self.holder, self.epoch, self.ttl
            ):
                self.failure = None
                return
            self._set(self.leases.acquire(self.name, self.holder, self.ttl))
            self.failure = None
        except StorageFailure as failure:
            self.failure = str(failure)  # the tenure may run out meanwhile: writes are fenced

    def _run(self) -> None:
        while not self._stop.is_set():
            self._step()
            self._stop.wait(self.ttl / 3)
