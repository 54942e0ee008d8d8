"""What the canonization cycle and a GC sweep measure, read from the memory and canonization
projections in one pass per job (canonization.md §2-§4, §8; ADR 0031).

A write is one outcome event, so an edge's interaction is its seq (memory_evidence): Stage 2's
"distinct interactions" are the distinct seqs of the aged structural edges into a concept,
its own creating seq left out, and their times are those edges' about-times, clamped to when
they were written. The aged blast radius is the document's set (depends_on citers and
parent_of children), counting only edges at least `edge_min_age` old.

This module reads the session as one object per concept and edge (`load`, `session_stats`:
the policy's reference path, the sweep's evidence) and holds the aged-support rules; the
jobs' own columnar read, one row per concept, is `lcg.projections.canonization.columns`.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lcg.domain.memory.canonization import (
    Cause,
    ConceptStats,
    Cursors,
    Demotion,
    Knobs,
    SessionStats,
    SoloMeasures,
    Status,
    SupersessionEvidence,
    coverage,
)
from lcg.domain.memory.evidence import ConceptId, dated
from lcg.domain.memory.gc import (
    EdgeKind,
    EvidenceInputs,
    FactColumns,
    GcKnobs,
    daemon_scores,
)
from lcg.domain.memory.text import ConceptType
from lcg.projections.canonization import state as canon
from lcg.projections.canonization.state import NodeState, SessionClock
from lcg.projections.memory import evidence as memory_evidence

STAGE2_KINDS = ("depends_on", "produces", "modifies")  # into the concept; parent_of: out of it
CAUSAL_KINDS = frozenset({"depends_on", "produces", "modifies"})


@dataclass(slots=True)  # not frozen: built once per concept per job, a frozen init is ~4x slower
class ConceptRow:
    node_id: str
    content: str
    concept_type: ConceptType
    canonical_key: str | None
    created_at: datetime
    about_time: datetime
    agent_id: str
    seq: int
    access_count: int
    last_accessed: datetime | None


@dataclass(slots=True)  # not frozen: built once per edge per job
class EdgeRow:
    kind: str
    source: str
    target: str
    created_at: datetime
    about_time: datetime
    seq: int
    dated: datetime  # `dated(about_time, created_at)`, worked out once per write at load


# Enum members by value: a dict lookup instead of an Enum call per row (the same members).
STATUSES = {status.value: status for status in Status}
_EDGE_KINDS = {kind.value: kind for kind in EdgeKind}
TYPES = {kind.value: kind for kind in ConceptType}
NO_STATE = NodeState()  # a concept with no canonization row (frozen: safe to share)


@dataclass
class Snapshot:
    """One session as a job reads it, before it decides anything."""

    session: str
    concepts: dict[str, ConceptRow]
    interactions: dict[int, tuple[str, datetime, datetime]]  # seq -> (uuid, written, about)
    edges: list[EdgeRow]
    states: dict[str, NodeState]
    clock: SessionClock
    reverts: dict[str, int] = field(default_factory=dict)

    def state(self, node: str) -> NodeState:
        return self.states.get(node, NO_STATE)

    def status(self, node: str) -> Status:
        value = self.state(node).status
        return STATUSES.get(value) or Status(value)


def load(conn: sqlite3.Connection, session: str) -> Snapshot:
    """Every concept, interaction and edge of the session, with its canonization state.

    The nodes and edges of one write share their two time strings, so each distinct string is
    parsed once (equal strings give equal, immutable datetimes)."""
    parsed: dict[str, datetime] = {}
    dates: dict[tuple[str, str], datetime] = {}

    def time_of(text: str) -> datetime:
        found = parsed.get(text)
        if found is None:
            found = parsed[text] = datetime.fromisoformat(text)
        return found

    def edge(kind: str, source: str, target: str, created: str, about: str, seq: int) -> EdgeRow:
        when = dates.get((about, created))
        if when is None:
            when = dates[about, created] = dated(time_of(about), time_of(created))
        return EdgeRow(kind, source, target, time_of(created), time_of(about), seq, when)

    concepts: dict[str, ConceptRow] = {}
    interactions: dict[int, tuple[str, datetime, datetime]] = {}
    for (
        uuid,
        kind,
        content,
        ctype,
        key,
        created,
        about,
        agent,
        seq,
        count,
        accessed,
    ) in conn.execute(
        "SELECT uuid, node_kind, content, concept_type, canonical_key, created_at, about_time,"
        " agent_id, seq, access_count, last_accessed FROM memory_nodes WHERE group_id=?",
        (session,),
    ):
        if kind == "interaction":
            interactions[int(seq)] = (str(uuid), time_of(created), time_of(about))
        else:
            concepts[str(uuid)] = ConceptRow(
                str(uuid),
                str(content),
                TYPES.get(ctype) or ConceptType(ctype),
                None if key is None else str(key),
                time_of(created),
                time_of(about),
                str(agent),
                int(seq),
                int(count),
                None if accessed is None else time_of(accessed),
            )
    edges = [
        edge(str(kind), str(source), str(target), str(created), str(about), int(seq))
        for kind, source, target, created, about, seq in conn.execute(
            "SELECT kind, source, target, created_at, about_time, seq FROM memory_edges"
            " WHERE group_id=? ORDER BY kind, source, target",
            (session,),
        )
    ]
    return Snapshot(
        session,
        concepts,
        interactions,
        edges,
        canon.node_states(conn, session),
        canon.clock(conn, session),
        canon.reverts(conn, session),
    )


def gc_facts(snap: Snapshot) -> FactColumns:
    """The session as a sweep (and the daemon score) reads it."""
    rows = list(snap.concepts.values())
    states = [snap.state(row.node_id) for row in rows]
    return FactColumns(
        node_ids=[ConceptId(row.node_id) for row in rows],
        concept_types=[row.concept_type for row in rows],
        statuses=[STATUSES.get(s.status) or Status(s.status) for s in states],
        created_at=[row.created_at for row in rows],
        last_accessed=[row.last_accessed for row in rows],
        access_counts=[row.access_count for row in rows],
        gc_survived=[s.gc_survived for s in states],
        root_goals=[False] * len(rows),
        edges={(e.kind, e.source, e.target) for e in snap.edges},
        interaction_count=len(snap.interactions),
        epoch=snap.clock.epoch,
    )


def interaction_span(snap: Snapshot) -> tuple[datetime, datetime] | None:
    """The first and last interaction's write times (the score's R runs over it)."""
    times = [written for _, written, _ in snap.interactions.values()]
    return (min(times), max(times)) if times else None


def _extent(snap: Snapshot) -> timedelta:
    """The session's interaction extent in about-time: coverage's denominator."""
    times = [dated(about, written) for _, written, about in snap.interactions.values()]
    return max(times) - min(times) if times else timedelta(0)


def gc_evidence(conn: sqlite3.Connection, session: str) -> EvidenceInputs:
    """The contradictions of the session and the support of their targets (§7)."""
    loaded = memory_evidence.load(
        conn, session, memory_evidence.contradicted_targets(conn, session)
    )
    return EvidenceInputs(
        concepts=list(loaded.concepts.values()),
        contradictions=loaded.contradictions,
        support=loaded.support,
    )


def _supersession(conn: sqlite3.Connection, snap: Snapshot) -> SupersessionEvidence:
    targets = memory_evidence.contradicted_targets(conn, snap.session)
    sources = {
        e.source for e in snap.edges if e.kind == EdgeKind.CONTRADICTS and e.target in targets
    }
    loaded = memory_evidence.load(conn, snap.session, sorted(set(targets) | sources))
    return SupersessionEvidence(
        concepts=tuple(loaded.concepts.values()),
        contradictions=tuple(loaded.contradictions),
        support=tuple(loaded.support),
        interaction_extent=_extent(snap),
    )


class _Contents(Mapping[str, str]):
    """The snapshot's concept contents by id, read on demand."""

    def __init__(self, snap: Snapshot) -> None:
        self._concepts = snap.concepts

    def __getitem__(self, node: str) -> str:
        return self._concepts[node].content

    def __iter__(self) -> Iterator[str]:
        return iter(self._concepts)

    def __len__(self) -> int:
        return len(self._concepts)


