"""When a sweep is due (canonization.md §8): no mutation is no mutation whatever the knobs, a
count that went backwards is none, and a naive clock is refused by name."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from lcg.domain.memory.gc import GcKnobs, Trigger, should_sweep
from tests.unit.test_memory_gc import NOW


def test_no_mutation_since_the_last_sweep_is_never_a_mutation_trigger() -> None:
    eager = GcKnobs(gc_interval=1, gc_idle_floor=0)
    assert should_sweep(0, None, NOW, eager) is None
    assert should_sweep(-3, None, NOW, eager) is None
    assert should_sweep(1, None, NOW, eager) is Trigger.MUTATIONS


def test_a_count_that_went_backwards_does_not_reach_the_idle_floor() -> None:
    knobs = GcKnobs(gc_idle_floor=1)
    long_ago = NOW - timedelta(days=2)
    assert should_sweep(-5, long_ago, NOW, knobs) is None
    assert should_sweep(1, long_ago, NOW, knobs) is Trigger.ELAPSED


def test_a_naive_now_is_refused_with_its_message() -> None:
    with pytest.raises(ValueError, match=r"^now must be a timezone-aware datetime$"):
        should_sweep(0, None, datetime(2026, 1, 1), GcKnobs())
