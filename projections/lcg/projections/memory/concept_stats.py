"""Per-concept rows the memory projection keeps as writes land, for the canonization cycle
(ADR 0040).

`memory_concept_stats` holds one row per concept of a session, clustered by (session, id):
the node's fields the cycle reads (type, key, creation, seq, accesses) and what the daemon
score reads of the concept's edges (`lcg.domain.memory.gc.Degrees`), counted as `gc` counts
them over the whole session's edges. A cycle then reads one range of one table in id order
instead of the session's nodes and every edge:

- `incident`: its derives and semantic edges in, plus its depends_on, parent_of, produces and
  modifies edges either way whose other end is another concept of the session;
- `derived_by`: the distinct sources of its derives and semantic edges;
- `steady`, `parents`, `produced`: those structural edges by kind (depends_on and modifies,
  parent_of, produces), either way.

A write's new concepts get their rows counted from their edges; every other concept at an end
of one of the write's new edges has that edge added to its counters (a hub cited by every
write is never re-read). A concept at the far end of an older edge into a new concept (an
edge written before its end existed) is recounted from `memory_edges` and `memory_nodes` as
they stand; a sweep takes the collected concepts' edges off the counters of the concepts
that stay; a recall copies the accessed concepts' count
and last access from their nodes. The rows are what the definition gives whatever order the
events came in (the rebuild property checks them against a plain count), and a replay
rebuilds the same rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from lcg.domain.ids import GroupId
from lcg.domain.memory.evidence import dated

PROVENANCE = ("derives", "semantic")
PROVENANCE_SET = frozenset(PROVENANCE)
STRUCTURAL = ("depends_on", "parent_of", "produces", "modifies")

COLUMNS = (
    "group_id",
    "node_id",
    "concept_type",
    "canonical_key",
    "created_at",
    "seq",
    "access_count",
    "last_accessed",
    "incident",
    "derived_by",
    "steady",
    "parents",
    "produced",
)
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memory_concept_stats (group_id TEXT NOT NULL,"
    " node_id TEXT NOT NULL, concept_type TEXT, canonical_key TEXT, created_at TEXT NOT NULL,"
    " seq INTEGER NOT NULL, access_count INTEGER NOT NULL, last_accessed TEXT,"
    " incident INTEGER NOT NULL, derived_by INTEGER NOT NULL, steady INTEGER NOT NULL,"
    " parents INTEGER NOT NULL, produced INTEGER NOT NULL, PRIMARY KEY (group_id, node_id))"
    " WITHOUT ROWID",
    # The session's interactions as the score and coverage read them: how many, the span of
    # their write times and of their about-times (clamped to when they were written).
    "CREATE TABLE IF NOT EXISTS memory_session_stats (group_id TEXT PRIMARY KEY,"
    " interactions INTEGER NOT NULL, first_written TEXT NOT NULL, last_written TEXT NOT NULL,"
    " first_about TEXT NOT NULL, last_about TEXT NOT NULL)",
)

_CHUNK = 400  # ids per statement (two lists of them stay under SQLite's 999 variables)
_KINDS = (*PROVENANCE, *STRUCTURAL)


def _chunks(nodes: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    for start in range(0, len(nodes), _CHUNK):
        part = list(nodes[start : start + _CHUNK])
        yield ",".join("?" * len(part)), part


@dataclass(frozen=True, slots=True)
class Added:
    """An edge a write stored for the first time; `fresh_pair`: its source had no provenance
    edge into its target before it (for a provenance edge: a new deriving source)."""

    kind: str
    source: str
    target: str
    fresh_pair: bool = False


def kinds_between(conn: sqlite3.Connection, group: GroupId, source: str, target: str) -> set[str]:
    """The kinds of the session's edges from `source` to `target` already stored."""
    return {
        str(row[0])
        for row in conn.execute(
            "SELECT kind FROM memory_edges WHERE source=? AND target=? AND +group_id=?",
            (source, target, group),
        )
    }


