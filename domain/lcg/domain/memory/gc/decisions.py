"""What a sweep decides: collections and why, protections' reasons, lambo_stats' figures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc.triggers import Trigger


class CollectReason(StrEnum):
    """Which clause collected a concept."""

    ORPHAN = "orphan"
    DISCONNECTED = "disconnected"
    UNDER_BAR = "under_bar"
    CASCADE = "cascade"


class KeptReason(StrEnum):
    """Why a concept is protected from this sweep."""

    STATUS = "status"
    ROOT_GOAL = "root_goal"
    CONTRADICTS_HELD_STATUS = "contradicts_venerable_or_canonical"
    SHOWN_CORRECTION = "shown_correction"


@dataclass(frozen=True, slots=True)
class Collection:
    """One collected concept and the clause that collected it."""

    node_id: ConceptId
    reason: CollectReason


@dataclass(frozen=True, slots=True)
class LastSweep:
    """lambo_stats' `gc.last_sweep`, field for field."""

    trigger: Trigger
    collected: int
    deferred: int
    collection_cap: int
    cap_bound: bool
    resources_spared_by_dependents: int
    survivors_deferred: int


@dataclass(frozen=True, slots=True)
class Sweep:
    """One sweep's decisions. Id tuples are in id order, except the bumps (drain order)."""

    trigger: Trigger
    collected: tuple[Collection, ...]
    deferred: tuple[ConceptId, ...]
    collection_cap: int
    resources_spared: tuple[ConceptId, ...]
    protected: Mapping[ConceptId, KeptReason]
    bumps: tuple[ConceptId, ...]
    pending_bumps: tuple[ConceptId, ...]
    canonical_count: int
    canonical_over_budget: bool
    warnings: tuple[str, ...] = ()

    @property
    def collected_ids(self) -> tuple[ConceptId, ...]:
        """The collected concepts' ids, in id order."""
        return tuple(c.node_id for c in self.collected)

    @property
    def cap_bound(self) -> bool:
        """Whether the per-sweep cap held anything back."""
        return bool(self.deferred)

    @property
    def survivors_deferred(self) -> int:
        """Survivor bumps left to drain after this sweep's first chunk."""
        return len(self.pending_bumps)

    def last_sweep(self) -> LastSweep:
        """The figures lambo_stats reports for this sweep."""
        return LastSweep(
            trigger=self.trigger,
            collected=len(self.collected),
            deferred=len(self.deferred),
            collection_cap=self.collection_cap,
            cap_bound=self.cap_bound,
            resources_spared_by_dependents=len(self.resources_spared),
            survivors_deferred=self.survivors_deferred,
        )
