"""Survivor bumps (canonization.md §8, M-CAN-043): `gc_survived` saturates at upstream's i32
maximum, and the drain order is the ids rotated by splitmix64 of the pre-sweep epoch."""

from __future__ import annotations

from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc import GC_SURVIVED_MAX, bumped, survivor_drain_order
from lcg.domain.memory.gc.bumps import _splitmix64


def test_gc_survived_saturates_at_the_signed_32_bit_maximum() -> None:
    assert GC_SURVIVED_MAX == 2_147_483_647
    assert bumped(2_147_483_646) == 2_147_483_647
    assert bumped(2_147_483_647) == 2_147_483_647
    assert bumped(0) == 1
    assert bumped(-3) == 1


def test_the_rotation_is_splitmix64_the_reference_outputs() -> None:
    # the first outputs of the reference splitmix64 seeded with 0 (Vigna's splitmix64.c)
    assert _splitmix64(0) == 0xE220A8397B1DCDAF
    assert _splitmix64(0x9E3779B97F4A7C15) == 0x6E789E6AA1B965F4
    assert _splitmix64(0x3C6EF372FE94F82A) == 0x06C45D188009454F
    assert _splitmix64(2**64 + 5) == _splitmix64(5)  # the seed is taken modulo 2^64


def test_survivors_drain_in_id_order_rotated_by_the_epochs_offset() -> None:
    ids = [ConceptId(f"{n:08x}-0000-4000-8000-000000000000") for n in range(1, 4)]
    # offsets: splitmix64(0) % 3 == 1, splitmix64(3) % 3 == 0, splitmix64(1) % 3 == 2
    assert survivor_drain_order(list(reversed(ids)), 0) == [ids[1], ids[2], ids[0]]
    assert survivor_drain_order(ids, 3) == ids
    assert survivor_drain_order(ids, 1) == [ids[2], ids[0], ids[1]]
    # two survivors rotate too (splitmix64(0) is odd)
    assert survivor_drain_order(ids[:2], 0) == [ids[1], ids[0]]
    assert survivor_drain_order(ids[:1], 0) == ids[:1]
