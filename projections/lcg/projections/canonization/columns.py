"""The canonization cycle's and a GC sweep's read of a session as columns, and the measures of
only the concepts a cycle evaluates (canonization.md §2-§4, §8; ADRs 0031, 0040).

Split from `measure` by responsibility (issue 25 item 3): `measure` reads the session as one
object per concept and edge (the snapshot the policy's reference path and `lambo_inspect`'s
admission decide on) and holds the support rules both read; this module is the jobs' own
read, one row per concept from the kept `memory_concept_stats` rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import repeat

from lcg.domain.memory.canonization import (
    ConceptRows,
    Knobs,
    Measures,
    SoloMeasures,
    Status,
    SupersessionEvidence,
    coverage,
)
from lcg.domain.memory.evidence import ConceptId, dated
from lcg.domain.memory.gc import (
    Degrees,
    FactColumns,
    GcKnobs,
    Pause,
    ScoreInputs,
    daemon_score_column,
    degree_score_column,
    no_pause,
)
from lcg.domain.memory.text import ConceptType
from lcg.projections.canonization import state as canon
from lcg.projections.canonization.measure import (
    NO_STATE,
    STATUSES,
    TYPES,
    Inbound,
    aged_inbound,
    demotion_of,
)
from lcg.projections.canonization.state import SessionClock
from lcg.projections.memory import evidence as memory_evidence

CONNECTING_KINDS = ("derives", "semantic", "depends_on", "parent_of", "produces", "modifies")
"""The edge kinds a sweep and the daemon score read (precedes and contradicts connect nothing)."""
SUPPORT_KINDS = ("depends_on", "derives", "modifies", "produces")  # into; parent_of: out of
BULK_MEASURES = 2_000
"""Above this many concepts to measure, one pass over the session's edges beats a lookup each."""


class _Times(dict[str, datetime]):
    """Stored time strings, each parsed once (the rows of one write share theirs)."""

    def __missing__(self, text: str) -> datetime:
        value = self[text] = datetime.fromisoformat(text)
        return value


@dataclass(frozen=True, slots=True)
class Columns:
    """One session as the jobs read it, without an object per concept or edge: the facts of a
    sweep and of the daemon score, and what a cycle adds to them."""

    session: str
    facts: FactColumns
    canonical_keys: Sequence[str | None]
    seqs: Mapping[str, int]  # concept -> the seq that created it
    span: tuple[datetime, datetime] | None  # interaction write times: the score's R
    extent: timedelta  # interaction about-times: coverage's denominator
    clock: SessionClock


def _tuples(conn: sqlite3.Connection) -> sqlite3.Cursor:
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: a Row each costs more than the rest of the read
    return cursor


def load_columns(conn: sqlite3.Connection, session: str, pause: Pause = no_pause) -> Columns:
    """Every concept and connecting edge of the session, its interactions' times, and its
    canonization state, in one read (the caller holds one transaction for a single snapshot);
    `pause` between its passes."""
    times = _Times()
    cursor = _tuples(conn)
    nodes = cursor.execute(
        "SELECT uuid, concept_type, canonical_key, created_at, last_accessed, access_count, seq"
        " FROM memory_nodes WHERE group_id=? AND node_kind != 'interaction' ORDER BY uuid",
        (session,),  # in id order: the cycle's ladder then sorts an already sorted run
    ).fetchall()
    pause()
    ids, types, keys, created, accessed, counts, seqs = list(zip(*nodes, strict=True)) or [()] * 7
    pause()
    written: list[datetime] = []
    about: list[datetime] = []
    for created_at, about_time in cursor.execute(
        "SELECT created_at, about_time FROM memory_nodes WHERE group_id=?"
        " AND node_kind='interaction'",
        (session,),
    ):
        written.append(times[created_at])
        about.append(dated(times[about_time], times[created_at]))
    # Two-column rows make a dict in C; most concepts of a large session have a row.
    statuses: dict[str, str] = dict(
        cursor.execute("SELECT node_id, status FROM canon_nodes WHERE group_id=?", (session,))
    )
    survived: dict[str, int] = dict(
        cursor.execute("SELECT node_id, gc_survived FROM canon_nodes WHERE group_id=?", (session,))
    )
    clock = canon.clock(conn, session)
    marks = ",".join("?" * len(CONNECTING_KINDS))
    edges = cursor.execute(
        f"SELECT kind, source, target FROM memory_edges WHERE group_id=? AND kind IN ({marks})",
        (session, *CONNECTING_KINDS),
    ).fetchall()
    pause()
    facts = FactColumns(
        node_ids=ids,
        concept_types=[TYPES.get(kind) or ConceptType(kind) for kind in types],
        statuses=[
            STATUSES.get(value) or Status(value) for value in map(statuses.get, ids, repeat("None"))
        ],
        created_at=[times[text] for text in created],
        last_accessed=[None if text is None else times[text] for text in accessed],
        access_counts=counts,
        gc_survived=[survived.get(node, 0) for node in ids],
        root_goals=[False] * len(ids),
        edges=edges,
        interaction_count=len(written),
        epoch=clock.epoch,
        edges_distinct=True,  # memory_edges is unique on (group_id, kind, source, target)
    )
    return Columns(
        session,
        facts,
        keys,
        dict(zip(ids, seqs, strict=True)),
        (min(written), max(written)) if written else None,
        max(about) - min(about) if about else timedelta(0),
        clock,
    )


