"""Survivor bumps: `gc_survived` after a sweep, drained in chunks in a rotating order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc.knobs import GcKnobs

GC_SURVIVED_MAX: Final = 2**31 - 1
"""`gc_survived` saturates here (upstream's i32)."""


_U64: Final = 2**64 - 1


def _splitmix64(seed: int) -> int:
    z = (seed + 0x9E37_79B9_7F4A_7C15) & _U64
    z = ((z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9) & _U64
    z = ((z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB) & _U64
    return z ^ (z >> 31)


def survivor_drain_order(survivors: Sequence[ConceptId], epoch: int) -> list[ConceptId]:
    """Survivors in id order, rotated by an offset mixed from the pre-sweep epoch, so the bumps
    a restart loses (pending bumps live in memory) are not always the same ids'."""
    order = sorted(survivors)
    if len(order) > 1:
        offset = _splitmix64(epoch & _U64) % len(order)
        order = order[offset:] + order[:offset]
    return order


def drain_bumps(
    pending: Sequence[ConceptId], knobs: GcKnobs
) -> tuple[tuple[ConceptId, ...], tuple[ConceptId, ...]]:
    """One tick's drain: the bumps to apply now (at most `bump_chunk`) and those still pending."""
    return tuple(pending[: knobs.bump_chunk]), tuple(pending[knobs.bump_chunk :])


def bumped(gc_survived: int) -> int:
    """`gc_survived` after one more survived sweep, saturating."""
    return min(GC_SURVIVED_MAX, max(0, gc_survived) + 1)
