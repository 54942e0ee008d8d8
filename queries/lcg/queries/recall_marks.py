"""A recall hit's marks from the live graph (seed 001): its canonization (the Canonical mark
and blast radius, a supersession's history line) and its conflict and high-risk markers."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import datetime

from lcg.domain.memory import context, markers
from lcg.domain.memory.context import HitView
from lcg.projections.canonization import state as canon
from lcg.projections.memory import state


def marked(
    conn: sqlite3.Connection, views: list[HitView], now: datetime, agent: str
) -> tuple[list[HitView], list[str]]:
    """Conflict and high-risk markers first on each hit's block (lcg.domain.memory.markers),
    and the same lines for `warnings`."""
    ids = [view.node_id for view in views]
    since = (now - markers.WINDOW).isoformat()
    recent = state.recent_writes(conn, ids, since)
    if not any(recent.values()):
        return views, []
    statuses = canon.statuses(conn, ids)
    radii = state.blast_radii(conn, ids)
    out: list[HitView] = []
    lines: list[str] = []
    for view in views:
        writes = [
            markers.RecentWrite(agent_id, datetime.fromisoformat(at), kind)
            for agent_id, at, kind in recent[view.node_id]
        ]
        found = [
            line
            for line in (
                markers.conflict(writes, now, agent),
                markers.high_risk(
                    view.content, statuses[view.node_id], radii[view.node_id], writes, now
                ),
            )
            if line is not None
        ]
        lines.extend(found)
        out.append(replace(view, warning_lines=(*found, *view.warning_lines)) if found else view)
    return out, lines


def canonized(conn: sqlite3.Connection, session: str, views: list[HitView]) -> list[HitView]:
    """Hits with their canonization: Canonical ones marked, with their live blast radius
    (canonization.md §3: recall uses the live graph, no age floor), and a concept demoted by
    supersession, while it is not Canonical, with its `⤓ Superseded` history line (§6)."""
    ids = [view.node_id for view in views]
    held_by = canon.node_states_of(conn, session, ids)  # one query
    states = {node: held_by.get(node, canon.NodeState()) for node in ids}
    canonical = [node for node in ids if states[node].status == "Canonical"]
    radii = state.blast_radii(conn, canonical)
    superseding = [
        s.superseded_by
        for s in states.values()
        if s.status != "Canonical" and s.demotion_cause == "supersession" and s.superseded_by
    ]
    named = state.nodes_by_uuid(conn, [node for node in superseding if node is not None])
    out: list[HitView] = []
    for view in views:
        held = states[view.node_id]
        if held.status == "Canonical":
            out.append(replace(view, is_canonical=True, blast_radius=radii[view.node_id]))
        elif held.demotion_cause == "supersession" and held.superseded_by is not None:
            by = named.get(held.superseded_by)
            assert held.last_demotion_at is not None
            line = context.superseded_line(
                held.last_demotion_at, None if by is None else by.content, held.superseded_by
            )
            out.append(replace(view, warning_lines=(*view.warning_lines, line)))
        else:
            out.append(view)
    return out
