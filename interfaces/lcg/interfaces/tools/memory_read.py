"""Agent memory, read side (seed 001): lambo_inspect and lambo_saints.

Reads go to the memory projection through this thread's read connection; like the write
tools they answer `text` plus `structuredContent` and carry the caller's settled receipts.
Canonization arrives with issue 13: until then no concept is Canonical, saints lists none,
and inspect's admission block names the policy and says that no cycle has run.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from lcg.domain.errors import DomainError
from lcg.domain.memory import evidence, limits, text
from lcg.domain.memory.canonization import Admission, Status, evaluate_over
from lcg.domain.memory.context import quote
from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.identity import is_node_uuid, is_short_id
from lcg.interfaces.app import App
from lcg.interfaces.memory_service import MemoryService
from lcg.interfaces.tools.memory import (
    AgentId,
    MemoryParams,
    MemoryResult,
    Scope,
    answer,
    capped,
    display_type,
    ranged,
    service_of,
)
from lcg.interfaces.tools.search import search_context
from lcg.projections.canonization import measure
from lcg.projections.canonization import state as canon
from lcg.projections.memory import evidence as memory_evidence
from lcg.projections.memory import state
from lcg.projections.memory.state import Node
from lcg.queries import recall

SCAN_CAP = 2_000  # concepts the substring leg scans before it bounds itself (M-INS-008)
DEPENDENTS_SHOWN = 50
EDGE_TYPES = {  # the seed's edge classes
    "depends_on": "Dependency",
    "parent_of": "Hierarchical",
    "produces": "Causal",
    "modifies": "Causal",
    "contradicts": "Contradicts",
}


class InspectParams(MemoryParams):
    agent_id: AgentId
    focus: str = Field(
        json_schema_extra=capped(limits.MAX_STRING_BYTES),
        description="Concept text, its 8-hex short id or its full node id.",
    )
    depth: int = Field(
        limits.INSPECT_DEPTH_DEFAULT,
        json_schema_extra=ranged(limits.INSPECT_DEPTH),
        description="Hops of neighbourhood to show (0..5).",
    )
    scope: Scope | None = None


class StaleParams(MemoryParams):
    agent_id: AgentId
    scope: Scope | None = None
    offset: int | None = Field(
        None,
        json_schema_extra=ranged(limits.STALE_OFFSET),
        description="The next page: skip this many rows (pages of 50).",
    )


class SaintsParams(MemoryParams):
    agent_id: AgentId
    scope: Scope | None = None


def _listing(nodes: list[Node]) -> str:
    shown = nodes[: limits.MAX_FOCUS_CANDIDATES]
    return "; ".join(f'{n.uuid} "{quote(n.content)}"' for n in shown)


def _resolve(app: App, session: str, focus: str) -> tuple[Node, str | None]:
    """(the concept, a note on how it was found when not exactly)."""
    conn = app.workspace.reader()
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
    matches = state.concepts_containing(conn, session, wanted, SCAN_CAP if bounded else 11)
    if len(matches) == 1:
        note = f'resolved "{quote(focus)}" as a substring'
        if bounded:
            note += f" of the {SCAN_CAP:,} most recent concepts (past the scan cap)"
        return matches[0], note
    if len(matches) > 1:
        raise _several(focus, matches)
    raise _nothing(app, session, focus)


def _nothing(app: App, session: str, focus: str) -> DomainError:
    """The refusal of a focus matching nothing, with the closest concepts as suggestions
    (M-INS-010), so the agent can name one by its id."""
    closest = _closest(app, session, focus)
    listed = f"; closest: {_listing(closest)}" if closest else ""
    if not closest and state.concept_count(app.workspace.reader(), session) == 0:
        listed = f"; session '{session}' holds no concepts yet"
    return DomainError(
        f"focus \"{quote(focus)}\" matches no concept of session '{session}'" + listed,
        field="focus",
        rule="must name a concept",
    )


def _closest(app: App, session: str, focus: str) -> list[Node]:
    """Up to 10 concepts nearest the focus, best first, ranked as lambo_recall ranks (keyword,
    meaning and recent legs fused, no graph expansion): a focus sharing no word with any
    concept still gets the nearest by meaning, and failing those the most recent. A read
    only: no access is counted."""
    hits = recall.recall_concepts(
        search_context(app), session, focus, limits.MAX_FOCUS_CANDIDATES * 2, 0
    )
    nodes = state.nodes_by_uuid(app.workspace.reader(), [hit.node_id for hit in hits])
    concepts = [
        nodes[hit.node_id]
        for hit in hits
        if hit.node_id in nodes and nodes[hit.node_id].node_kind == "concept"
    ]
    return concepts[: limits.MAX_FOCUS_CANDIDATES]


def _several(focus: str, nodes: list[Node]) -> DomainError:
    return DomainError(
        f'focus "{quote(focus)}" matches several concepts; name one by its id: '
        + _listing(nodes)
        + (
            f" (and {len(nodes) - limits.MAX_FOCUS_CANDIDATES} more)"
            if len(nodes) > limits.MAX_FOCUS_CANDIDATES
            else ""
        ),
        field="focus",
        rule="must name one concept",
    )


def lambo_inspect(app: App, params: InspectParams) -> MemoryResult:
    """Look at the neighbourhood around a concept: its type, whether it is canonical, its blast
    radius, its dependents, its contradictions and its edges both ways to depth hops; focus is
    its text, its 8-hex short id or its node id (then a single substring match)."""
    service = service_of(app, params.agent_id, params.scope)
    text.check_text("focus", params.focus)
    node, note = _resolve(app, service.session, params.focus)
    conn = app.workspace.reader()
    edges = state.edges_of(conn, service.session, node.uuid)
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
    shown, truncated = _neighbourhood(conn, service.session, node.uuid, params.depth)
    labels = state.nodes_by_uuid(
        conn, [*(d for d, _ in dependents), *contradicted_by, *(x for e in shown for x in e[1:3])]
    )
    radius = len({d for d, _ in dependents})
    concept_type = display_type(node.concept_type)
    lines = [f"{node.content} [{concept_type}] (id {node.uuid[:8]}, blast radius {radius})"]
    lines.append(f"node {node.uuid}, written by {node.agent_id} at {node.created_at}")
    if note:
        lines.append(note)
    lines.append(f"dependents ({radius}):")
    dependent_rows = []
    for uuid, edge in dependents[:DEPENDENTS_SHOWN]:
        label = quote(labels[uuid].content) if uuid in labels else uuid
        lines.append(f'  - {uuid[:8]} "{label}" ({EDGE_TYPES[edge]})')
        dependent_rows.append({"node_id": uuid, "label": label, "edge_type": EDGE_TYPES[edge]})
    if contradicted_by:
        lines.append(f"contradicted by ({len(contradicted_by)}):")
        for uuid in contradicted_by:
            other = labels.get(uuid)
            lines.append(
                f'  - {uuid[:8]} "{quote(other.content) if other else uuid}"'
                + (f" ({other.agent_id}, {other.created_at})" if other else "")
            )
    lines.append(f"edges to depth {params.depth} ({len(shown)}):")
    edge_rows = []
    for hop, source, target, edge in shown:
        lines.append(
            f"  {source[:8]} -[{edge}]-> {target[:8]}" + (f"  (hop {hop})" if hop > 1 else "")
        )
        edge_rows.append(
            {
                "source": source,
                "target": target,
                "kind": edge,
                "edge_type": EDGE_TYPES.get(edge, edge),
                "hop": hop,
            }
        )
    if truncated:
        lines.append(f"(the neighbourhood stops at {limits.MAX_INSPECT_NEIGHBOURS} neighbours)")
    admission = _admission(app, service, node.uuid)
    lines.extend(admission.lines())
    content: dict[str, Any] = {
        "node_id": node.uuid,
        "content": node.content,
        "concept_type": concept_type,
        "is_canonical": admission.status is Status.CANONICAL,
        "blast_radius": radius,
        "dependents": dependent_rows,
        "dependents_truncated": len(dependents) > DEPENDENTS_SHOWN,
        "contradicted_by": contradicted_by,
        "edges": edge_rows,
        "neighbours_truncated": truncated,
        "admission": admission_payload(admission),
        "warnings": [],
    }
    if note:
        content["resolved"] = note
    return answer(service, params.agent_id, "\n".join(lines), content)


def _neighbourhood(
    conn: Any, session: str, start: str, depth: int
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


def lambo_stale(app: App, params: StaleParams) -> MemoryResult:
    """List direct dependencies that rest on a contradicted concept in this session: each row
    the dependent's id, a content snippet and the cited concept's id, at most 50 a page with
    the total; offset gives the next page. Same contradiction rules as recall's warnings."""
    service = service_of(app, params.agent_id, params.scope)
    conn = app.workspace.reader()
    targets = memory_evidence.contradicted_targets(conn, service.session)
    found = memory_evidence.load(conn, service.session, targets)
    rows = evidence.stale_rows(
        found.concepts.values(), found.contradictions, found.support, app.now()
    )
    page = evidence.stale_page(rows, evidence.check_stale_offset(params.offset))
    nodes = state.nodes_by_uuid(conn, [row.dependent for row in page.rows])
    shown = [
        {
            "node_id": row.dependent,
            "content": quote(nodes[row.dependent].content) if row.dependent in nodes else "",
            "cited_id": row.cited,
            "contradicted_by": row.contradiction.source,
        }
        for row in page.rows
    ]
    first = page.offset + 1 if shown else page.offset
    lines = [
        f"{page.total} stale citation(s) in session '{service.session}'"
        + (f"; rows {first}-{page.offset + len(shown)}" if shown else "")
    ]
    lines += [
        f'  - {row["node_id"]} "{row["content"]}" rests on {row["cited_id"]}, contradicted by'
        f" {str(row['contradicted_by'])[:8]}"
        for row in shown
    ]
    return answer(
        service,
        params.agent_id,
        "\n".join(lines),
        {"rows": shown, "total": page.total, "offset": page.offset, "warnings": []},
    )