@dataclass
class Inbound:
    """Per concept: the aged structural support Stage 2, Stage 3 and Solo read."""

    seqs: set[int] = field(default_factory=set)
    times: list[datetime] = field(default_factory=list)
    dependents: set[str] = field(default_factory=set)  # aged depends_on citers, children
    solo_times: list[datetime] = field(default_factory=list)
    causal_sources: set[str] = field(default_factory=set)


# An edge as `aged_inbound` reads it: kind, source, target, written, dated (its about-time clamped
# to when it was written), seq.
InboundEdge = tuple[str, str, str, datetime, datetime, int]


def aged_inbound(
    edges: Iterable[InboundEdge], seqs: Mapping[str, int], now: datetime, min_age: timedelta
) -> dict[str, Inbound]:
    """The aged structural support of each concept (`seqs`: every concept of the session and
    the seq that created it), from `edges` in (kind, source, target) order: the first edge of a
    seq gives that interaction's time."""
    found: dict[str, Inbound] = defaultdict(Inbound)
    for kind, source, target, created_at, when, seq in edges:
        if kind == "derives" and target in seqs:
            found[target].solo_times.append(when)
            continue
        if kind == "parent_of":
            node, other = source, target
        elif kind in STAGE2_KINDS:
            node, other = target, source
        else:
            continue
        if node not in seqs or other not in seqs or node == other:
            continue
        into = found[node]
        if kind in CAUSAL_KINDS:
            into.solo_times.append(when)
            into.causal_sources.add(other)
        if now - created_at < min_age:
            continue
        if kind in ("depends_on", "parent_of"):
            into.dependents.add(other)
        if seq != seqs[node] and seq not in into.seqs:
            into.seqs.add(seq)
            into.times.append(when)
    return found


