"""Per-concept edge counters the memory projection keeps as writes land (ADR 0040).

`memory_degrees` holds one row per concept of a session: what the daemon score reads of the
concept's edges (`lcg.domain.memory.gc.Degrees`), counted as `gc` counts them over the whole
session's edges, so a canonization cycle reads one row per concept instead of every edge:

- `incident`: its derives and semantic edges in, plus its depends_on, parent_of, produces and
  modifies edges either way whose other end is another concept of the session;
- `derived_by`: the distinct sources of its derives and semantic edges;
- `steady`, `parents`, `produced`: those structural edges by kind (depends_on and modifies,
  parent_of, produces), either way.

A handler does not add deltas: it recounts, from `memory_edges` and `memory_nodes` as they
stand after its own rows, every concept whose counts the event can have changed (a write's
new concepts and the ends of its edges, and the neighbours of new concepts; a sweep's
collected concepts and their neighbours). The counters are then what the definition gives
whatever order the rows arrived in, and a replay rebuilds the same rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from lcg.domain.ids import GroupId

PROVENANCE = ("derives", "semantic")
STRUCTURAL = ("depends_on", "parent_of", "produces", "modifies")

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memory_degrees (node_id TEXT PRIMARY KEY,"
    " group_id TEXT NOT NULL, incident INTEGER NOT NULL, derived_by INTEGER NOT NULL,"
    " steady INTEGER NOT NULL, parents INTEGER NOT NULL, produced INTEGER NOT NULL)"
    " WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS memory_degrees_group ON memory_degrees (group_id)",
)

_CHUNK = 400  # ids per statement (two lists of them stay under SQLite's 999 variables)
_KINDS = (*PROVENANCE, *STRUCTURAL)


def _chunks(nodes: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    for start in range(0, len(nodes), _CHUNK):
        part = list(nodes[start : start + _CHUNK])
        yield ",".join("?" * len(part)), part


def neighbours(conn: sqlite3.Connection, group: GroupId, nodes: Iterable[str]) -> set[str]:
    """The other ends of the counted edges of `nodes` (their counts move with these nodes)."""
    found: set[str] = set()
    kinds = ",".join("?" * len(_KINDS))
    for marks, part in _chunks(sorted(set(nodes))):
        found.update(
            str(row[0])
            for row in conn.execute(
                f"SELECT source FROM memory_edges WHERE target IN ({marks}) AND kind IN ({kinds})"
                f" AND +group_id=? UNION SELECT target FROM memory_edges WHERE source IN ({marks})"
                f" AND kind IN ({kinds}) AND +group_id=?",
                (*part, *_KINDS, group, *part, *_KINDS, group),
            )
        )
    return found


def recount(conn: sqlite3.Connection, group: GroupId, nodes: Iterable[str]) -> None:
    """Set the rows of `nodes` to their counts now: a concept of the session gets its row, any
    other id (an interaction, a collected concept) has none."""
    wanted = sorted(set(nodes))
    if not wanted:
        return
    for marks, part in _chunks(wanted):
        conn.execute(f"DELETE FROM memory_degrees WHERE node_id IN ({marks})", part)
        concepts = {
            str(row[0])
            for row in conn.execute(
                f"SELECT uuid FROM memory_nodes WHERE uuid IN ({marks}) AND +group_id=?"
                " AND node_kind != 'interaction'",
                (*part, group),
            )
        }
        if concepts:
            conn.executemany(
                "INSERT INTO memory_degrees (node_id, group_id, incident, derived_by, steady,"
                " parents, produced) VALUES (?,?,?,?,?,?,?)",
                _counted(conn, group, sorted(concepts)),
            )


def _counted(
    conn: sqlite3.Connection, group: GroupId, concepts: list[str]
) -> list[tuple[str, str, int, int, int, int, int]]:
    """Each concept's row, from its edges as they stand (`concepts` are of the session)."""
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
            node,
            group,
            incident[node],
            len(derivers[node]),
            steady[node],
            parents[node],
            produced[node],
        )
        for node in concepts
    ]
