"""lambo_inspect's composition (seed 001): a concept's neighbourhood from a validated request
(ADR 0060).

The focus is resolved (node id, exact text, 8-hex short id, then one substring match), its
dependents, contradictions and edges both ways to `depth` hops are read, and its admission
block is measured the way the next canonization cycle measures. A focus matching nothing is
refused with the concepts recall ranks closest to it as suggestions (M-INS-010).
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from lcg.domain.errors import DomainError
from lcg.domain.memory import limits
from lcg.domain.memory.canonization import Admission, evaluate_over
from lcg.domain.memory.context import quote
from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.identity import is_node_uuid, is_short_id
from lcg.domain.memory.repo_paths import repo_of_key
from lcg.projections.canonization import columns
from lcg.projections.memory import state
from lcg.projections.memory.state import Node
from lcg.queries import recall
from lcg.queries.memory_reads import SessionJobs, display_type
from lcg.queries.reads import ReadHandle, search_context

SCAN_CAP = 2_000  # concepts the substring leg scans before it bounds itself (M-INS-008)
# Past the cap it scans a bounded subset of SCAN_CAP concepts: the most recent, and of the rest
# those with the largest blast radius (the load-bearing ones an agent names most).
RECENT_PART = 1_500
RADIUS_PART = SCAN_CAP - RECENT_PART
BOUNDED_NOTE = (
    f"a bounded subset past the scan cap of {SCAN_CAP:,} concepts: the {RECENT_PART:,} most"
    f" recent and the {RADIUS_PART:,} others with the largest blast radius"
)
DEPENDENTS_SHOWN = 50
EDGE_TYPES = {  # the seed's edge classes
    "depends_on": "Dependency",
    "parent_of": "Hierarchical",
    "produces": "Causal",
    "modifies": "Causal",
    "contradicts": "Contradicts",
}


@dataclass(frozen=True, slots=True)
class InspectRequest:
    """An inspect's validated arguments: the focus is within its bounds."""

    session: str
    focus: str
    depth: int


@dataclass(frozen=True, slots=True)
class Dependent:
    node_id: str
    label: str  # its content quoted, or its id when it is gone
    edge_type: str  # Dependency (depends_on) or Hierarchical (parent_of)


@dataclass(frozen=True, slots=True)
class Contradictor:
    """A concept contradicting the focus; who wrote it and when, unless it is gone."""

    node_id: str
    content: str | None
    agent_id: str | None
    created_at: str | None


@dataclass(frozen=True, slots=True)
class NeighbourEdge:
    hop: int
    source: str
    target: str
    kind: str
    edge_type: str


@dataclass(frozen=True, slots=True)
class Inspected:
    """The focus and its neighbourhood. `dependents` are the first DEPENDENTS_SHOWN of
    `blast_radius` distinct ones; `resolved` says how the focus was found when not exactly."""

    node_id: str
    content: str
    concept_type: str
    agent_id: str
    created_at: str
    resolved: str | None
    blast_radius: int
    dependents: tuple[Dependent, ...]
    dependents_truncated: bool
    contradicted_by: tuple[Contradictor, ...]
    edges: tuple[NeighbourEdge, ...]
    neighbours_truncated: bool
    admission: Admission
    repo_scope: str | None = None  # the repository of a scoped path (M-RSC-062)


def inspect_memory(
    reads: ReadHandle, jobs: Callable[[], SessionJobs], request: InspectRequest
) -> Inspected:
    """The neighbourhood of `request.focus` in its session. `jobs` gives the session's jobs,
    whose knobs the admission block is measured with."""
    session = request.session
    node, note = _resolve(reads, session, request.focus)
    conn = reads.reader()
    edges = state.edges_of(conn, session, node.uuid)
    dependents = [
        (source, kind)
        for kind, source, target in edges
        if kind == "depends_on" and target == node.uuid
    ] + [
        (target, kind)
        for kind, source, target in edges
        if kind == "parent_of" and source == node.uuid
    ]
    contradicted_by = [
        source for kind, source, target in edges if kind == "contradicts" and target == node.uuid
    ]
    shown, truncated = _neighbourhood(conn, session, node.uuid, request.depth)
    labels = state.nodes_by_uuid(
        conn, [*(d for d, _ in dependents), *contradicted_by, *(x for e in shown for x in e[1:3])]
    )
    return Inspected(
        node.uuid,
        node.content,
        display_type(node.concept_type),
        node.agent_id,
        node.created_at,
        note,
        len({d for d, _ in dependents}),
        tuple(
            Dependent(
                uuid, quote(labels[uuid].content) if uuid in labels else uuid, EDGE_TYPES[edge]
            )
            for uuid, edge in dependents[:DEPENDENTS_SHOWN]
        ),
        len(dependents) > DEPENDENTS_SHOWN,
        tuple(_contradictor(uuid, labels.get(uuid)) for uuid in contradicted_by),
        tuple(
            NeighbourEdge(hop, source, target, edge, EDGE_TYPES.get(edge, edge))
            for hop, source, target, edge in shown
        ),
        truncated,
        _admission(reads, jobs(), session, node.uuid),
        repo_of_key(node.canonical_key),
    )


def _contradictor(uuid: str, other: Node | None) -> Contradictor:
    if other is None:
        return Contradictor(uuid, None, None, None)
    return Contradictor(uuid, other.content, other.agent_id, other.created_at)


# -- the focus -------------------------------------------------------------------------------


