"""Soft locks for lambo_reserve: advisory, per session, held in memory under the caller's agent_id.

Time arrives as a value: every call takes ``now``, a timezone-aware UTC ``datetime`` that the
shell reads from its clock (a ``Clock``) once per call. A wall-clock time rather than a
monotonic float because the expiry is shown to agents as an RFC 3339 UTC time; a clock that
steps backwards only makes a lock last longer, never shorter.

One ``SoftLocks`` serves one session (M-RES-007: a layer has its own). Nothing here checks that
the node exists or resolves a short id (OQ-46): the shell resolves ``node_id`` first and keys
the lock by the full id it found.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, TypedDict

from lcg.domain.errors import Conflict, InvalidParams

Clock = Callable[[], datetime]
"""What the shell reads ``now`` from: returns a timezone-aware UTC datetime."""

MIN_TTL_SECONDS: Final = 1
MAX_TTL_SECONDS: Final = 3600
DEFAULT_TTL_SECONDS: Final = 30


def rfc3339(moment: datetime) -> str:
    """``moment`` as RFC 3339 UTC with a ``Z``, to the second (sub-seconds rounded up).

    Rounded up so the time an agent reads is never before the lock really ends: waiting until
    the shown expiry always finds the node free.
    """
    moment = require_utc(moment, "moment")
    if moment.microsecond:
        moment = moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def require_utc(moment: datetime, name: str = "now") -> datetime:
    """``moment`` converted to UTC; a naive datetime is a programming error, not a user's."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got a naive one")
    return moment.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Reservation:
    """A soft lock on one node: who holds it and until when (the lock ends at ``expires_at``)."""

    node_id: str
    agent_id: str
    expires_at: datetime

    def held_at(self, now: datetime) -> bool:
        return require_utc(now) < self.expires_at


class LockHeld(Conflict):
    """Reserving or releasing a node another agent_id holds (M-RES-010, M-RES-011)."""

    def __init__(self, held: Reservation) -> None:
        super().__init__(
            f'conflict: node {held.node_id} is reserved by agent_id "{held.agent_id}" until'
            f" {rfc3339(held.expires_at)}; nothing was reserved or released",
            field="node_id",
            rule="reserved by another agent_id",
        )
        self.held = held


def check_ttl_seconds(value: int | None) -> int:
    """A lock's time to live: an integer in 1..=3600, 30 when not given (M-RES-004)."""
    if value is None:
        return DEFAULT_TTL_SECONDS
    if isinstance(value, bool) or not MIN_TTL_SECONDS <= value <= MAX_TTL_SECONDS:
        raise InvalidParams(
            "ttl_seconds", f"must be in {MIN_TTL_SECONDS}..={MAX_TTL_SECONDS}", f"got {value}"
        )
    return value


class SoftLocks:
    """The soft locks of one session; expired locks vanish lazily, on the next call that looks."""

    def __init__(self) -> None:
        self._held: dict[str, Reservation] = {}
        # Expiry order for the lazy sweep; an entry superseded by a renewal is skipped when
        # popped, so a renewal costs one push and no search.
        self._expiries: list[tuple[datetime, str]] = []

    def reserve(
        self,
        agent_id: str,
        node_id: str,
        ttl_seconds: int | None,
        now: datetime,
    ) -> Reservation:
        """Hold ``node_id`` under ``agent_id`` until ``now + ttl_seconds`` (None: 30 s).

        The holder reserving again (the same agent_id, whichever caller sends it) renews the
        lock to ``now + ttl_seconds``: the new TTL counts from now, so it can also shorten it.
        Raises ``LockHeld`` while another agent_id holds the node, and changes nothing.
        """
        ttl = check_ttl_seconds(ttl_seconds)
        now = self._sweep(now)
        current = self._held.get(node_id)
        if current is not None and current.agent_id != agent_id:
            raise LockHeld(current)
        reservation = Reservation(node_id, agent_id, now + timedelta(seconds=ttl))
        self._held[node_id] = reservation
        heapq.heappush(self._expiries, (reservation.expires_at, node_id))
        return reservation

    def release(self, agent_id: str, node_id: str, now: datetime) -> Reservation | None:
        """Release ``node_id``; returns the lock released, or None when nobody held it.

        Releasing a node nobody holds (never reserved, already released, or expired) succeeds
        and releases nothing (OQ-46): the caller's wish, the node being free, already holds.
        Raises ``LockHeld`` while another agent_id holds the node, and changes nothing.
        """
        self._sweep(now)
        current = self._held.get(node_id)
        if current is None:
            return None
        if current.agent_id != agent_id:
            raise LockHeld(current)
        del self._held[node_id]
        return current

    def holder(self, node_id: str, *, now: datetime) -> Reservation | None:
        """The live lock on ``node_id``, if any."""
        self._sweep(now)
        return self._held.get(node_id)

    def held(self, *, now: datetime) -> tuple[Reservation, ...]:
        """Every live lock of the session, by node id."""
        self._sweep(now)
        return tuple(self._held[node_id] for node_id in sorted(self._held))

    def _sweep(self, now: datetime) -> datetime:
        now = require_utc(now)
        while self._expiries and self._expiries[0][0] <= now:
            expires_at, node_id = heapq.heappop(self._expiries)
            current = self._held.get(node_id)
            if current is not None and current.expires_at == expires_at:
                del self._held[node_id]
        return now


class ReservationContent(TypedDict):
    """lambo_reserve's structuredContent after a reservation."""

    node_id: str
    agent_id: str
    expires_at: str
    reserved: bool


class ReleaseContent(TypedDict):
    """lambo_reserve's structuredContent after ``release: true``."""

    node_id: str
    agent_id: str
    released: bool


def reservation_text(reservation: Reservation) -> str:
    """The result text of a reservation (the document gives none, OQ-21: chosen here)."""
    return (
        f'reserved node {reservation.node_id} under agent_id "{reservation.agent_id}" until'
        f" {rfc3339(reservation.expires_at)}; advisory and in memory only:"
        " it blocks no write, and a server restart forgets it"
    )


def reservation_content(reservation: Reservation) -> ReservationContent:
    return {
        "node_id": reservation.node_id,
        "agent_id": reservation.agent_id,
        "expires_at": rfc3339(reservation.expires_at),
        "reserved": True,
    }


def release_text(node_id: str, released: Reservation | None) -> str:
    """The result text of ``release: true`` (the document gives none, OQ-21: chosen here)."""
    if released is None:
        return f"node {node_id} was not reserved; nothing was released"
    return f'released node {node_id} (it was reserved under agent_id "{released.agent_id}")'


def release_content(agent_id: str, node_id: str, released: Reservation | None) -> ReleaseContent:
    return {"node_id": node_id, "agent_id": agent_id, "released": released is not None}
