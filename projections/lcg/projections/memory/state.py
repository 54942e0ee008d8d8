"""Reads of the memory projection that the command side decides with (ADR 0026)."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from lcg.domain.memory.records import MemoryRequest, WriteOutcome

# A write's state while it is failed for a transient cause and owed a replay by the next
# server on its session (ADR 0108); its receipt answers failed where it failed.
FAILED_TRANSIENT = "failed_transient"

_NODE = (
    "SELECT uuid, node_kind, content, concept_type, canonical_key, agent_id, created_at,"
    " about_time, access_count FROM memory_nodes"
)


@dataclass(frozen=True, slots=True)
class Node:
    """A concept or an interaction of a session."""

    uuid: str
    node_kind: str  # concept | interaction
    content: str
    concept_type: str | None
    canonical_key: str | None
    agent_id: str
    created_at: str
    about_time: str
    access_count: int = 0  # recalls that returned it (ADR 0027)


def _nodes(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> list[Node]:
    rows = conn.execute(f"{_NODE} WHERE {where} ORDER BY uuid", params).fetchall()
    return [Node(*row) for row in rows]


def node(conn: sqlite3.Connection, group: str, uuid: str) -> Node | None:
    found = _nodes(conn, "group_id=? AND uuid=?", (group, uuid))
    return found[0] if found else None


def nodes_with_prefix(conn: sqlite3.Connection, group: str, prefix: str) -> list[Node]:
    """Nodes whose uuid starts with `prefix` (a short id: 8 lower-case hex characters)."""
    return _nodes(conn, "group_id=? AND uuid >= ? AND uuid < ?", (group, prefix, prefix + "g"))


# `+node_kind` keeps SQLite from answering these two through memory_nodes_kind (group_id,
# node_kind, seq), which it prefers with no statistics: that scans every concept of the
# session for each derive. The key and content indexes find the one or two rows.
def concepts_with_content(conn: sqlite3.Connection, group: str, content: str) -> list[Node]:
    return _nodes(conn, "group_id=? AND content=? AND +node_kind='concept'", (group, content))


def concepts_with_key(conn: sqlite3.Connection, group: str, key: str) -> list[Node]:
    """Concepts whose canonical key is `key` (observations have none: never matched by key)."""
    return _nodes(conn, "group_id=? AND canonical_key=? AND +node_kind='concept'", (group, key))


def images_among(conn: sqlite3.Connection, group: str, uuids: Sequence[str]) -> set[str]:
    """Which of these concepts are image concepts (ADR 0095): never merged by similarity, no
    text concept merged into them, never a replacement candidate."""
    if not uuids:
        return set()
    marks = ",".join("?" * len(uuids))
    rows = conn.execute(
        f"SELECT node_id FROM memory_images WHERE group_id=? AND node_id IN ({marks})",
        (group, *uuids),
    )
    return {str(row[0]) for row in rows}


def edge_uuid(
    conn: sqlite3.Connection, group: str, kind: str, source: str, target: str
) -> str | None:
    row = conn.execute(
        "SELECT uuid FROM memory_edges WHERE group_id=? AND kind=? AND source=? AND target=?",
        (group, kind, source, target),
    ).fetchone()
    return None if row is None else str(row[0])


def reaches(
    conn: sqlite3.Connection, group: str, start: str, goal: str, kinds: Iterable[str]
) -> bool:
    """Whether a path of `kinds` edges leads from `start` to `goal` (cycle checks)."""
    if start == goal:
        return True
    kinds = tuple(kinds)
    marks = ",".join("?" * len(kinds))
    row = conn.execute(
        "WITH RECURSIVE walk(node) AS (SELECT ? UNION SELECT e.target FROM memory_edges e"
        f" JOIN walk ON e.source = walk.node WHERE e.group_id=? AND e.kind IN ({marks}))"
        " SELECT 1 FROM walk WHERE node=? LIMIT 1",
        (start, group, *kinds, goal),
    ).fetchone()
    return row is not None


@dataclass(frozen=True, slots=True)
class WriteRow:
    """One acknowledged write: its intent and, once settled, its outcome."""

    receipt: str
    group_id: str
    agent_id: str
    tool: str
    state: str  # pending | applied | failed | failed_transient (owed a replay, ADR 0108)
    intent_seq: int
    accepted_at: str
    request: MemoryRequest
    event_time: str | None
    summary: str | None
    outcome: WriteOutcome | None
    after_restart: bool


_WRITE = (
    "SELECT receipt, group_id, agent_id, tool, state, intent_seq, accepted_at, request,"
    " event_time, summary, outcome, after_restart FROM memory_writes"
)


def _write(row: tuple[Any, ...]) -> WriteRow:
    return WriteRow(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        MemoryRequest.from_wire(orjson.loads(row[7])),
        row[8],
        row[9],
        None if row[10] is None else WriteOutcome.from_wire(orjson.loads(row[10])),
        bool(row[11]),
    )


def write(conn: sqlite3.Connection, receipt: str) -> WriteRow | None:
    row = conn.execute(f"{_WRITE} WHERE receipt=?", (receipt,)).fetchone()
    return None if row is None else _write(row)


def pending_writes(conn: sqlite3.Connection, limit: int = 256) -> list[WriteRow]:
    """Intents without an outcome, oldest first per session (their stream order), except in
    a session a bounded replay pins (its intents wait for the pin's release)."""
    rows = conn.execute(
        f"{_WRITE} WHERE state='pending' AND group_id NOT IN (SELECT group_id FROM"
        " projection_positions WHERE pinned_to IS NOT NULL) ORDER BY intent_seq, group_id"
        " LIMIT ?",
        (limit,),
    ).fetchall()
    return [_write(row) for row in rows]


def replays_owed(conn: sqlite3.Connection, excluding: Collection[str] = ()) -> list[WriteRow]:
    """The writes failed for a transient cause and owed their replay (ADR 0108), but those
    `excluding` names, in stream order per session, except in a session a bounded replay
    pins."""
    rows = conn.execute(
        f"{_WRITE} WHERE state=? AND group_id NOT IN (SELECT group_id FROM"
        " projection_positions WHERE pinned_to IS NOT NULL) ORDER BY intent_seq, group_id",
        (FAILED_TRANSIENT,),
    ).fetchall()
    return [_write(row) for row in rows if row[0] not in excluding]


def counts(conn: sqlite3.Connection, group: str) -> dict[str, int]:
    """Nodes, concepts, interactions and edges of a session."""
    concepts, interactions = conn.execute(
        "SELECT COALESCE(SUM(node_kind='concept'), 0), COALESCE(SUM(node_kind='interaction'), 0)"
        " FROM memory_nodes WHERE group_id=?",
        (group,),
    ).fetchone()
    (edges,) = conn.execute(
        "SELECT COUNT(*) FROM memory_edges WHERE group_id=?", (group,)
    ).fetchone()
    return {
        "node_count": int(concepts) + int(interactions),
        "concept_count": int(concepts),
        "interaction_count": int(interactions),
        "edge_count": int(edges),
    }


def blast_radius(conn: sqlite3.Connection, uuid: str) -> int:
    """The concepts that depend on this one: depends_on edges to it and its parent_of children."""
    return blast_radii(conn, [uuid])[uuid]


def targets(conn: sqlite3.Connection, group: str, source: str, kinds: Iterable[str]) -> list[str]:
    """The nodes `source` has an edge of one of `kinds` to."""
    kinds = tuple(kinds)
    marks = ",".join("?" * len(kinds))
    rows = conn.execute(
        f"SELECT target FROM memory_edges WHERE group_id=? AND source=? AND kind IN ({marks})",
        (group, source, *kinds),
    ).fetchall()
    return [str(row[0]) for row in rows]


def targets_each(
    conn: sqlite3.Connection, group: str, sources: Sequence[str], kinds: Iterable[str]
) -> dict[str, list[str]]:
    """`targets` of each of `sources`, in one query: each source's list in the order `targets`
    reads it (the edges' unique index, kind then target)."""
    kinds = tuple(kinds)
    found: dict[str, list[str]] = {source: [] for source in sources}
    if not found or not kinds:
        return found
    unique = list(found)
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        rows = conn.execute(
            f"SELECT source, target FROM memory_edges WHERE group_id=? AND source IN"
            f" ({','.join('?' * len(part))}) AND kind IN ({','.join('?' * len(kinds))})"
            " ORDER BY source, kind, target",
            (group, *part, *kinds),
        ).fetchall()
        for source, target in rows:
            found[str(source)].append(str(target))
    return found


def latest_interaction(conn: sqlite3.Connection, group: str) -> str | None:
    row = conn.execute(
        "SELECT uuid FROM memory_nodes WHERE group_id=? AND node_kind='interaction'"
        " ORDER BY seq DESC, uuid DESC LIMIT 1",
        (group,),
    ).fetchone()
    return None if row is None else str(row[0])


class SessionLookup:
    """The references' Lookup over one session's rows (lcg.domain.memory.references), and the
    edges the intent's cycle checks follow (lcg.domain.memory.intents.SessionGraph)."""

    def __init__(self, conn: sqlite3.Connection, group: str) -> None:
        self.conn = conn
        self.group = group

    def node(self, uuid: str) -> Node | None:
        return node(self.conn, self.group, uuid)

    def with_prefix(self, prefix: str) -> list[Node]:
        return nodes_with_prefix(self.conn, self.group, prefix)

    def with_content(self, content: str) -> list[Node]:
        return concepts_with_content(self.conn, self.group, content)

    def with_key(self, key: str) -> list[Node]:
        return concepts_with_key(self.conn, self.group, key)

    def targets(self, source: str, kinds: Sequence[str]) -> list[str]:
        return targets(self.conn, self.group, source, kinds)

    def reaches(self, start: str, goal: str, kinds: Sequence[str]) -> bool:
        return reaches(self.conn, self.group, start, goal, kinds)


NEIGHBOUR_KINDS = ("depends_on", "parent_of", "contradicts", "produces", "modifies")


def neighbours(conn: sqlite3.Connection, group: str, nodes: Sequence[str]) -> dict[str, str]:
    """Concepts one edge away from `nodes` (either direction, interactions excluded):
    neighbour -> the node it was reached from."""
    if not nodes:
        return {}
    marks = ",".join("?" * len(nodes))
    kinds = ",".join("?" * len(NEIGHBOUR_KINDS))
    found: dict[str, str] = {}
    for via, other in conn.execute(
        f"SELECT source, target FROM memory_edges WHERE group_id=? AND kind IN ({kinds})"
        f" AND source IN ({marks}) UNION ALL SELECT target, source FROM memory_edges"
        f" WHERE +group_id=? AND kind IN ({kinds}) AND target IN ({marks})",  # by target index
        (group, *NEIGHBOUR_KINDS, *nodes, group, *NEIGHBOUR_KINDS, *nodes),
    ):
        if other not in nodes:
            found.setdefault(str(other), str(via))
    return found


def recent_concepts(conn: sqlite3.Connection, group: str, interactions: int) -> list[str]:
    """The concepts the session's last `interactions` writes derived, newest first."""
    rows = conn.execute(
        "SELECT e.target FROM memory_edges e JOIN (SELECT uuid, seq FROM memory_nodes"
        " WHERE group_id=? AND node_kind='interaction' ORDER BY seq DESC LIMIT ?) i"
        " ON e.source = i.uuid WHERE e.kind IN ('derives', 'semantic') ORDER BY i.seq DESC",
        (group, interactions),
    ).fetchall()
    return list(dict.fromkeys(str(row[0]) for row in rows))


def nodes_by_uuid(conn: sqlite3.Connection, uuids: Sequence[str]) -> dict[str, Node]:
    if not uuids:
        return {}
    marks = ",".join("?" * len(uuids))
    rows = conn.execute(f"{_NODE} WHERE uuid IN ({marks})", list(uuids)).fetchall()
    return {row[0]: Node(*row) for row in rows}


def blast_radii(conn: sqlite3.Connection, uuids: Sequence[str]) -> dict[str, int]:
    """Each node's blast radius (its depends_on dependents and parent_of children)."""
    if not uuids:
        return {}
    marks = ",".join("?" * len(uuids))
    found = dict.fromkeys(uuids, 0)
    for node, count in conn.execute(
        "SELECT node, COUNT(DISTINCT other) FROM (SELECT target AS node, source AS other FROM"
        f" memory_edges WHERE kind='depends_on' AND target IN ({marks}) UNION SELECT source,"
        f" target FROM memory_edges WHERE kind='parent_of' AND source IN ({marks}))"
        " GROUP BY node",
        (*uuids, *uuids),
    ):
        found[str(node)] = int(count)
    return found


def edges_of(conn: sqlite3.Connection, group: str, node: str) -> list[tuple[str, str, str]]:
    """Every edge touching `node` (kind, source, target), interactions' edges excluded."""
    rows = conn.execute(
        "SELECT e.kind, e.source, e.target FROM memory_edges e WHERE e.group_id=? AND"
        " (e.source=? OR e.target=?) AND e.kind NOT IN ('derives', 'semantic', 'precedes')"
        " ORDER BY e.kind, e.source, e.target",
        (group, node, node),
    ).fetchall()
    return [(str(kind), str(source), str(target)) for kind, source, target in rows]


def concepts_containing(conn: sqlite3.Connection, group: str, text: str, limit: int) -> list[Node]:
    """Concepts whose content contains `text` (case-insensitive), at most `limit`, from the
    most recently written (the bounded scan of lambo_inspect's substring leg)."""
    rows = conn.execute(
        f"{_NODE} WHERE group_id=? AND node_kind='concept' AND instr(lower(content), lower(?))"
        " ORDER BY seq DESC LIMIT ?",
        (group, text, limit),
    ).fetchall()
    return [Node(*row) for row in rows]


def concepts_containing_among_bounded(
    conn: sqlite3.Connection, group: str, text: str, recent: int, radius: int, limit: int
) -> list[Node]:
    """Concepts whose content contains `text` (case-insensitive), at most `limit`, from the
    most recently written, looked for only in a bounded subset: the `recent` most recently
    written concepts and, of the rest, the `radius` with the largest blast radius (at least
    one dependent). The bounded scan of lambo_inspect's substring leg past its cap (M-INS-008):
    no more than `recent + radius` concepts' contents are read."""
    rows = conn.execute(
        "WITH recent(uuid) AS (SELECT uuid FROM memory_nodes WHERE group_id=? AND"
        " node_kind='concept' ORDER BY seq DESC LIMIT ?), radius(uuid) AS (SELECT node FROM"
        " (SELECT target AS node, source AS other FROM memory_edges WHERE group_id=? AND"
        " kind='depends_on' UNION SELECT source, target FROM memory_edges WHERE group_id=? AND"
        " kind='parent_of') WHERE node NOT IN (SELECT uuid FROM recent) GROUP BY node"
        " ORDER BY COUNT(DISTINCT other) DESC, node LIMIT ?)"
        f" {_NODE} WHERE group_id=? AND node_kind='concept' AND uuid IN (SELECT uuid FROM"
        " recent UNION SELECT uuid FROM radius) AND instr(lower(content), lower(?))"
        " ORDER BY seq DESC LIMIT ?",
        (group, recent, group, group, radius, group, text, limit),
    ).fetchall()
    return [Node(*row) for row in rows]


def concept_count(conn: sqlite3.Connection, group: str) -> int:
    (count,) = conn.execute(
        "SELECT COUNT(*) FROM memory_nodes WHERE group_id=? AND node_kind='concept'", (group,)
    ).fetchone()
    return int(count)


def possibly_superseded_by(
    conn: sqlite3.Connection, group: str, older: Sequence[str]
) -> dict[str, str]:
    """For each concept of `older`, the newest concept flagged as possibly replacing it that
    still exists and with no against or depends_on written between the two since (#198)."""
    if not older:
        return {}
    marks = ",".join("?" * len(older))
    found: dict[str, str] = {}
    for old, new in conn.execute(
        "SELECT s.older, s.newer FROM memory_superseded s JOIN memory_nodes n ON n.uuid = s.newer"
        f" WHERE s.group_id=? AND s.older IN ({marks}) AND NOT EXISTS (SELECT 1 FROM"
        " memory_edges e WHERE e.kind IN ('contradicts', 'depends_on') AND ((e.source = s.older"
        " AND e.target = s.newer) OR (e.source = s.newer AND e.target = s.older)))"
        " ORDER BY s.seq DESC, s.newer",
        (group, *older),
    ):
        found.setdefault(str(old), str(new))
    return found


def recent_writes(
    conn: sqlite3.Connection, uuids: Sequence[str], since: str
) -> dict[str, list[tuple[str, str, str | None]]]:
    """Per node, the writes touching it at or after `since` (an ISO time): (agent_id, time,
    edge kind) for each edge to or from it, (writer, last_written_at, None) for the node."""
    found: dict[str, list[tuple[str, str, str | None]]] = {uuid: [] for uuid in uuids}
    if not uuids:
        return found
    marks = ",".join("?" * len(uuids))
    for source, target, kind, agent, created in conn.execute(
        "SELECT source, target, kind, agent_id, created_at FROM memory_edges"
        f" WHERE created_at >= ? AND (source IN ({marks}) OR target IN ({marks}))",
        (since, *uuids, *uuids),
    ):
        for end in (source, target):
            if end in found:
                found[end].append((str(agent), str(created), str(kind)))
    for uuid, agent, written in conn.execute(
        f"SELECT uuid, agent_id, last_written_at FROM memory_nodes WHERE uuid IN ({marks})"
        " AND last_written_at >= ?",
        (*uuids, since),
    ):
        found[str(uuid)].append((str(agent), str(written), None))
    return found
