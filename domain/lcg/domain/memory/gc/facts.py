"""What a sweep and the daemon score read about a session: concepts, edges, evidence."""

from __future__ import annotations

from collections import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lcg.domain.memory.evidence import Concept, ConceptId, Contradiction, Support
from lcg.domain.memory.gc.knobs import CanonizationStatus, EdgeKind
from lcg.domain.memory.text import ConceptType


@dataclass(frozen=True, slots=True)
class ConceptFacts:
    """What a sweep needs to know about one concept of the session.

    `created_at` is when it was first written (write time, not its about-time: a backdated
    event_time does not age a concept out); `last_accessed` is its last recall, if any.
    """

    node_id: ConceptId
    concept_type: ConceptType
    status: CanonizationStatus
    created_at: datetime
    last_accessed: datetime | None = None
    access_count: int = 0
    gc_survived: int = 0
    root_goal: bool = False


@dataclass(frozen=True, slots=True)
class GcEdge:
    """One stored edge. Provenance edges run from an interaction; precedes edges join two
    interactions; every other kind joins two concepts."""

    kind: EdgeKind
    source: str
    target: str


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """The whole session as one sweep sees it.

    `concepts` must hold every concept of the session (an edge into a concept not listed is
    ignored); `interaction_count` is the number of interaction nodes; `epoch` is the mutation
    count before the sweep, which rotates the survivor bump order.
    """

    concepts: Sequence[ConceptFacts]
    edges: Sequence[GcEdge]
    interaction_count: int
    epoch: int


@dataclass(frozen=True, slots=True)
class FactColumns:
    """`SessionFacts` as columns (row i of each concept column is one concept) and the edges as
    `(kind value, source, target)` triples: what the store hands a sweep and the daemon score
    without an object per concept or per edge (100k concepts, 250k edges)."""

    node_ids: Sequence[ConceptId]
    concept_types: Sequence[ConceptType]
    statuses: Sequence[CanonizationStatus]
    created_at: Sequence[datetime]
    last_accessed: Sequence[datetime | None]
    access_counts: Sequence[int]
    gc_survived: Sequence[int]
    root_goals: Sequence[bool]
    edges: abc.Collection[tuple[str, str, str]]
    interaction_count: int
    epoch: int
    edges_distinct: bool = False  # True when the store's unique key already dedupes `edges`

    def __post_init__(self) -> None:
        size = len(self.node_ids)
        columns = (
            self.concept_types,
            self.statuses,
            self.created_at,
            self.last_accessed,
            self.access_counts,
            self.gc_survived,
            self.root_goals,
        )
        if any(len(column) != size for column in columns):
            raise ValueError("every concept column needs one value per concept")

    @classmethod
    def of(cls, facts: SessionFacts) -> FactColumns:
        """The same session, as columns."""
        concepts = facts.concepts
        return cls(
            node_ids=[c.node_id for c in concepts],
            concept_types=[c.concept_type for c in concepts],
            statuses=[c.status for c in concepts],
            created_at=[c.created_at for c in concepts],
            last_accessed=[c.last_accessed for c in concepts],
            access_counts=[c.access_count for c in concepts],
            gc_survived=[c.gc_survived for c in concepts],
            root_goals=[c.root_goal for c in concepts],
            edges={(e.kind.value, e.source, e.target) for e in facts.edges},
            interaction_count=facts.interaction_count,
            epoch=facts.epoch,
        )


@dataclass(frozen=True, slots=True)
class EvidenceInputs:
    """The contradiction records (§7) and what the evidence rule needs about contradicted
    concepts. `concepts` need only the targets of `contradictions`."""

    concepts: Sequence[Concept] = ()
    contradictions: Sequence[Contradiction] = ()
    support: Sequence[Support] = ()
