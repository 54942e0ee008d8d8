"""The session's lists (seed 001): lambo_stale's citations of contradicted concepts and
lambo_saints' canonical memories, from validated requests (ADR 0060)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lcg.domain.memory import evidence
from lcg.domain.memory.context import quote
from lcg.projections.canonization import state as canon
from lcg.projections.memory import evidence as memory_evidence
from lcg.projections.memory import state
from lcg.queries.memory_reads import display_type
from lcg.queries.reads import ReadHandle


@dataclass(frozen=True, slots=True)
class StaleRequest:
    """A stale listing's validated arguments: `offset` is within its range (None: 0)."""

    session: str
    offset: int | None


@dataclass(frozen=True, slots=True)
class SaintsRequest:
    session: str


@dataclass(frozen=True, slots=True)
class StaleCitation:
    """A dependent (its content quoted, empty when it is gone) citing a contradicted concept."""

    node_id: str
    content: str
    cited_id: str
    contradicted_by: str


@dataclass(frozen=True, slots=True)
class StaleCitations:
    """One page of the session's stale citations, from `offset`, and the total."""

    rows: tuple[StaleCitation, ...]
    total: int
    offset: int


@dataclass(frozen=True, slots=True)
class Saint:
    node_id: str
    content: str
    concept_type: str
    blast_radius: int  # live (canonization.md §5)
    access_count: int
    created_at: datetime


def stale_citations(reads: ReadHandle, request: StaleRequest) -> StaleCitations:
    """The page of direct dependencies resting on a contradicted concept of the session at
    the request's offset (pages of 50), by the contradiction rules recall's warnings use."""
    session = request.session
    conn = reads.reader()
    targets = memory_evidence.contradicted_targets(conn, session)
    found = memory_evidence.load(conn, session, targets)
    rows = evidence.stale_rows(
        found.concepts.values(), found.contradictions, found.support, reads.clock()
    )
    page = evidence.stale_page(rows, evidence.check_stale_offset(request.offset))
    nodes = state.nodes_by_uuid(conn, [row.dependent for row in page.rows])
    return StaleCitations(
        tuple(
            StaleCitation(
                row.dependent,
                quote(nodes[row.dependent].content) if row.dependent in nodes else "",
                row.cited,
                row.contradiction.source,
            )
            for row in page.rows
        ),
        page.total,
        page.offset,
    )


def saints(reads: ReadHandle, request: SaintsRequest) -> tuple[Saint, ...]:
    """The session's canonical concepts: live blast radius descending, then created_at and id
    ascending (canonization.md §5)."""
    session = request.session
    conn = reads.reader()
    canonical = canon.canonical(conn, session)
    nodes = state.nodes_by_uuid(conn, canonical)
    radii = state.blast_radii(conn, canonical)
    ordered = sorted(
        (nodes[uuid] for uuid in canonical if uuid in nodes),
        key=lambda n: (-radii[n.uuid], n.created_at, n.uuid),
    )
    return tuple(
        Saint(
            n.uuid,
            n.content,
            display_type(n.concept_type),
            radii[n.uuid],
            n.access_count,
            datetime.fromisoformat(n.created_at),
        )
        for n in ordered
    )
