"""Garbage collection's pure rules: when a sweep is due, and what one sweep collects and bumps.

Seed 001 and canonization.md §8 (upstream daemon/gc.rs): a sweep runs after `gc_interval`
mutations, or after `gc_max_interval` with at least `gc_idle_floor` mutations; it collects
orphans, concepts unreachable from every interaction, and Entities and Resources whose eviction
score is under their type's bar, at most `collection_cap` of them, and bumps every other
concept's `gc_survived`. Venerable, Canonical and root-goal concepts are protected, and so are
the two contradiction protections of §7 (P1 follows the contradicted concept's status, P2, #197,
follows the contradiction warning). The caller loads the facts, passes the clock in and appends
what `plan_sweep` returns as events; nothing here reads a clock or a store.
"""

from __future__ import annotations

from lcg.domain.memory.gc.bumps import (
    GC_SURVIVED_MAX,
    bumped,
    drain_bumps,
    survivor_drain_order,
)
from lcg.domain.memory.gc.decisions import (
    Collection,
    CollectReason,
    KeptReason,
    LastSweep,
    Sweep,
)
from lcg.domain.memory.gc.facts import (
    ConceptFacts,
    EvidenceInputs,
    FactColumns,
    GcEdge,
    SessionFacts,
)
from lcg.domain.memory.gc.graph import (
    PAUSE_EVERY,
    Pause,
    no_pause,
)
from lcg.domain.memory.gc.knobs import (
    EDGE_BONUS,
    EVICTION_RESISTANCE,
    MAX_EDGE_BONUS,
    MAX_SCORE,
    PROVENANCE_KINDS,
    STRUCTURAL_KINDS,
    TYPE_MODIFIER,
    CanonizationStatus,
    EdgeKind,
    GcKnobs,
)
from lcg.domain.memory.gc.score import (
    Degrees,
    ScoreInputs,
    daemon_score_column,
    daemon_scores,
    degree_score_column,
    eviction_recency,
)
from lcg.domain.memory.gc.sweep import (
    collection_cap,
    plan_sweep,
)
from lcg.domain.memory.gc.triggers import (
    Trigger,
    anchor_gc_clock,
    should_sweep,
)

__all__ = [
    "EDGE_BONUS",
    "EVICTION_RESISTANCE",
    "GC_SURVIVED_MAX",
    "MAX_EDGE_BONUS",
    "MAX_SCORE",
    "PAUSE_EVERY",
    "PROVENANCE_KINDS",
    "STRUCTURAL_KINDS",
    "TYPE_MODIFIER",
    "CanonizationStatus",
    "CollectReason",
    "Collection",
    "ConceptFacts",
    "Degrees",
    "EdgeKind",
    "EvidenceInputs",
    "FactColumns",
    "GcEdge",
    "GcKnobs",
    "KeptReason",
    "LastSweep",
    "Pause",
    "ScoreInputs",
    "SessionFacts",
    "Sweep",
    "Trigger",
    "anchor_gc_clock",
    "bumped",
    "collection_cap",
    "daemon_score_column",
    "daemon_scores",
    "degree_score_column",
    "drain_bumps",
    "eviction_recency",
    "no_pause",
    "plan_sweep",
    "should_sweep",
    "survivor_drain_order",
]