def lambo_saints(app: App, params: SaintsParams) -> MemoryResult:
    """List the session's canonical memories, the concepts promoted to canonical facts: node
    id, content, type, blast radius, access count and creation time of each."""
    service = service_of(app, params.agent_id, params.scope)
    conn = app.workspace.reader()
    canonical = canon.canonical(conn, service.session)
    nodes = state.nodes_by_uuid(conn, canonical)
    radii = state.blast_radii(conn, canonical)
    # canonization.md §5: live blast radius descending, created_at ascending, id ascending.
    ordered = sorted(
        (nodes[uuid] for uuid in canonical if uuid in nodes),
        key=lambda n: (-radii[n.uuid], n.created_at, n.uuid),
    )
    saints = [
        {
            "node_id": n.uuid,
            "content": n.content,
            "concept_type": display_type(n.concept_type),
            "blast_radius": radii[n.uuid],
            "access_count": n.access_count,
            "created_at": _rfc3339(n.created_at),
        }
        for n in ordered
    ]
    count = len(saints)
    summary = (
        f"{count} canonical memor{'y' if count == 1 else 'ies'} in session '{service.session}'"
    )
    rows = [
        f"  {s['content']} [{s['concept_type']}, canonical]  blast_radius={s['blast_radius']}"
        f"  accesses={s['access_count']}  since {s['created_at']}"
        for s in saints
    ]
    return answer(
        service,
        params.agent_id,
        "\n".join([summary, *rows]),
        {"summary": summary, "saints": saints, "warnings": []},
    )


