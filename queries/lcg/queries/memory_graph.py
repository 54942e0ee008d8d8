"""A session's concept graph for the portal (issue 29): its concepts and the edges between
them, or one concept's neighbourhood, bounded, each node with its type and canonization status.

Interactions and their bookkeeping edges (derives, precedes) are left out as lambo_inspect
leaves them out; semantic edges are kept (they are what joins near-duplicates)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from lcg.projections.canonization import state as canon
from lcg.projections.memory import state

HIDDEN_KINDS = ("derives", "precedes")  # interactions' edges: not drawn


@dataclass(frozen=True, slots=True)
class GraphNode:
    node_id: str
    content: str
    concept_type: str
    status: str  # None | Candidate | Venerable | Canonical


@dataclass(frozen=True, slots=True)
class GraphEdge:
    source: str
    target: str
    kind: str


@dataclass(frozen=True, slots=True)
class Graph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    total_nodes: int  # the session's concepts (or the neighbourhood's), before the bound
    truncated: bool


def session_graph(conn: sqlite3.Connection, session: str, limit: int, offset: int = 0) -> Graph:
    """The session's concepts `offset`..`offset+limit` (by write order) and the edges among
    them."""
    (total,) = conn.execute(
        "SELECT COUNT(*) FROM memory_nodes WHERE group_id=? AND node_kind='concept'", (session,)
    ).fetchone()
    rows = conn.execute(
        "SELECT uuid, content, concept_type FROM memory_nodes WHERE group_id=? AND"
        " node_kind='concept' ORDER BY seq, uuid LIMIT ? OFFSET ?",
        (session, limit, offset),
    ).fetchall()
    return _graph(conn, session, rows, int(total))


def neighbourhood(
    conn: sqlite3.Connection, session: str, focus: str, hops: int, limit: int, offset: int = 0
) -> Graph:
    """`focus` and the concepts within `hops` edges of it, either way, nearest first: at most
    `limit` of them from `offset`."""
    seen = [focus]
    known = {focus}
    frontier = [focus]
    for _ in range(hops):
        nearby: list[str] = []
        for start in range(0, len(frontier), 400):
            part = frontier[start : start + 400]
            marks = ",".join("?" * len(part))
            hidden = ",".join("?" * len(HIDDEN_KINDS))
            for source, target in conn.execute(
                f"SELECT source, target FROM memory_edges WHERE group_id=? AND kind NOT IN"
                f" ({hidden}) AND (source IN ({marks}) OR target IN ({marks}))",
                (session, *HIDDEN_KINDS, *part, *part),
            ):
                for other in (str(source), str(target)):
                    if other not in known:
                        known.add(other)
                        nearby.append(other)
        seen.extend(sorted(nearby))
        frontier = nearby
    rows: list[tuple[str, str, str | None]] = []
    for start in range(0, len(seen), 400):
        part = seen[start : start + 400]
        marks = ",".join("?" * len(part))
        rows.extend(
            conn.execute(
                f"SELECT uuid, content, concept_type FROM memory_nodes WHERE group_id=? AND"
                f" node_kind='concept' AND uuid IN ({marks})",
                (session, *part),
            ).fetchall()
        )
    order = {uuid: index for index, uuid in enumerate(seen)}
    rows.sort(key=lambda row: order[row[0]])
    return _graph(conn, session, rows[offset : offset + limit], len(rows))


def _graph(
    conn: sqlite3.Connection,
    session: str,
    rows: list[tuple[str, str, str | None]],
    total: int,
) -> Graph:
    ids = [str(row[0]) for row in rows]
    statuses = canon.statuses(conn, ids) if ids else {}
    nodes = tuple(
        GraphNode(str(uuid), str(content), str(kind or "entity"), statuses.get(str(uuid), "None"))
        for uuid, content, kind in rows
    )
    members = set(ids)
    edges: list[GraphEdge] = []
    hidden = ",".join("?" * len(HIDDEN_KINDS))
    for start in range(0, len(ids), 400):
        part = ids[start : start + 400]
        marks = ",".join("?" * len(part))
        for kind, source, target in conn.execute(
            f"SELECT kind, source, target FROM memory_edges WHERE group_id=? AND kind NOT IN"
            f" ({hidden}) AND source IN ({marks}) ORDER BY kind, source, target",
            (session, *HIDDEN_KINDS, *part),
        ):
            if str(target) in members:
                edges.append(GraphEdge(str(source), str(target), str(kind)))
    return Graph(nodes, tuple(edges), total, total > len(nodes))


def session_counts(conn: sqlite3.Connection, session: str) -> dict[str, int]:
    """Nodes, concepts, interactions and edges of a session (0s: no memory session)."""
    return state.counts(conn, session)


def nodes_of(conn: sqlite3.Connection, ids: list[str]) -> dict[str, GraphNode]:
    """The concepts among `ids` (any session), with their status."""
    wanted = list(dict.fromkeys(ids))
    found = {
        uuid: node
        for uuid, node in state.nodes_by_uuid(conn, wanted).items()
        if node.node_kind == "concept"
    }
    statuses = canon.statuses(conn, list(found)) if found else {}
    return {
        uuid: GraphNode(uuid, node.content, node.concept_type or "entity", statuses[uuid])
        for uuid, node in found.items()
    }


def with_status(
    conn: sqlite3.Connection, session: str, wanted: tuple[str, ...], limit: int
) -> list[tuple[str, str]]:
    """(node id, content) of the session's concepts at one of the `wanted` statuses."""
    marks = ",".join("?" * len(wanted))
    rows = conn.execute(
        f"SELECT c.node_id, n.content FROM canon_nodes c JOIN memory_nodes n ON n.uuid ="
        f" c.node_id WHERE c.group_id=? AND c.status IN ({marks}) ORDER BY c.node_id LIMIT ?",
        (session, *wanted, limit),
    ).fetchall()
    return [(str(node), str(content)) for node, content in rows]


RECEIPTS_SHOWN = 50


def receipts_of(conn: sqlite3.Connection, node_id: str) -> list[dict[str, str | None]]:
    """The write receipts whose outcome names the concept, newest first (at most 50)."""
    rows = conn.execute(
        "SELECT receipt, agent_id, tool, state, accepted_at, settled_at FROM memory_writes"
        " WHERE instr(COALESCE(outcome, ''), ?) > 0 ORDER BY intent_seq DESC LIMIT ?",
        (node_id, RECEIPTS_SHOWN),
    ).fetchall()
    keys = ("receipt", "agent_id", "tool", "state", "accepted_at", "settled_at")
    return [dict(zip(keys, row, strict=True)) for row in rows]
