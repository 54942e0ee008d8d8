"""What the store measures about a session's concepts for a canonization cycle."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from lcg.domain.memory.canonization.ladder import Status
from lcg.domain.memory.evidence import Concept, ConceptId, Contradiction, Support
from lcg.domain.memory.text import ConceptType


class Cause(StrEnum):
    """Why a transition happened."""

    PROMOTION = "promotion"
    BUDGET = "budget"
    SUPERSESSION = "supersession"


@dataclass(frozen=True, slots=True)
class Demotion:
    """A concept's last demotion: when, why, and by what (supersession only).

    `superseded_by_content` is None once the superseding concept is no longer in memory.
    """

    at: datetime
    cause: Cause
    superseded_by: ConceptId | None = None
    superseded_by_content: str | None = None


@dataclass(frozen=True, slots=True)
class SoloMeasures:
    """Solo's inputs for one concept (§4).

    `support_times`: about-times of the interactions with a Derives edge into the concept and
    of the origin interactions of concepts with a Causal or Dependency edge into it.
    `reverts`: the concept's audit events that move it down the ladder.
    """

    support_times: tuple[datetime, ...] = ()
    human_confirmed: int = 0
    valid_actions: int = 0
    reverts: int = 0


@dataclass(frozen=True, slots=True)
class ConceptStats:
    """What one cycle measures about one concept (every count already aged by the store).

    `score` is the daemon score S(c) (§3). `distinct_interactions` and `coverage` are Stage 2's
    (inbound structural edges from concepts, aged, the concept's own interaction excluded).
    `blast_radius` is the aged blast radius (the document's set: citers and parent_of
    children), read by Stage 3 and the budget.
    """

    node_id: ConceptId
    status: Status
    concept_type: ConceptType = ConceptType.ENTITY
    canonical_key: str | None = None
    score: float = 0.0
    gc_survived: int = 0
    distinct_interactions: int = 0
    coverage: float = 0.0
    blast_radius: int = 0
    last_demotion: Demotion | None = None
    solo: SoloMeasures = SoloMeasures()


@dataclass(frozen=True, slots=True)
class SupersessionEvidence:
    """What §6 needs, as the contradiction rules read it (lcg.domain.memory.evidence).

    `concepts`: the first write of every concept involved (targets and contradicting ones).
    `interaction_extent`: the session's interaction extent, the denominator of coverage.
    """

    concepts: tuple[Concept, ...] = ()
    contradictions: tuple[Contradiction, ...] = ()
    support: tuple[Support, ...] = ()
    interaction_extent: timedelta = timedelta(0)


@dataclass(frozen=True, slots=True)
class Cursors:
    """The round-robin cursors of Stage 2 and Stage 3 (in memory, reset on restart)."""

    stage2: ConceptId | None = None
    stage3: ConceptId | None = None


@dataclass(frozen=True, slots=True)
class SessionStats:
    """One pre-cycle snapshot of a session: every concept's measures, and the cursors."""

    concepts: tuple[ConceptStats, ...]
    evidence: SupersessionEvidence = SupersessionEvidence()
    cursors: Cursors = Cursors()


@dataclass(frozen=True, slots=True)
class Measures:
    """The part of a concept's `ConceptStats` that is not in its `ConceptRows` row."""

    distinct_interactions: int = 0
    coverage: float = 0.0
    blast_radius: int = 0
    last_demotion: Demotion | None = None
    solo: SoloMeasures = SoloMeasures()

    @classmethod
    def of(cls, stats: ConceptStats) -> Measures:
        """A measured concept's measures."""
        return cls(
            stats.distinct_interactions,
            stats.coverage,
            stats.blast_radius,
            stats.last_demotion,
            stats.solo,
        )