def _rfc3339(text: str) -> str:
    return datetime.fromisoformat(text).astimezone(UTC).isoformat().replace("+00:00", "Z")


def _admission(app: App, service: MemoryService, node: str) -> Admission:
    """The admission block measured the way the next cycle measures (M-INS-037): through the
    cycle's reader, every concept's row from the kept counters and this concept's measures."""
    jobs = service.jobs_or_fail()
    conn = app.workspace.reader()
    now = app.now()
    concept = ConceptId(node)
    rows, measures, evidence = measure.admission_inputs(
        conn, service.session, concept, jobs.knobs, jobs.gc_knobs, now
    )
    return evaluate_over(concept, rows, measures, jobs.knobs, now, evidence)


def admission_payload(admission: Admission) -> dict[str, Any]:
    """`admission` in structuredContent (canonization.md §5); `next` absent for Canonical."""
    payload: dict[str, Any] = {
        "policy": admission.policy.value,
        "status": admission.status.value,
        "eligible": admission.eligible,
        "checks": [
            {
                "gate": c.gate,
                "stage": c.stage,
                "current": c.current,
                "bar": c.bar,
                "comparison": c.comparison,
                "met": c.met,
            }
            for c in admission.checks
        ],
        "reasons": list(admission.reasons),
    }
    if admission.next is not None:
        payload["next"] = admission.next.value
    if admission.solo is not None:
        payload["solo"] = {
            **{k: v for k, v in dataclasses.asdict(admission.solo).items() if k != "band"},
            "band": admission.solo.band.value,
        }
    return payload
