"""Loading what the evidence rules read (lcg.domain.memory.evidence) from the memory projection.

A write is one outcome event, so "the same write" is "the same seq": a concept's interaction is
the seq that created it, a citation's or a child's the seq of the edge that declared it.
Contradictions keep their first write's columns (a re-sent edge only counts a reinforcement).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lcg.domain.memory.evidence import (
    Concept,
    ConceptId,
    Contradiction,
    InteractionId,
    Support,
    SupportKind,
)


@dataclass(frozen=True, slots=True)
class Evidence:
    """The concepts asked about, the contradictions of them and their support."""

    concepts: dict[str, Concept]
    contradictions: list[Contradiction]
    support: list[Support]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def contradicted_targets(conn: sqlite3.Connection, session: str) -> list[str]:
    """Every concept of the session that some concept contradicts."""
    rows = conn.execute(
        "SELECT DISTINCT target FROM memory_edges WHERE group_id=? AND kind='contradicts'"
        " ORDER BY target",
        (session,),
    ).fetchall()
    return [str(row[0]) for row in rows]


def load(conn: sqlite3.Connection, session: str, targets: Sequence[str]) -> Evidence:
    """The evidence about `targets` (concepts of `session`).

    `+group_id` keeps SQLite off the session-wide indexes: without statistics it would read
    every node, or every contradicts / depends_on edge, of the session to find a few targets,
    where the primary key and `memory_edges_target` find them directly."""
    if not targets:
        return Evidence({}, [], [])
    marks = ",".join("?" * len(targets))
    concepts = {
        str(uuid): Concept(
            ConceptId(str(uuid)),
            _time(created),
            _time(about),
            str(agent),
            InteractionId(str(seq)),
        )
        for uuid, created, about, agent, seq in conn.execute(
            "SELECT uuid, created_at, about_time, agent_id, seq FROM memory_nodes"
            f" WHERE +group_id=? AND uuid IN ({marks})",
            (session, *targets),
        )
    }
    contradictions = [
        Contradiction(
            ConceptId(str(target)),
            ConceptId(str(source)),
            None if key is None else str(key),
            str(agent),
            _time(created),
            _time(about),
        )
        for target, source, key, agent, created, about in conn.execute(
            "SELECT e.target, e.source, n.canonical_key, e.agent_id, e.created_at, e.about_time"
            " FROM memory_edges e JOIN memory_nodes n ON n.uuid = e.source"
            f" WHERE +e.group_id=? AND e.kind='contradicts' AND e.target IN ({marks})",
            (session, *targets),
        )
    ]
    support = [
        Support(
            ConceptId(str(target)),
            ConceptId(str(concept)),
            SupportKind(str(kind)),
            str(agent),
            _time(created),
            _time(about),
            InteractionId(str(seq)),
        )
        for target, concept, kind, agent, created, about, seq in conn.execute(
            "SELECT target, source, kind, agent_id, created_at, about_time, seq FROM memory_edges"
            f" WHERE +group_id=? AND kind='depends_on' AND target IN ({marks}) UNION ALL"
            " SELECT source, target, kind, agent_id, created_at, about_time, seq FROM"
            f" memory_edges WHERE group_id=? AND kind='parent_of' AND source IN ({marks})",
            (session, *targets, session, *targets),
        )
    ]
    return Evidence(concepts, contradictions, support)
