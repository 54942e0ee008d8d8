"""The canonization knobs' defaults and ranges (canonization.md §10), the fixed gate and Solo
constants (§3, §4), and the refusal of a bad promotion policy (field and rule)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization import (
    BLAST_RADIUS_BAR,
    COVERAGE_BAR,
    DISTINCT_INTERACTIONS_BAR,
    GC_SURVIVED_BAR,
    RESISTANCE,
    SCORE_PERCENTILE,
    SOLO_BANDS,
    SOLO_SESSION_GAP,
    Knobs,
    Policy,
    Status,
    parse_policy,
)
from lcg.domain.memory.text import ConceptType


def test_the_knobs_default_to_the_documented_values() -> None:
    knobs = Knobs()
    assert (
        knobs.promotion_policy,
        knobs.min_peer_count,
        knobs.edge_min_age,
        knobs.eval_interval,
        knobs.batch_size,
        knobs.repromotion_cooldown,
        knobs.max_canonical_nodes,
        knobs.supersede,
    ) == (
        Policy.SWARM,
        20,
        timedelta(seconds=60),
        timedelta(seconds=60),
        50,
        timedelta(seconds=300),
        1000,
        False,
    )


def test_the_fixed_gate_and_solo_constants_are_the_documented_ones() -> None:
    gates = (GC_SURVIVED_BAR, SCORE_PERCENTILE, DISTINCT_INTERACTIONS_BAR, COVERAGE_BAR)
    assert (*gates, BLAST_RADIUS_BAR) == (3, 0.9, 3, 0.3, 5)
    assert SOLO_BANDS == (
        (10.0, Status.CANONICAL),
        (6.0, Status.VENERABLE),
        (3.0, Status.CANDIDATE),
    )
    assert timedelta(hours=24) == SOLO_SESSION_GAP
    assert dict(RESISTANCE) == {
        ConceptType.CONSTRAINT: 1.5,
        ConceptType.ENTITY: 1.2,
        ConceptType.LOGIC: 1.1,
        ConceptType.RESOURCE: 1.0,
        ConceptType.OBSERVATION: 0.7,
    }


@pytest.mark.parametrize(
    ("changes", "message", "field"),
    [
        ({"batch_size": 0}, "batch_size must be at least 1", "batch_size"),
        (
            {"max_canonical_nodes": -1},
            "max_canonical_nodes must not be negative",
            "max_canonical_nodes",
        ),
        ({"edge_min_age": timedelta(seconds=-1)}, "durations must not be negative", "knobs"),
        (
            {"repromotion_cooldown": timedelta(seconds=-1)},
            "durations must not be negative",
            "knobs",
        ),
    ],
)
def test_a_knob_out_of_range_is_refused_naming_it(
    changes: dict[str, object], message: str, field: str
) -> None:
    with pytest.raises(DomainError) as refused:
        Knobs(**changes)  # type: ignore[arg-type]
    assert (str(refused.value), refused.value.field, refused.value.rule) == (
        message,
        field,
        "range",
    )


def test_the_least_values_in_range_are_accepted() -> None:
    knobs = Knobs(
        batch_size=1,
        max_canonical_nodes=0,
        edge_min_age=timedelta(0),
        repromotion_cooldown=timedelta(0),
    )
    assert (knobs.batch_size, knobs.max_canonical_nodes) == (1, 0)


def test_a_bad_promotion_policy_names_its_field_and_the_choices() -> None:
    with pytest.raises(DomainError) as refused:
        parse_policy("Hive")
    assert (refused.value.field, refused.value.rule) == ("promotion_policy", "Swarm | Solo")