@dataclass(frozen=True, slots=True)
class CycleColumns:
    """One session as a canonization cycle reads it: a row per concept with its kept edge
    counters (`memory_concept_stats`, ADR 0040) instead of the session's edges."""

    session: str
    rows: ConceptRows
    seqs: Mapping[str, int]  # concept -> the seq that created it
    extent: timedelta  # interaction about-times: coverage's denominator
    clock: SessionClock


def _interaction_times(
    cursor: sqlite3.Cursor, session: str
) -> tuple[tuple[datetime, datetime] | None, timedelta, int]:
    """The interactions' write-time span (the score's R), about-time extent and count, from
    the memory projection's kept session row."""
    row = cursor.execute(
        "SELECT interactions, first_written, last_written, first_about, last_about"
        " FROM memory_session_stats WHERE group_id=?",
        (session,),
    ).fetchone()
    if row is None:
        return None, timedelta(0), 0
    first_w, last_w, first_a, last_a = (datetime.fromisoformat(text) for text in row[1:])
    return (first_w, last_w), last_a - first_a, int(row[0])


def _canon_columns(
    cursor: sqlite3.Cursor, session: str, ids: Sequence[str]
) -> tuple[Sequence[str], Sequence[int]]:
    """Each of `ids`' status and gc_survived (a concept with no row: None, 0). Once every
    concept has been swept, the session's rows in id order are exactly `ids`: no lookup."""
    found = cursor.execute(
        "SELECT node_id, status, gc_survived FROM canon_nodes WHERE group_id=? ORDER BY node_id",
        (session,),
    ).fetchall()
    nodes, statuses, survived = list(zip(*found, strict=True)) or [(), (), ()]
    if nodes == tuple(ids):
        return statuses, survived
    by_node = {node: (status, count) for node, status, count in found}
    pairs = [by_node.get(node, ("None", 0)) for node in ids]
    return [status for status, _ in pairs], [count for _, count in pairs]


def load_cycle_columns(
    conn: sqlite3.Connection, session: str, gc_knobs: GcKnobs, pause: Pause = no_pause
) -> CycleColumns:
    """Every concept's row as a cycle reads it (status, type, key, daemon score, gc_survived)
    from the memory projection's kept rows (`memory_concept_stats`: one range, in id order)
    and the canonization rows; no edge is read (the caller holds one transaction for a
    single snapshot)."""
    times = _Times()
    cursor = _tuples(conn)
    found = cursor.execute(
        "SELECT node_id, concept_type, canonical_key, created_at, seq, access_count,"
        " last_accessed, incident, derived_by, steady, parents, produced"
        " FROM memory_concept_stats WHERE group_id=? ORDER BY node_id",
        (session,),  # in id order: the cycle's ladder then sorts an already sorted run
    ).fetchall()
    pause()
    ids, types, keys, created, seqs, counts, accessed, *counters = (
        list(zip(*found, strict=True)) or [()] * 12
    )
    del found
    pause()
    statuses, survived = _canon_columns(cursor, session, ids)
    span, extent, interactions = _interaction_times(cursor, session)
    pause()
    concept_types = [TYPES.get(kind) or ConceptType(kind) for kind in types]
    inputs = ScoreInputs(
        created_at=[times[text] for text in created],
        last_accessed=[None if text is None else times[text] for text in accessed],
        access_counts=counts,
        concept_types=concept_types,
        interaction_count=interactions,
    )
    incident, derived_by, steady, parents, produced = counters
    degrees = Degrees(incident, derived_by, steady, parents, produced)
    rows = ConceptRows(
        node_ids=ids,
        statuses=[STATUSES.get(value) or Status(value) for value in statuses],
        concept_types=concept_types,
        canonical_keys=keys,
        scores=degree_score_column(inputs, degrees, span, gc_knobs, pause),
        gc_survived=survived,
    )
    return CycleColumns(
        session, rows, dict(zip(ids, seqs, strict=True)), extent, canon.clock(conn, session)
    )


def cycle_rows(columns: Columns, gc_knobs: GcKnobs, pause: Pause = no_pause) -> ConceptRows:
    """What a cycle reads about every concept from the whole-session columns (the edges):
    `load_cycle_columns` reads the same rows from the kept counters."""
    facts = columns.facts
    return ConceptRows(
        node_ids=facts.node_ids,
        statuses=facts.statuses,
        concept_types=facts.concept_types,
        canonical_keys=columns.canonical_keys,
        scores=daemon_score_column(facts, columns.span, gc_knobs, pause),
        gc_survived=facts.gc_survived,
    )


def _in_chunks(nodes: Sequence[str], size: int = 500) -> Iterator[tuple[str, list[str]]]:
    for start in range(0, len(nodes), size):
        part = list(nodes[start : start + size])
        yield ",".join("?" * len(part)), part