def write_applied(
    conn: sqlite3.Connection,
    group: GroupId,
    seq: int,
    created: Sequence[str],
    added: Sequence[Added],
) -> None:
    """After a write's nodes and edges are stored: its new concepts' rows and its new edges on
    the concepts they join, counted from the write alone; a concept joined to a new one by an
    older edge (one stored before its end existed) is recounted from the tables."""
    older: set[str] = set()
    for marks, part in _chunks(sorted(set(created))):
        for source, target in conn.execute(
            f"SELECT source, target FROM memory_edges WHERE target IN ({marks}) AND seq < ?"
            f" UNION ALL SELECT source, target FROM memory_edges WHERE source IN ({marks})"
            " AND seq < ?",
            (*part, seq, *part, seq),
        ):
            older.update((source, target))
    new = set(created)
    ends = {end for edge in added for end in (edge.source, edge.target)}
    concepts = _concepts(conn, group, ends | new)
    deltas: dict[str, list[int]] = {node: [0, 0, 0, 0, 0] for node in concepts}
    for edge in added:
        if edge.kind in PROVENANCE:
            if edge.target in concepts:
                into = deltas[edge.target]
                into[0] += 1
                into[1] += int(edge.fresh_pair)
        elif edge.kind in STRUCTURAL and _joins_two(edge, concepts):
            column = _KIND_COLUMN[edge.kind]
            for end in (edge.source, edge.target):
                into = deltas[end]
                into[0] += 1
                into[column] += 1
    fresh = [node for node in concepts if node in new]
    for marks, part in _chunks(sorted(fresh)):
        conn.executemany(
            f"INSERT INTO memory_concept_stats ({', '.join(COLUMNS)}) VALUES"
            f" ({','.join('?' * len(COLUMNS))})",
            [
                (group, *row, *deltas[str(row[0])])
                for row in conn.execute(
                    "SELECT uuid, concept_type, canonical_key, created_at, seq, access_count,"
                    f" last_accessed FROM memory_nodes WHERE uuid IN ({marks}) ORDER BY uuid",
                    part,
                ).fetchall()
            ],
        )
    conn.executemany(
        "UPDATE memory_concept_stats SET incident = incident + ?, derived_by = derived_by + ?,"
        " steady = steady + ?, parents = parents + ?, produced = produced + ?"
        " WHERE group_id=? AND node_id=?",
        [
            (*counts, group, node)
            for node, counts in sorted(deltas.items())
            if node not in new and any(counts)
        ],
    )
    recount(conn, group, older)


_KIND_COLUMN = {"depends_on": 2, "modifies": 2, "parent_of": 3, "produces": 4}


def _joins_two(edge: Added, concepts: set[str]) -> bool:
    """A structural edge counts when it joins two distinct concepts of the session."""
    return edge.source != edge.target and edge.source in concepts and edge.target in concepts


def _concepts(conn: sqlite3.Connection, group: GroupId, nodes: Iterable[str]) -> set[str]:
    """Which of `nodes` are concepts of the session."""
    found: set[str] = set()
    for marks, part in _chunks(sorted(set(nodes))):
        found.update(
            str(row[0])
            for row in conn.execute(
                f"SELECT uuid FROM memory_nodes WHERE uuid IN ({marks}) AND +group_id=?"
                " AND node_kind != 'interaction'",
                (*part, group),
            )
        )
    return found


def collecting(conn: sqlite3.Connection, group: GroupId, gone: Sequence[str]) -> None:
    """Before a sweep deletes `gone` with their edges: their rows go, and each concept that
    stays loses the counted edges it had to them (a deriving source that goes takes its
    distinct count with it)."""
    edges: set[tuple[str, str, str]] = set()
    kinds = ",".join("?" * len(_KINDS))
    for marks, part in _chunks(sorted(set(gone))):
        conn.execute(
            f"DELETE FROM memory_concept_stats WHERE group_id=? AND node_id IN ({marks})",
            (group, *part),
        )
        edges.update(
            (str(kind), str(source), str(target))
            for kind, source, target in conn.execute(
                f"SELECT kind, source, target FROM memory_edges WHERE target IN ({marks})"
                f" AND kind IN ({kinds}) AND +group_id=? UNION SELECT kind, source, target"
                f" FROM memory_edges WHERE source IN ({marks}) AND kind IN ({kinds})"
                " AND +group_id=?",
                (*part, *_KINDS, group, *part, *_KINDS, group),
            )
        )
    leaving = set(gone)
    concepts = _concepts(
        conn, group, {end for _, source, target in edges for end in (source, target)}
    )
    deltas: dict[str, list[int]] = {}
    derivers: set[tuple[str, str]] = set()
    for kind, source, target in sorted(edges):
        if kind in PROVENANCE_SET:
            if target in concepts and target not in leaving:
                into = deltas.setdefault(target, [0, 0, 0, 0, 0])
                into[0] -= 1
                if (source, target) not in derivers:  # every edge of the source goes
                    derivers.add((source, target))
                    into[1] -= 1
        elif source != target and source in concepts and target in concepts:
            for end in (source, target):
                if end not in leaving:
                    into = deltas.setdefault(end, [0, 0, 0, 0, 0])
                    into[0] -= 1
                    into[_KIND_COLUMN[kind]] -= 1
    conn.executemany(
        "UPDATE memory_concept_stats SET incident = incident + ?, derived_by = derived_by + ?,"
        " steady = steady + ?, parents = parents + ?, produced = produced + ?"
        " WHERE group_id=? AND node_id=?",
        [(*counts, group, node) for node, counts in sorted(deltas.items())],
    )


