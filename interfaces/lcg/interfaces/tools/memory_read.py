"""Agent memory, read side (seed 001): lambo_inspect, lambo_stale and lambo_saints.

The adapters of `lcg.queries.memory_inspect` and `lcg.queries.memory_lists` (ADR 0060): the
arguments checked, one query, its result in the seed's wire shape. Like the write tools they
answer `text` plus `structuredContent` and carry the caller's settled receipts.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from lcg.domain.memory import limits, text
from lcg.domain.memory.canonization import Admission, Status
from lcg.domain.memory.context import quote
from lcg.interfaces.app import App
from lcg.interfaces.tools.memory import (
    AgentId,
    MemoryParams,
    MemoryResult,
    Scope,
    answer,
    capped,
    ranged,
    scoped,
)
from lcg.queries.memory_inspect import Contradictor, Inspected, InspectRequest, inspect_memory
from lcg.queries.memory_lists import SaintsRequest, StaleRequest, saints, stale_citations


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


def lambo_inspect(app: App, params: InspectParams) -> MemoryResult:
    """Look at the neighbourhood around a concept: its type, whether it is canonical, its blast
    radius, its dependents, its contradictions and its edges both ways to depth hops; focus is
    its text, its 8-hex short id or its node id (then a single substring match; past 2,000
    concepts, among the 1,500 most recent and the 500 others with the largest blast radius, as
    the result says)."""
    addressed, service = scoped(app, params.agent_id, params.scope)
    text.check_text("focus", params.focus)
    request = InspectRequest(service.session, params.focus, params.depth)
    found = inspect_memory(app.reads, service.jobs_or_fail, request)
    return answer(addressed, params.agent_id, _inspect_text(found, params.depth), _inspected(found))


def _inspect_text(found: Inspected, depth: int) -> str:
    radius = found.blast_radius
    kind = found.concept_type
    if found.repo_scope is not None:
        kind += f', repo "{found.repo_scope}"'  # M-RSC-062
    lines = [f"{found.content} [{kind}] (id {found.node_id[:8]}, blast radius {radius})"]
    lines.append(f"node {found.node_id}, written by {found.agent_id} at {found.created_at}")
    if found.resolved:
        lines.append(found.resolved)
    lines.append(f"dependents ({radius}):")
    for dependent in found.dependents:
        lines.append(f'  - {dependent.node_id[:8]} "{dependent.label}" ({dependent.edge_type})')
    if found.contradicted_by:
        lines.append(f"contradicted by ({len(found.contradicted_by)}):")
        lines.extend(_contradictor_line(other) for other in found.contradicted_by)
    lines.append(f"edges to depth {depth} ({len(found.edges)}):")
    for edge in found.edges:
        lines.append(
            f"  {edge.source[:8]} -[{edge.kind}]-> {edge.target[:8]}"
            + (f"  (hop {edge.hop})" if edge.hop > 1 else "")
        )
    if found.neighbours_truncated:
        lines.append(f"(the neighbourhood stops at {limits.MAX_INSPECT_NEIGHBOURS} neighbours)")
    lines.extend(found.admission.lines())
    return "\n".join(lines)


def _contradictor_line(other: Contradictor) -> str:
    if other.content is None:  # gone since
        return f'  - {other.node_id[:8]} "{other.node_id}"'
    return (
        f'  - {other.node_id[:8]} "{quote(other.content)}" ({other.agent_id}, {other.created_at})'
    )


def _inspected(found: Inspected) -> dict[str, Any]:
    content: dict[str, Any] = {
        "node_id": found.node_id,
        "content": found.content,
        "concept_type": found.concept_type,
        "is_canonical": found.admission.status is Status.CANONICAL,
        "blast_radius": found.blast_radius,
        "dependents": [
            {"node_id": d.node_id, "label": d.label, "edge_type": d.edge_type}
            for d in found.dependents
        ],
        "dependents_truncated": found.dependents_truncated,
        "contradicted_by": [other.node_id for other in found.contradicted_by],
        "edges": [
            {
                "source": edge.source,
                "target": edge.target,
                "kind": edge.kind,
                "edge_type": edge.edge_type,
                "hop": edge.hop,
            }
            for edge in found.edges
        ],
        "neighbours_truncated": found.neighbours_truncated,
        "admission": admission_payload(found.admission),
        "warnings": [],
    }
    if found.resolved:
        content["resolved"] = found.resolved
    if found.repo_scope is not None:
        content["repo_scope"] = found.repo_scope
    return content


def lambo_stale(app: App, params: StaleParams) -> MemoryResult:
    """List direct dependencies that rest on a contradicted concept in this session: each row
    the dependent's id, a content snippet and the cited concept's id, at most 50 a page with
    the total; offset gives the next page. Same contradiction rules as recall's warnings."""
    addressed, service = scoped(app, params.agent_id, params.scope)
    page = stale_citations(app.reads, StaleRequest(service.session, params.offset))
    shown = [
        {
            "node_id": row.node_id,
            "content": row.content,
            "cited_id": row.cited_id,
            "contradicted_by": row.contradicted_by,
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
        addressed,
        params.agent_id,
        "\n".join(lines),
        {"rows": shown, "total": page.total, "offset": page.offset, "warnings": []},
    )


def lambo_saints(app: App, params: SaintsParams) -> MemoryResult:
    """List the session's canonical memories, the concepts promoted to canonical facts: node
    id, content, type, blast radius, access count and creation time of each."""
    addressed, service = scoped(app, params.agent_id, params.scope)
    listed = [
        {
            "node_id": saint.node_id,
            "content": saint.content,
            "concept_type": saint.concept_type,
            "blast_radius": saint.blast_radius,
            "access_count": saint.access_count,
            "created_at": _rfc3339(saint.created_at),
        }
        for saint in saints(app.reads, SaintsRequest(service.session))
    ]
    count = len(listed)
    summary = (
        f"{count} canonical memor{'y' if count == 1 else 'ies'} in session '{service.session}'"
    )
    rows = [
        f"  {s['content']} [{s['concept_type']}, canonical]  blast_radius={s['blast_radius']}"
        f"  accesses={s['access_count']}  since {s['created_at']}"
        for s in listed
    ]
    return answer(
        addressed,
        params.agent_id,
        "\n".join([summary, *rows]),
        {"summary": summary, "saints": listed, "warnings": []},
    )


def _rfc3339(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


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
