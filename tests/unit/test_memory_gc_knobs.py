"""Garbage collection's knobs and fixed constants as canonization.md §3, §8 and §10 state them:
defaults, the settable knobs' ranges and warning, the score's bonuses, modifiers and bars."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from lcg.domain.memory.gc import (
    EDGE_BONUS,
    EVICTION_RESISTANCE,
    MAX_EDGE_BONUS,
    MAX_SCORE,
    PROVENANCE_KINDS,
    STRUCTURAL_KINDS,
    TYPE_MODIFIER,
    EdgeKind,
    GcKnobs,
)
from lcg.domain.memory.text import ConceptType

C, E, L, R, OB = (
    ConceptType.CONSTRAINT,
    ConceptType.ENTITY,
    ConceptType.LOGIC,
    ConceptType.RESOURCE,
    ConceptType.OBSERVATION,
)


def test_oq_48_the_gc_knobs_default_to_the_documented_values() -> None:
    """OQ-48: 10,000 mutations, or 24 h with at least 100; a sweep collects max(32, 5 %)."""
    assert dataclasses.astuple(GcKnobs()) == (
        10_000,  # gc_interval
        timedelta(seconds=86_400),  # gc_max_interval
        100,  # gc_idle_floor
        0.12,  # min_concept_score
        frozenset({E, R}),  # score_cut_types
        timedelta(days=365),  # recency_window
        0.05,  # collect_fraction
        32,  # collect_floor
        500,  # bump_chunk
        10_000,  # advisory_ceiling
        timedelta(minutes=5),  # clock_skew
        1000,  # max_canonical_nodes
        timedelta(seconds=60),  # edge_min_age
        0.25,  # weight_recency
        0.20,  # weight_frequency
        0.20,  # weight_activity
        0.35,  # weight_density
    )


def test_the_score_constants_are_the_documented_ones() -> None:
    assert dict(EDGE_BONUS) == {
        EdgeKind.DEPENDS_ON: 0.02,
        EdgeKind.PRODUCES: 0.02,
        EdgeKind.MODIFIES: 0.02,
        EdgeKind.PARENT_OF: 0.015,
    }
    assert (MAX_EDGE_BONUS, MAX_SCORE) == (0.25, 1.40)
    assert dict(TYPE_MODIFIER) == {C: 0.15, E: 0.05, L: 0.05, R: 0.0, OB: -0.10}
    assert dict(EVICTION_RESISTANCE) == {C: 1.5, E: 1.2, L: 1.1, R: 1.0, OB: 0.7}


def test_oq_48_only_entities_and_resources_have_a_bar_of_0_12_over_their_resistance() -> None:
    knobs = GcKnobs()
    assert knobs.bar(E) == pytest.approx(0.10)
    assert knobs.bar(R) == pytest.approx(0.12)
    assert [knobs.bar(t) for t in (C, L, OB)] == [None, None, None]


def test_the_edge_kinds_have_the_stores_names_and_their_families() -> None:
    assert [k.value for k in EdgeKind] == [
        "precedes",
        "derives",
        "semantic",
        "depends_on",
        "parent_of",
        "produces",
        "modifies",
        "contradicts",
    ]
    assert {EdgeKind.DERIVES, EdgeKind.SEMANTIC} == PROVENANCE_KINDS
    assert {
        EdgeKind.DEPENDS_ON,
        EdgeKind.PARENT_OF,
        EdgeKind.PRODUCES,
        EdgeKind.MODIFIES,
    } == STRUCTURAL_KINDS


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"gc_interval": 0}, "gc_interval must be at least 1"),
        ({"gc_max_interval": timedelta(0)}, "gc_max_interval_secs must be more than 0"),
        ({"gc_idle_floor": -1}, "gc_idle_floor must be 0 or more"),
        ({"bump_chunk": 0}, "bump_chunk must be at least 1"),
    ],
)
def test_a_gc_knob_out_of_range_is_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        GcKnobs(**changes)  # type: ignore[arg-type]


def test_the_least_gc_knobs_in_range_are_accepted_and_a_floor_at_the_interval_warns() -> None:
    least = GcKnobs(
        gc_interval=1, gc_max_interval=timedelta(microseconds=1), gc_idle_floor=0, bump_chunk=1
    )
    assert least.warnings == ()
    assert GcKnobs(gc_interval=100, gc_idle_floor=99).warnings == ()
    assert GcKnobs(gc_interval=100, gc_idle_floor=100).warnings == (
        "gc_idle_floor 100 is not below gc_interval 100: the elapsed trigger can never fire first",
    )