def _listing(nodes: list[Node]) -> str:
    shown = nodes[: limits.MAX_FOCUS_CANDIDATES]
    return "; ".join(f'{n.uuid} "{quote(n.content)}"{_repo(n)}' for n in shown)


def _repo(node: Node) -> str:
    """A scoped path's repository, as a focus listing names it (M-RSC-065)."""
    repo = repo_of_key(node.canonical_key)
    return "" if repo is None else f' (repo "{repo}")'


def _resolve(reads: ReadHandle, session: str, focus: str) -> tuple[Node, str | None]:
    """(the concept, a note on how it was found when not exactly)."""
    conn = reads.reader()
    wanted = focus.strip()
    if is_node_uuid(wanted):
        found = state.node(conn, session, wanted.lower())
        if found is not None and found.node_kind == "concept":
            return found, None
    exact = state.concepts_with_content(conn, session, wanted)
    if len(exact) == 1:
        return exact[0], None
    if len(exact) > 1:
        raise _several(focus, exact)
    if is_short_id(wanted):
        prefixed = [
            n
            for n in state.nodes_with_prefix(conn, session, wanted.lower())
            if n.node_kind == "concept"
        ]
        if len(prefixed) == 1:
            return prefixed[0], None
        if len(prefixed) > 1:
            raise _several(focus, prefixed)
    bounded = state.concept_count(conn, session) > SCAN_CAP
    if bounded:
        matches = state.concepts_containing_among_bounded(
            conn, session, wanted, RECENT_PART, RADIUS_PART, SCAN_CAP
        )
    else:
        matches = state.concepts_containing(conn, session, wanted, 11)
    searched = f" (searched {BOUNDED_NOTE})" if bounded else ""
    if len(matches) == 1:
        note = f'resolved "{quote(focus)}" as a substring'
        if bounded:
            note += f" of {BOUNDED_NOTE}"
        return matches[0], note
    if len(matches) > 1:
        raise _several(focus, matches, searched)
    raise _nothing(reads, session, focus, searched)


def _nothing(reads: ReadHandle, session: str, focus: str, searched: str = "") -> DomainError:
    """The refusal of a focus matching nothing, with the closest concepts as suggestions
    (M-INS-010), so the agent can name one by its id."""
    closest = _closest(reads, session, focus)
    listed = f"; closest: {_listing(closest)}" if closest else ""
    if not closest and state.concept_count(reads.reader(), session) == 0:
        listed = f"; session '{session}' holds no concepts yet"
    return DomainError(
        f"focus \"{quote(focus)}\" matches no concept of session '{session}'{searched}" + listed,
        field="focus",
        rule="must name a concept",
    )


def _closest(reads: ReadHandle, session: str, focus: str) -> list[Node]:
    """Up to 10 concepts nearest the focus, best first, ranked as lambo_recall ranks (keyword,
    meaning and recent legs fused, no graph expansion): a focus sharing no word with any
    concept still gets the nearest by meaning, and failing those the most recent. A read
    only: no access is counted."""
    hits = recall.recall_concepts(
        search_context(reads), session, focus, limits.MAX_FOCUS_CANDIDATES * 2, 0
    )
    nodes = state.nodes_by_uuid(reads.reader(), [hit.node_id for hit in hits])
    concepts = [
        nodes[hit.node_id]
        for hit in hits
        if hit.node_id in nodes and nodes[hit.node_id].node_kind == "concept"
    ]
    return concepts[: limits.MAX_FOCUS_CANDIDATES]


def _several(focus: str, nodes: list[Node], searched: str = "") -> DomainError:
    return DomainError(
        f'focus "{quote(focus)}" matches several concepts{searched}; name one by its id: '
        + _listing(nodes)
        + (
            f" (and {len(nodes) - limits.MAX_FOCUS_CANDIDATES} more)"
            if len(nodes) > limits.MAX_FOCUS_CANDIDATES
            else ""
        ),
        field="focus",
        rule="must name one concept",
    )


# -- the neighbourhood and the admission -----------------------------------------------------


def _neighbourhood(
    conn: sqlite3.Connection, session: str, start: str, depth: int
) -> tuple[list[tuple[int, str, str, str]], bool]:
    """Edges within `depth` hops of `start` (hop, source, target, kind), breadth first, each
    once, at most 200 neighbours in total across every hop (M-INS-024); whether it stopped."""
    seen = {start}
    listed: set[tuple[str, str, str]] = set()
    shown: list[tuple[int, str, str, str]] = []
    frontier: deque[tuple[str, int]] = deque([(start, 0)])
    while frontier:
        here, hop = frontier.popleft()
        if hop >= depth:
            continue
        for kind, source, target in state.edges_of(conn, session, here):
            if (kind, source, target) in listed:
                continue
            other = target if source == here else source
            if other not in seen:
                if len(seen) - 1 >= limits.MAX_INSPECT_NEIGHBOURS:
                    return shown, True
                seen.add(other)
                frontier.append((other, hop + 1))
            listed.add((kind, source, target))
            shown.append((hop + 1, source, target, kind))
    return shown, False


def _admission(reads: ReadHandle, jobs: SessionJobs, session: str, node: str) -> Admission:
    """The admission block measured the way the next cycle measures (M-INS-037): through the
    cycle's reader, every concept's row from the kept counters and this concept's measures."""
    conn = reads.reader()
    now = reads.clock()
    concept = ConceptId(node)
    rows, measures, evidence = columns.admission_inputs(
        conn, session, concept, jobs.knobs, jobs.gc_knobs, now
    )
    return evaluate_over(concept, rows, measures, jobs.knobs, now, evidence)