def recount(conn: sqlite3.Connection, group: GroupId, nodes: Iterable[str]) -> None:
    """Set the rows of `nodes` to what they are now: a concept of the session gets its row,
    any other id (an interaction, a collected concept) has none."""
    wanted = sorted(set(nodes))
    for marks, part in _chunks(wanted):
        conn.execute(
            f"DELETE FROM memory_concept_stats WHERE group_id=? AND node_id IN ({marks})",
            (group, *part),
        )
        concepts = conn.execute(
            "SELECT uuid, concept_type, canonical_key, created_at, seq, access_count,"
            f" last_accessed FROM memory_nodes WHERE uuid IN ({marks}) AND +group_id=?"
            " AND node_kind != 'interaction' ORDER BY uuid",
            (*part, group),
        ).fetchall()
        if concepts:
            counted = _counted(conn, group, [str(row[0]) for row in concepts])
            values = ",".join("?" * len(COLUMNS))
            conn.executemany(
                f"INSERT INTO memory_concept_stats ({', '.join(COLUMNS)}) VALUES ({values})",
                [(group, *node, *counts) for node, counts in zip(concepts, counted, strict=True)],
            )


def interactions_added(
    conn: sqlite3.Connection, group: GroupId, count: int, written: datetime, about: datetime
) -> None:
    """`count` interactions written at `written` about `about`: the session's count grows
    and its two spans widen to cover them (interactions are never collected)."""
    if count == 0:
        return
    when = dated(about, written)
    row = conn.execute(
        "SELECT interactions, first_written, last_written, first_about, last_about"
        " FROM memory_session_stats WHERE group_id=?",
        (group,),
    ).fetchone()
    if row is None:
        spans = (written, written, when, when)
        total = count
    else:
        first_w, last_w, first_a, last_a = (datetime.fromisoformat(text) for text in row[1:])
        spans = (min(first_w, written), max(last_w, written), min(first_a, when), max(last_a, when))
        total = int(row[0]) + count
    conn.execute(
        "INSERT OR REPLACE INTO memory_session_stats (group_id, interactions, first_written,"
        " last_written, first_about, last_about) VALUES (?,?,?,?,?,?)",
        (group, total, *(moment.isoformat() for moment in spans)),
    )


def accessed(conn: sqlite3.Connection, group: GroupId, nodes: Iterable[str]) -> None:
    """Copy the accessed concepts' counts and last recall from their nodes."""
    for marks, part in _chunks(sorted(set(nodes))):
        conn.execute(
            "UPDATE memory_concept_stats SET (access_count, last_accessed) = (SELECT"
            " n.access_count, n.last_accessed FROM memory_nodes n WHERE n.uuid ="
            f" memory_concept_stats.node_id) WHERE group_id=? AND node_id IN ({marks})",
            (group, *part),
        )


def _counted(
    conn: sqlite3.Connection, group: GroupId, concepts: list[str]
) -> list[tuple[int, int, int, int, int]]:
    """Each concept's edge counters, from its edges as they stand (`concepts` are of the
    session): incident, derived_by, steady, parents, produced."""
    incident = dict.fromkeys(concepts, 0)
    steady, parents, produced = dict(incident), dict(incident), dict(incident)
    derivers: dict[str, set[str]] = {node: set() for node in concepts}
    marks = ",".join("?" * len(concepts))
    provenance = ",".join("?" * len(PROVENANCE))
    for source, target in conn.execute(
        f"SELECT source, target FROM memory_edges WHERE target IN ({marks})"
        f" AND kind IN ({provenance}) AND +group_id=?",
        (*concepts, *PROVENANCE, group),
    ):
        incident[target] += 1
        derivers[target].add(source)
    structural = ",".join("?" * len(STRUCTURAL))
    # Both ends must be concepts of the session, and two distinct ones.
    for kind, node in conn.execute(
        f"SELECT e.kind, e.target FROM memory_edges e JOIN memory_nodes o ON o.uuid = e.source"
        f" WHERE e.target IN ({marks}) AND e.kind IN ({structural}) AND +e.group_id=?"
        " AND e.source != e.target AND o.group_id = e.group_id AND o.node_kind != 'interaction'"
        f" UNION ALL SELECT e.kind, e.source FROM memory_edges e JOIN memory_nodes o"
        f" ON o.uuid = e.target WHERE e.source IN ({marks}) AND e.kind IN ({structural})"
        " AND +e.group_id=? AND e.source != e.target AND o.group_id = e.group_id"
        " AND o.node_kind != 'interaction'",
        (*concepts, *STRUCTURAL, group, *concepts, *STRUCTURAL, group),
    ):
        incident[node] += 1
        if kind == "parent_of":
            parents[node] += 1
        elif kind == "produces":
            produced[node] += 1
        else:  # depends_on, modifies
            steady[node] += 1
    return [
        (
            incident[node],
            len(derivers[node]),
            steady[node],
            parents[node],
            produced[node],
        )
        for node in concepts
    ]
