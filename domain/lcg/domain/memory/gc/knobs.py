"""Garbage collection's knobs and fixed constants: edge kinds, score weights and bars (§10)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Final

from lcg.domain.memory.canonization.ladder import Status
from lcg.domain.memory.evidence import EDGE_MIN_AGE
from lcg.domain.memory.text import ConceptType

CanonizationStatus = Status  # one ladder: lcg.domain.memory.canonization


class EdgeKind(StrEnum):
    """The memory store's edge kinds (memory_edges.kind)."""

    PRECEDES = "precedes"
    DERIVES = "derives"
    SEMANTIC = "semantic"
    DEPENDS_ON = "depends_on"
    PARENT_OF = "parent_of"
    PRODUCES = "produces"
    MODIFIES = "modifies"
    CONTRADICTS = "contradicts"


PROVENANCE_KINDS: Final = frozenset({EdgeKind.DERIVES, EdgeKind.SEMANTIC})
"""An interaction's edge to a concept it wrote (a semantic merge is a derivation too)."""

STRUCTURAL_KINDS: Final = frozenset(
    {EdgeKind.DEPENDS_ON, EdgeKind.PARENT_OF, EdgeKind.PRODUCES, EdgeKind.MODIFIES}
)
"""Upstream's Dependency, Hierarchical and Causal edges: concept to concept."""

EDGE_BONUS: Final[Mapping[EdgeKind, float]] = {
    EdgeKind.DEPENDS_ON: 0.02,
    EdgeKind.PRODUCES: 0.02,
    EdgeKind.MODIFIES: 0.02,
    EdgeKind.PARENT_OF: 0.015,
}
"""The score's per-edge bonus (upstream: Dependency and Causal 0.02, Hierarchical 0.015;
provenance and temporal edges 0). This store writes no CoOccurrence or weighted Semantic edges."""

MAX_EDGE_BONUS: Final = 0.25
MAX_SCORE: Final = 1.40

TYPE_MODIFIER: Final[Mapping[ConceptType, float]] = {
    ConceptType.CONSTRAINT: 0.15,
    ConceptType.ENTITY: 0.05,
    ConceptType.LOGIC: 0.05,
    ConceptType.RESOURCE: 0.0,
    ConceptType.OBSERVATION: -0.10,
}

EVICTION_RESISTANCE: Final[Mapping[ConceptType, float]] = {
    ConceptType.CONSTRAINT: 1.5,
    ConceptType.ENTITY: 1.2,
    ConceptType.LOGIC: 1.1,
    ConceptType.RESOURCE: 1.0,
    ConceptType.OBSERVATION: 0.7,
}
"""A type's bar is `min_concept_score / resistance`: Entity 0.10, Resource 0.12."""


# --- knobs ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GcKnobs:
    """Every knob garbage collection reads (canonization.md §10), with upstream's defaults.

    Only `gc_interval`, `gc_max_interval` and `gc_idle_floor` are settable (`[daemon]` in the
    settings file); the rest are fixed constants kept here so a test can state them.
    """

    gc_interval: int = 10_000
    gc_max_interval: timedelta = timedelta(seconds=86_400)
    gc_idle_floor: int = 100
    min_concept_score: float = 0.12
    score_cut_types: frozenset[ConceptType] = frozenset({ConceptType.ENTITY, ConceptType.RESOURCE})
    recency_window: timedelta = timedelta(days=365)
    collect_fraction: float = 0.05
    collect_floor: int = 32
    bump_chunk: int = 500
    advisory_ceiling: int = 10_000
    clock_skew: timedelta = timedelta(minutes=5)
    max_canonical_nodes: int = 1000
    edge_min_age: timedelta = EDGE_MIN_AGE
    weight_recency: float = 0.25
    weight_frequency: float = 0.20
    weight_activity: float = 0.20
    weight_density: float = 0.35

    def __post_init__(self) -> None:
        if self.gc_interval < 1:
            raise ValueError("gc_interval must be at least 1")
        if self.gc_max_interval <= timedelta(0):
            raise ValueError("gc_max_interval_secs must be more than 0")
        if self.gc_idle_floor < 0:
            raise ValueError("gc_idle_floor must be 0 or more")
        if self.bump_chunk < 1:
            raise ValueError("bump_chunk must be at least 1")

    @property
    def warnings(self) -> tuple[str, ...]:
        """Settings that are accepted but say something odd (upstream warns, never refuses)."""
        if self.gc_idle_floor >= self.gc_interval:
            return (
                f"gc_idle_floor {self.gc_idle_floor} is not below gc_interval "
                f"{self.gc_interval}: the elapsed trigger can never fire first",
            )
        return ()

    def bar(self, concept_type: ConceptType) -> float | None:
        """The score cut's bar for a type, or None for a type exempt from the cut."""
        if concept_type not in self.score_cut_types:
            return None
        return self.min_concept_score / EVICTION_RESISTANCE[concept_type]