def demotion_of(state: NodeState, contents: Mapping[str, str]) -> Demotion | None:
    """The last demotion; `contents` holds (at least) the superseding concept's content while
    it is a concept of the session."""
    if state.last_demotion_at is None or state.demotion_cause is None:
        return None
    by = state.superseded_by
    content = contents.get(by) if by is not None else None
    return Demotion(
        state.last_demotion_at,
        Cause(state.demotion_cause),
        None if by is None else ConceptId(by),
        content,
    )


def session_stats(
    conn: sqlite3.Connection,
    snap: Snapshot,
    knobs: Knobs,
    gc_knobs: GcKnobs,
    now: datetime,
    cursors: Cursors | None = None,
) -> SessionStats:
    """The pre-cycle snapshot the policy decides on (every concept of the session)."""
    scores = daemon_scores(gc_facts(snap), interaction_span(snap), gc_knobs)
    seqs = {node: row.seq for node, row in snap.concepts.items()}
    edges = ((e.kind, e.source, e.target, e.created_at, e.dated, e.seq) for e in snap.edges)
    inbound = aged_inbound(edges, seqs, now, knobs.edge_min_age)
    extent = _extent(snap)
    concepts = []
    for node, row in snap.concepts.items():
        state = snap.state(node)
        into = inbound.get(node, Inbound())
        concepts.append(
            ConceptStats(
                node_id=ConceptId(node),
                status=STATUSES.get(state.status) or Status(state.status),
                concept_type=row.concept_type,
                canonical_key=row.canonical_key,
                score=scores.get(ConceptId(node), 0.0),
                gc_survived=state.gc_survived,
                distinct_interactions=len(into.seqs),
                coverage=coverage(into.times, extent) if into.times else 0.0,
                blast_radius=len(into.dependents),
                last_demotion=demotion_of(state, _Contents(snap)),
                solo=SoloMeasures(
                    support_times=tuple(sorted(into.solo_times)),
                    human_confirmed=0,
                    valid_actions=len(into.causal_sources),
                    reverts=snap.reverts.get(node, 0),
                ),
            )
        )
    evidence = _supersession(conn, snap) if knobs.supersede else SupersessionEvidence()
    return SessionStats(tuple(concepts), evidence, cursors or Cursors())
