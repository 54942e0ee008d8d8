"""Cross-group pointer handlers: bind a new edge's foreign endpoints, rebind a source group's
pointers; load what the pure deciders of `lcg.domain.cross_group` need, decide, append."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from lcg.commands.writer import WriteContext
from lcg.domain import cross_group, rules
from lcg.domain.commands import (
    AddCrossGroupEdge,
    CrossGroupEndpoint,
    NameEndpoint,
    PurgeGroup,
    RebindPointers,
)
from lcg.domain.cross_group import CrossGroupEdgeResult, EndpointLookup, RebindResult
from lcg.domain.ids import GroupId
from lcg.projections.graph import state


def _matches(ctx: WriteContext, group_id: str, name: str) -> list[str]:
    """The live entities the name matches in the group: two are enough to be ambiguous."""
    return [e.uuid for e in state.live_entities_named(ctx.conn, group_id, name, limit=2)]


def _lookup(
    ctx: WriteContext, command: AddCrossGroupEdge, endpoint: CrossGroupEndpoint
) -> EndpointLookup:
    if isinstance(endpoint, NameEndpoint):
        source = endpoint.source_group_id
        # an edge of the source group itself lands there, one seq past what is applied now
        applied = ctx.applied_seq(source) + (1 if source == command.group_id else 0)
        return EndpointLookup(
            pointer=cross_group.bind(
                source,
                endpoint.endpoint_name,
                _matches(ctx, source, endpoint.endpoint_name),
                applied,
            )
        )
    return EndpointLookup(entity=state.entity_by_uuid(ctx.conn, endpoint.uuid))


def add_cross_group_edge(ctx: WriteContext, command: AddCrossGroupEdge) -> CrossGroupEdgeResult:
    """Bind each foreign endpoint against its source group now, decide (a self-loop or a
    duplicate is refused, as a rebind would invalidate it), append the edge."""
    event, result = cross_group.decide_add_cross_group_edge(
        command,
        _lookup(ctx, command, command.source),
        _lookup(ctx, command, command.target),
        lambda s, p, t: state.active_edge(ctx.conn, command.group_id, s, p, t),
    )
    ctx.append(command.group_id, (event,))
    return result


def rebind_pointers(ctx: WriteContext, command: RebindPointers) -> RebindResult:
    """Re-resolve the pointers naming the source group; one event per edge group changed."""
    group = command.source_group_id
    edges = state.pointed_edges(ctx.conn, group)
    applied = ctx.applied_seq(group)
    names = {  # only the pointers the staleness gate lets through are looked up
        rules.name_key(p["endpoint_name"]): p["endpoint_name"]
        for edge in edges
        for p in (edge.src, edge.dst)
        if p is not None and p["source_group_id"] == group and not cross_group.gated(p, applied)
    }
    matches = {key: _matches(ctx, group, name) for key, name in names.items()}
    events, result = cross_group.decide_rebind(
        command,
        edges,
        matches,
        applied,
        lambda g, s, p, t: state.active_edge(ctx.conn, g, s, p, t),
    )
    for edge_group, event in events:
        ctx.append(GroupId(edge_group), (event,))
    return result


def unbind_purged(ctx: WriteContext, command: PurgeGroup) -> dict[GroupId, int]:
    """After the group's purge in this batch: unbind the other groups' pointers naming it,
    one event per edge group; the pointers unbound per edge group (P-122)."""
    edges = state.pointed_edges(ctx.conn, command.group_id)
    events, impacts = cross_group.decide_unbind_purged(command.group_id, edges, command.now)
    for edge_group, event in events:
        ctx.append(edge_group, (event,))
    return impacts


def purge_impacts(conn: sqlite3.Connection, group_id: GroupId, now: datetime) -> dict[GroupId, int]:
    """What unbind_purged would unbind (a dry run of knowledge_delete_by_group)."""
    edges = [e for e in state.pointed_edges(conn, group_id) if e.group_id != group_id]
    return cross_group.decide_unbind_purged(group_id, edges, now)[1]
