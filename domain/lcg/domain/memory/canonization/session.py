"""The session as a cycle reads it: concepts as columns, by status, and what every gate reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Final

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization.ladder import Status
from lcg.domain.memory.canonization.measures import (
    ConceptStats,
    Cursors,
    SessionStats,
    SupersessionEvidence,
)
from lcg.domain.memory.canonization.policy import GC_SURVIVED_BAR, Knobs, Policy
from lcg.domain.memory.canonization.scoring import clean_score, p90
from lcg.domain.memory.canonization.supersession import superseders
from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.text import ConceptType


@dataclass(frozen=True)  # no slots: `ladder` is worked out once per rows
class ConceptRows:
    """Every concept of a session as columns (row i of each is one concept): what a cycle
    reads about all of them. The rest of a concept's `ConceptStats` (`Measures`) is read only
    for the concepts the cycle's windows evaluate (`cycle_needs`), so a cycle over 100k
    concepts builds no object per concept."""

    node_ids: Sequence[ConceptId]
    statuses: Sequence[Status]
    concept_types: Sequence[ConceptType]
    canonical_keys: Sequence[str | None]
    scores: Sequence[float]
    gc_survived: Sequence[int]

    def __post_init__(self) -> None:
        size = len(self.node_ids)
        columns = (
            self.statuses,
            self.concept_types,
            self.canonical_keys,
            self.scores,
            self.gc_survived,
        )
        if any(len(column) != size for column in columns):
            raise DomainError(
                "every concept column needs one value per concept",
                field="concepts",
                rule="columns",
            )

    @cached_property
    def ladder(self) -> Ladder:
        """The rows by status in id order (`cycle_needs` and `plan_cycle_over` share it)."""
        return Ladder.of(self)

    @classmethod
    def of(cls, concepts: Sequence[ConceptStats]) -> ConceptRows:
        """The rows of measured concepts."""
        return cls(
            node_ids=[c.node_id for c in concepts],
            statuses=[c.status for c in concepts],
            concept_types=[c.concept_type for c in concepts],
            canonical_keys=[c.canonical_key for c in concepts],
            scores=[c.score for c in concepts],
            gc_survived=[c.gc_survived for c in concepts],
        )


@dataclass(frozen=True, slots=True)
class Context:
    """What every gate reads about the whole session, computed once per snapshot."""

    peer_count: int
    p90: float
    canonical_count: int
    superseded_by: Mapping[ConceptId, ConceptId]


def index_concepts(session: SessionStats) -> dict[ConceptId, ConceptStats]:
    by_id: dict[ConceptId, ConceptStats] = {}
    for stats in session.concepts:
        if stats.node_id in by_id:
            raise DomainError(
                f"concept {stats.node_id} measured twice", field="concepts", rule="unique ids"
            )
        by_id[stats.node_id] = stats
    return by_id


def session_context(session: SessionStats, knobs: Knobs, now: datetime) -> Context:
    peers = [c.score for c in session.concepts if c.status is not Status.CANONICAL]
    canonical = sum(1 for c in session.concepts if c.status is Status.CANONICAL)
    superseded: dict[ConceptId, ConceptId] = {}
    if knobs.supersede:
        high = (c.node_id for c in session.concepts if c.status in _HIGH)
        found = superseders(session.evidence, high, now, knobs.edge_min_age)
        superseded = {target: edge.source for target, edge in found.items()}
    return Context(len(peers), p90(peers), canonical, superseded)


_HIGH: Final = frozenset({Status.VENERABLE, Status.CANONICAL})


def _ring(
    members: Sequence[int], ids: Sequence[ConceptId], cursor: ConceptId | None, size: int
) -> tuple[list[int], ConceptId | None]:
    """Up to `size` members (rows in id order) from the first id after `cursor`, wrapping; the
    cursor becomes the window's last id (unchanged when there is nothing to take)."""
    if not members:
        return [], cursor
    start = 0
    if cursor is not None:
        start = next((i for i, m in enumerate(members) if ids[m] > cursor), 0)
    window = [members[(start + k) % len(members)] for k in range(min(size, len(members)))]
    return window, ids[window[-1]]


@dataclass(frozen=True, slots=True)
class Ladder:
    """A snapshot's rows by status, each list in id order."""

    rows: ConceptRows
    by_status: Mapping[Status, list[int]]

    @classmethod
    def of(cls, rows: ConceptRows) -> Ladder:
        ids = rows.node_ids
        if len(set(ids)) != len(ids):
            seen: set[ConceptId] = set()
            for node in ids:
                if node in seen:
                    raise DomainError(
                        f"concept {node} measured twice", field="concepts", rule="unique ids"
                    )
                seen.add(node)
        by_status: dict[Status, list[int]] = {status: [] for status in Status}
        statuses = rows.statuses
        for row in sorted(range(len(ids)), key=ids.__getitem__):
            by_status[statuses[row]].append(row)
        return cls(rows, by_status)

    def context(self, evidence: SupersessionEvidence, knobs: Knobs, now: datetime) -> Context:
        """`session_context` over the rows."""
        rows = self.rows
        canonical = len(self.by_status[Status.CANONICAL])
        peers = [
            score
            for score, status in zip(rows.scores, rows.statuses, strict=True)
            if status is not Status.CANONICAL
        ]
        superseded: dict[ConceptId, ConceptId] = {}
        if knobs.supersede:
            high = (rows.node_ids[row] for status in _HIGH for row in self.by_status[status])
            found = superseders(evidence, high, now, knobs.edge_min_age)
            superseded = {target: edge.source for target, edge in found.items()}
        return Context(len(peers), p90(peers), canonical, superseded)

    def stage1(self, ctx: Context, knobs: Knobs) -> list[int]:
        """The None rows in id order that can pass Stage 1. Under Swarm its gates read only the
        rows, so those failing them are left out here (at 100k concepts most are); under Solo
        every None row is a candidate until its band is known."""
        nones = self.by_status[Status.NONE]
        if knobs.promotion_policy is Policy.SOLO:
            return nones
        if ctx.peer_count < knobs.min_peer_count:
            return []
        survived, scores = self.rows.gc_survived, self.rows.scores
        return [
            row
            for row in nones
            if survived[row] >= GC_SURVIVED_BAR and clean_score(scores[row]) > ctx.p90
        ]

    def windows(
        self, cursors: Cursors, knobs: Knobs
    ) -> tuple[list[int], ConceptId | None, list[int], ConceptId | None]:
        """Stage 2's and Stage 3's ring windows (rows) and the cursors after them. While the
        Canonical budget is full, Stage 3 has no window and its cursor stays."""
        ids = self.rows.node_ids
        candidates = self.by_status[Status.CANDIDATE]
        window2, stage2 = _ring(candidates, ids, cursors.stage2, knobs.batch_size)
        window3: list[int] = []
        stage3 = cursors.stage3
        if knobs.max_canonical_nodes - len(self.by_status[Status.CANONICAL]) > 0:
            venerables = self.by_status[Status.VENERABLE]
            window3, stage3 = _ring(venerables, ids, stage3, knobs.batch_size)
        return window2, stage2, window3, stage3
