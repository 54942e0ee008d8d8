"""lambo_reserve's soft locks (M-RES, M-ARG-051/061/062): reserve, renew, release, conflict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from lcg.domain.errors import Conflict, DomainError, InvalidParams
from lcg.domain.memory.locks import (
    DEFAULT_TTL_SECONDS,
    LockHeld,
    Reservation,
    SoftLocks,
    release_content,
    release_text,
    reservation_content,
    reservation_text,
    rfc3339,
)

T0 = datetime(2026, 8, 15, 12, 0, 0, tzinfo=UTC)
NODE = "478416c2-0000-0000-0000-000000000000"
OTHER_NODE = "9a1b2c3d-0000-0000-0000-000000000000"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_m_arg_051_m_res_008_a_reservation_is_held_under_the_callers_agent_id() -> None:
    locks = SoftLocks()
    reservation = locks.reserve("agent-a", NODE, 60, T0)
    assert reservation == Reservation(NODE, "agent-a", at(60))
    assert locks.holder(NODE, now=at(1)) == reservation


def test_m_res_004_ttl_defaults_to_30_seconds() -> None:
    reservation = SoftLocks().reserve("agent-a", NODE, None, T0)
    assert DEFAULT_TTL_SECONDS == 30
    assert reservation.expires_at == at(30)


@pytest.mark.parametrize("ttl", [1, 3600])
def test_m_res_004_ttl_bounds_are_accepted(ttl: int) -> None:
    assert SoftLocks().reserve("agent-a", NODE, ttl, T0).expires_at == at(ttl)


@pytest.mark.parametrize("ttl", [0, -1, 3601, True])
def test_m_res_004_ttl_outside_1_to_3600_is_refused_naming_the_field_and_bound(ttl: int) -> None:
    locks = SoftLocks()
    with pytest.raises(InvalidParams) as refused:
        locks.reserve("agent-a", NODE, ttl, T0)
    assert refused.value.field == "ttl_seconds"
    assert "must be in 1..=3600" in refused.value.message
    assert locks.holder(NODE, now=T0) is None


def test_m_res_009_a_reservation_expires_after_its_ttl_and_vanishes() -> None:
    locks = SoftLocks()
    locks.reserve("agent-a", NODE, 10, T0)
    assert locks.holder(NODE, now=at(9.999)) is not None
    assert locks.holder(NODE, now=at(10)) is None
    assert locks.held(now=at(10)) == ()


def test_m_res_009_an_expired_lock_no_longer_blocks_another_agent() -> None:
    locks = SoftLocks()
    locks.reserve("agent-a", NODE, 10, T0)
    taken = locks.reserve("agent-b", NODE, 10, at(10))
    assert taken.agent_id == "agent-b"


def test_m_res_010_m_arg_062_reserving_a_node_another_agent_holds_names_holder_and_expiry() -> None:
    locks = SoftLocks()
    locks.reserve("agent-a", NODE, 60, T0)
    with pytest.raises(LockHeld) as refused:
        locks.reserve("agent-b", NODE, 30, at(5))
    assert refused.value.message == (
        f'conflict: node {NODE} is reserved by agent_id "agent-a" until 2026-08-15T12:01:00Z;'
        " nothing was reserved or released"
    )
    assert refused.value.held == Reservation(NODE, "agent-a", at(60))
    assert refused.value.field == "node_id"


def test_m_res_010_a_refused_reservation_changes_nothing() -> None:
    locks = SoftLocks()
    first = locks.reserve("agent-a", NODE, 60, T0)
    with pytest.raises(LockHeld):
        locks.reserve("agent-b", NODE, 3600, at(5))
    assert locks.holder(NODE, now=at(5)) == first
    assert locks.holder(NODE, now=at(60)) is None


def test_m_err_019_lock_held_is_a_conflict_domain_error() -> None:
    error = LockHeld(Reservation(NODE, "agent-a", T0))
    assert isinstance(error, Conflict)
    assert isinstance(error, DomainError)


def test_m_res_011_releasing_a_node_another_agent_holds_fails_and_releases_nothing() -> None:
    locks = SoftLocks()
    held = locks.reserve("agent-a", NODE, 60, T0)
    with pytest.raises(LockHeld) as refused:
        locks.release("agent-b", NODE, at(1))
    assert "nothing was reserved or released" in refused.value.message
    assert '"agent-a"' in refused.value.message
    assert locks.holder(NODE, now=at(1)) == held


def test_m_res_012_m_arg_061_callers_sending_the_same_agent_id_share_one_lock() -> None:
    locks = SoftLocks()
    locks.reserve("agent-a", NODE, 60, T0)
    # A second client sending the same id is the same holder: it renews, not conflicts...
    again = locks.reserve("agent-a", NODE, 60, at(10))
    assert again.expires_at == at(70)
    # ...and can release what the first one reserved.
    assert locks.release("agent-a", NODE, at(11)) == again
    assert locks.holder(NODE, now=at(11)) is None


def test_m_arg_062_distinct_agent_ids_contend_per_node_not_per_session() -> None:
    locks = SoftLocks()
    locks.reserve("agent-a", NODE, 60, T0)
    other = locks.reserve("agent-b", OTHER_NODE, 60, T0)
    assert locks.held(now=at(1)) == (locks.holder(NODE, now=at(1)), other)


def test_reserving_again_renews_the_lock_from_now_even_when_shorter() -> None:
    locks = SoftLocks()
    locks.reserve("agent-a", NODE, 600, T0)
    renewed = locks.reserve("agent-a", NODE, 5, at(10))
    assert renewed.expires_at == at(15)
    assert locks.holder(NODE, now=at(15)) is None


def test_a_renewed_lock_outlives_its_first_expiry() -> None:
    locks = SoftLocks()
    locks.reserve("agent-a", NODE, 10, T0)
    locks.reserve("agent-a", NODE, 60, at(5))
    assert locks.holder(NODE, now=at(10)) == Reservation(NODE, "agent-a", at(65))
    with pytest.raises(LockHeld):
        locks.reserve("agent-b", NODE, 10, at(30))


def test_oq_46_releasing_a_node_nobody_holds_releases_nothing_and_is_not_an_error() -> None:
    locks = SoftLocks()
    assert locks.release("agent-a", NODE, T0) is None
    locks.reserve("agent-b", NODE, 10, T0)
    assert locks.release("agent-a", NODE, at(10)) is None  # agent-b's lock expired


def test_a_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        SoftLocks().reserve("agent-a", NODE, 10, datetime(2026, 8, 15, 12, 0, 0))


def test_a_non_utc_now_is_read_as_the_same_instant() -> None:
    plus_two = timezone(timedelta(hours=2))
    reservation = SoftLocks().reserve("agent-a", NODE, 30, T0.astimezone(plus_two))
    assert reservation.expires_at == at(30)
    assert reservation.expires_at.tzinfo is UTC


def test_the_expiry_is_shown_to_the_second_and_never_before_the_lock_ends() -> None:
    assert rfc3339(T0) == "2026-08-15T12:00:00Z"
    assert rfc3339(at(0.2)) == "2026-08-15T12:00:01Z"


def test_oq_21_reservation_result_text_and_structured_content() -> None:
    reservation = SoftLocks().reserve("agent-a", NODE, 60, T0)
    assert reservation_text(reservation) == (
        f'reserved node {NODE} under agent_id "agent-a" until 2026-08-15T12:01:00Z;'
        " advisory and in memory only: it blocks no write, and a server restart forgets it"
    )
    assert reservation_content(reservation) == {
        "node_id": NODE,
        "agent_id": "agent-a",
        "expires_at": "2026-08-15T12:01:00Z",
        "reserved": True,
    }


def test_oq_21_release_result_text_and_structured_content() -> None:
    locks = SoftLocks()
    locks.reserve("agent-a", NODE, 60, T0)
    released = locks.release("agent-a", NODE, at(1))
    assert release_text(NODE, released) == (
        f'released node {NODE} (it was reserved under agent_id "agent-a")'
    )
    assert release_content("agent-a", NODE, released) == {
        "node_id": NODE,
        "agent_id": "agent-a",
        "released": True,
    }
    assert release_text(NODE, None) == f"node {NODE} was not reserved; nothing was released"
    assert release_content("agent-a", NODE, None)["released"] is False


def test_many_expired_locks_are_swept_without_being_asked_about() -> None:
    locks = SoftLocks()
    for index in range(100):
        locks.reserve("agent-a", f"node-{index}", 1, T0)
    locks.reserve("agent-a", NODE, 60, at(2))
    assert [r.node_id for r in locks.held(now=at(2))] == [NODE]
