"""What `memory_concept_stats` must hold, read the plain way from a session's nodes and its
whole edge list (ADR 0040): the oracle the projection's kept rows are checked against."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from datetime import datetime

from lcg.domain.memory.evidence import dated
from lcg.projections.memory.concept_stats import COLUMNS

PROVENANCE = ("derives", "semantic")
STRUCTURAL = {"depends_on": 2, "modifies": 2, "parent_of": 3, "produces": 4}  # counts index


def expected_concept_stats(conn: sqlite3.Connection, session: str) -> list[tuple[object, ...]]:
    """Every concept of the session's row (`COLUMNS`), sorted by node id."""
    nodes = {
        str(row[0]): tuple(row)
        for row in conn.execute(
            "SELECT uuid, concept_type, canonical_key, created_at, seq, access_count,"
            " last_accessed FROM memory_nodes WHERE group_id=? AND node_kind != 'interaction'",
            (session,),
        )
    }
    concepts = set(nodes)
    counts: dict[str, list[int]] = {node: [0, 0, 0, 0, 0] for node in concepts}
    derivers: dict[str, set[str]] = defaultdict(set)
    for kind, source, target in conn.execute(
        "SELECT kind, source, target FROM memory_edges WHERE group_id=?", (session,)
    ):
        if kind in PROVENANCE and target in concepts:
            counts[target][0] += 1
            derivers[target].add(source)
        elif kind in STRUCTURAL and source in concepts and target in concepts:
            if source == target:
                continue
            for end in (source, target):
                counts[end][0] += 1
                counts[end][STRUCTURAL[kind]] += 1
    for node, sources in derivers.items():
        counts[node][1] = len(sources)
    return [(session, *nodes[node], *counts[node]) for node in sorted(concepts)]


def kept_concept_stats(conn: sqlite3.Connection, session: str) -> list[tuple[object, ...]]:
    """The session's `memory_concept_stats` rows (`COLUMNS`), sorted by node id."""
    return [
        tuple(row)
        for row in conn.execute(
            f"SELECT {', '.join(COLUMNS)} FROM memory_concept_stats WHERE group_id=?"
            " ORDER BY node_id",
            (session,),
        )
    ]


def expected_session_stats(conn: sqlite3.Connection, session: str) -> list[tuple[object, ...]]:
    """The session's interaction count and spans, read from every interaction node."""
    written: list[datetime] = []
    about: list[datetime] = []
    for created, about_time in conn.execute(
        "SELECT created_at, about_time FROM memory_nodes WHERE group_id=?"
        " AND node_kind='interaction'",
        (session,),
    ):
        written.append(datetime.fromisoformat(created))
        about.append(dated(datetime.fromisoformat(about_time), written[-1]))
    if not written:
        return []
    spans = (min(written), max(written), min(about), max(about))
    return [(session, len(written), *(moment.isoformat() for moment in spans))]


def kept_session_stats(conn: sqlite3.Connection, session: str) -> list[tuple[object, ...]]:
    """The session's `memory_session_stats` row, if any."""
    return [
        tuple(row)
        for row in conn.execute(
            "SELECT group_id, interactions, first_written, last_written, first_about,"
            " last_about FROM memory_session_stats WHERE group_id=?",
            (session,),
        )
    ]