def _support_edges(
    conn: sqlite3.Connection, session: str, nodes: Sequence[str]
) -> list[tuple[str, str, str, str, str, int]]:
    """The edges `aged_inbound` reads about `nodes`, in (kind, source, target) order: all the
    session's when there are many, else each node's (its order within them is the same)."""
    cursor = _tuples(conn)
    columns = "kind, source, target, created_at, about_time, seq"
    if len(nodes) > BULK_MEASURES:
        marks = ",".join("?" * (len(SUPPORT_KINDS) + 1))
        return cursor.execute(
            f"SELECT {columns} FROM memory_edges WHERE group_id=? AND kind IN ({marks})"
            " ORDER BY kind, source, target",
            (session, *SUPPORT_KINDS, "parent_of"),
        ).fetchall()
    kinds = ",".join("?" * len(SUPPORT_KINDS))
    found: list[tuple[str, str, str, str, str, int]] = []
    for marks, part in _in_chunks(nodes):
        found += cursor.execute(
            f"SELECT {columns} FROM memory_edges WHERE +group_id=? AND target IN ({marks})"
            f" AND kind IN ({kinds}) UNION ALL SELECT {columns} FROM memory_edges"
            f" WHERE +group_id=? AND source IN ({marks}) AND kind='parent_of'",
            (session, *part, *SUPPORT_KINDS, session, *part),
        ).fetchall()
    return sorted(found, key=lambda edge: (edge[0], edge[1], edge[2]))


def _contents(conn: sqlite3.Connection, session: str, nodes: Iterable[str]) -> dict[str, str]:
    wanted = sorted(set(nodes))
    found: dict[str, str] = {}
    for marks, part in _in_chunks(wanted):
        found.update(
            _tuples(conn).execute(
                "SELECT uuid, content FROM memory_nodes WHERE +group_id=? AND uuid IN"
                f" ({marks}) AND node_kind != 'interaction'",
                (session, *part),
            )
        )
    return found


def cycle_measures(
    conn: sqlite3.Connection,
    columns: Columns | CycleColumns,
    nodes: Sequence[ConceptId],
    knobs: Knobs,
    now: datetime,
) -> dict[ConceptId, Measures]:
    """The `Measures` of `nodes` (a cycle's `cycle_needs`), as `session_stats` measures them."""
    if not nodes:
        return {}
    times = _Times()
    edges = (
        (kind, source, target, times[created], dated(times[about], times[created]), seq)
        for kind, source, target, created, about, seq in _support_edges(
            conn, columns.session, nodes
        )
    )
    inbound = aged_inbound(edges, columns.seqs, now, knobs.edge_min_age)
    states = canon.node_states_of(conn, columns.session, nodes)
    by = (s.superseded_by for s in states.values() if s.superseded_by is not None)
    contents = _contents(conn, columns.session, by)
    reverts = canon.reverts(conn, columns.session)
    measured: dict[ConceptId, Measures] = {}
    for node in nodes:
        into = inbound.get(node) or Inbound()
        measured[node] = Measures(
            distinct_interactions=len(into.seqs),
            coverage=coverage(into.times, columns.extent) if into.times else 0.0,
            blast_radius=len(into.dependents),
            last_demotion=demotion_of(states.get(node, NO_STATE), contents),
            solo=SoloMeasures(
                support_times=tuple(sorted(into.solo_times)),
                human_confirmed=0,
                valid_actions=len(into.causal_sources),
                reverts=reverts.get(node, 0),
            ),
        )
    return measured


def cycle_evidence(
    conn: sqlite3.Connection, columns: Columns | CycleColumns, knobs: Knobs
) -> SupersessionEvidence:
    """What supersession reads (§6), when it is on."""
    if not knobs.supersede:
        return SupersessionEvidence()
    targets = memory_evidence.contradicted_targets(conn, columns.session)
    sources = {
        str(row[0])
        for row in conn.execute(
            "SELECT DISTINCT source FROM memory_edges WHERE group_id=? AND kind='contradicts'",
            (columns.session,),
        )
    }
    loaded = memory_evidence.load(conn, columns.session, sorted(set(targets) | sources))
    return SupersessionEvidence(
        concepts=tuple(loaded.concepts.values()),
        contradictions=tuple(loaded.contradictions),
        support=tuple(loaded.support),
        interaction_extent=columns.extent,
    )


def admission_inputs(
    conn: sqlite3.Connection,
    session: str,
    node: ConceptId,
    knobs: Knobs,
    gc_knobs: GcKnobs,
    now: datetime,
) -> tuple[ConceptRows, Measures, SupersessionEvidence]:
    """What lambo_inspect's admission of `node` reads, through the cycle's own reader: every
    concept's row (the kept counters), `node`'s measures alone, and supersession's evidence."""
    columns = load_cycle_columns(conn, session, gc_knobs)
    measured = cycle_measures(conn, columns, [node], knobs, now)
    return columns.rows, measured[node], cycle_evidence(conn, columns, knobs)
