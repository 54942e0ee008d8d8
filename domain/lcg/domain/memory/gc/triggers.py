"""When a sweep is due: the mutation and elapsed triggers, and the GC clock's anchor."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from lcg.domain.memory.gc.knobs import GcKnobs


class Trigger(StrEnum):
    """Why a sweep ran: its wire name in lambo_stats' `gc.last_sweep.trigger`."""

    MUTATIONS = "mutations"
    ELAPSED = "elapsed"


def anchor_gc_clock(last_gc_at: datetime | None, now: datetime, knobs: GcKnobs) -> datetime | None:
    """The `last_gc_at` to persist before checking triggers, or None when it stands.

    An unset clock starts at the first daemon cycle; one more than `clock_skew` in the future
    (a wall-clock jump) is re-anchored at now. The mutation count is not touched.
    """
    check_aware(now)
    if last_gc_at is None or last_gc_at - now > knobs.clock_skew:
        return now
    return None


def should_sweep(
    mutations_since: int,
    last_gc_at: datetime | None,
    now: datetime,
    knobs: GcKnobs,
    *,
    bumps_pending: int = 0,
) -> Trigger | None:
    """Whether a sweep is due, and why.

    `mutations_since` is `epoch - last_gc_epoch` (GC's own writes excluded). The mutation
    trigger needs no clock; the elapsed one needs `gc_idle_floor` mutations and a clock that
    has started, and measures from one stored instant, so a long outage still gives one sweep.
    Nothing is due while the last sweep's survivor bumps are still draining.
    """
    check_aware(now)
    if bumps_pending > 0:
        return None
    since = max(0, mutations_since)
    if since >= knobs.gc_interval:
        return Trigger.MUTATIONS
    if since < knobs.gc_idle_floor or last_gc_at is None:
        return None
    if now - last_gc_at >= knobs.gc_max_interval:
        return Trigger.ELAPSED
    return None


def check_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")
