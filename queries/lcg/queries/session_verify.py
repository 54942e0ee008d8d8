"""`lambo session verify` (seed 001, ADR 0079): does a session's memory graph agree with its
log, and which annotation kinds does it hold now.

The projection is what recall reads; the session's stream in the WAL is the truth. The check
replays the stream, up to the position each projection recorded, into a scratch in-memory
database with the same projection code, and compares the two, concept by concept:

- `dangling_edge`: an edge of the graph whose end is no node of the session;
- `missing_concept` / `unexpected_concept`: a node the log has and the graph lacks, or the
  reverse; `missing_edge` / `unexpected_edge` likewise for edges (kind, source, target);
- `status_mismatch`: a concept whose canonization status is not the one its canonization
  log (the ConceptsCanonized transitions) leaves it at;
- `receipt_mismatch`: a receipt whose state differs from what the log settles it as;
  `receipt_resolved_twice`: a receipt the log settles more than once.

Annotation kinds are counted as recall names them: `contradiction`, `rests_on_contradicted`,
`possibly_superseded` (either way, shown or not) and `superseded`.
Reads only: the graph in one read transaction (rows and positions together), the WAL up to
those positions (the WAL is written before the projection, so it always holds them).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, TypeGuard

from lcg.domain.events import DomainEvent, MemoryWriteApplied, MemoryWriteFailed
from lcg.domain.ids import GroupId
from lcg.domain.memory import evidence
from lcg.projections.canonization.projection import CanonizationProjection
from lcg.projections.memory import evidence as memory_evidence
from lcg.projections.memory.projection import MemoryProjection
from lcg.projections.memory.state import FAILED_TRANSIENT
from lcg.projections.runner import Projection
from lcg.projections.wal.port import LogStore

ANNOTATION_KINDS: Final = (
    "contradiction",
    "rests_on_contradicted",
    "possibly_superseded",
    "superseded",
)
SHOWN: Final = 20  # ids listed per annotation kind (the count is always whole)

_NODES = "SELECT uuid, node_kind, content, concept_type FROM memory_nodes WHERE group_id=?"
_EDGES = "SELECT kind, source, target FROM memory_edges WHERE group_id=?"
_STATUS = "SELECT node_id, status FROM canon_nodes WHERE group_id=?"
_WRITES = "SELECT receipt, state FROM memory_writes WHERE group_id=?"


@dataclass(frozen=True, slots=True)
class Problem:
    """One disagreement: its kind, the concept (or receipt) it is about, what is wrong."""

    kind: str
    subject: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "subject": self.subject, "detail": self.detail}


@dataclass(slots=True)
class Verified:
    """The report: what was checked, what is wrong (empty: clean), the annotation kinds."""

    session: str
    seq: int
    concepts: int
    edges: int
    receipts: int
    pending_receipts: int
    problems: list[Problem] = field(default_factory=list)
    annotations: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "ok": self.ok,
            "seq": self.seq,
            "checked": {
                "concepts": self.concepts,
                "edges": self.edges,
                "receipts": self.receipts,
                "pending_receipts": self.pending_receipts,
            },
            "problems": [problem.to_json() for problem in self.problems],
            "problem_counts": dict(Counter(problem.kind for problem in self.problems)),
            "annotations": {
                kind: {"count": len(ids), "node_ids": ids[:SHOWN]}
                for kind, ids in self.annotations.items()
            },
        }


def verify_session(
    conn: sqlite3.Connection, log: LogStore, session: str, now: datetime
) -> Verified:
    """Check `session`'s graph (`conn`, read-only) against its stream in `log`."""
    conn.execute("BEGIN")  # one snapshot: the rows and the positions they were written with
    try:
        upto = _positions(conn, session)
        actual = _read(conn, session)
        notes = _annotations(conn, session, now)
    finally:
        conn.execute("ROLLBACK")
    expected, settles = _replayed(log, session, upto)
    report = Verified(
        session,
        max(upto.values()),
        sum(1 for row in actual.nodes.values() if row[0] == "concept"),
        len(actual.edges),
        len(actual.writes),
        # recorded, not applied: pending intents and writes owed a replay (ADR 0108)
        sum(1 for state in actual.writes.values() if state in ("pending", FAILED_TRANSIENT)),
        annotations=notes,
    )
    report.problems.extend(_compare(actual, expected, settles))
    return report


@dataclass(slots=True)
class _Rows:
    nodes: dict[str, tuple[str, str, str | None]]
    edges: set[tuple[str, str, str]]
    statuses: dict[str, str]
    writes: dict[str, str]


def _read(conn: sqlite3.Connection, session: str) -> _Rows:
    return _Rows(
        {
            uuid: (kind, content, ctype)
            for uuid, kind, content, ctype in conn.execute(_NODES, (session,))
        },
        {(kind, s, t) for kind, s, t in conn.execute(_EDGES, (session,))},
        dict(conn.execute(_STATUS, (session,)).fetchall()),
        dict(conn.execute(_WRITES, (session,)).fetchall()),
    )


def _positions(conn: sqlite3.Connection, session: str) -> dict[str, int]:
    rows = dict(
        conn.execute(
            "SELECT projection, position FROM projection_positions WHERE group_id=? AND"
            " projection IN ('memory', 'canonization')",
            (session,),
        ).fetchall()
    )
    return {name: int(rows.get(name, 0)) for name in ("memory", "canonization")}


def _replayed(log: LogStore, session: str, upto: dict[str, int]) -> tuple[_Rows, Counter[str]]:
    """The session's stream replayed into a scratch database, each projection up to its own
    recorded position; and how many times the log settles each receipt."""
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    try:
        projections: list[tuple[Projection, int]] = [
            (MemoryProjection(), upto["memory"]),
            (CanonizationProjection(), upto["canonization"]),
        ]
        for projection, _ in projections:
            projection.install(scratch)
        settles: Counter[str] = Counter()
        last = max(upto.values())
        if last:
            for page in log.read(GroupId(session), upto=last):
                for projection, end in projections:
                    run = [event for event in page if event.seq <= end]
                    if run:
                        projection.apply(scratch, run)
                for event in page:
                    settled = event.event
                    if event.seq <= upto["memory"] and _settles(settled):
                        settles[settled.receipt] += 1
        return _read(scratch, session), settles
    finally:
        scratch.close()


def _settles(event: DomainEvent) -> TypeGuard[MemoryWriteApplied | MemoryWriteFailed]:
    """An outcome that settles its receipt: a failure owed a replay does not (ADR 0108)."""
    if isinstance(event, MemoryWriteFailed):
        return not event.replay_owed
    return isinstance(event, MemoryWriteApplied)


def _compare(actual: _Rows, expected: _Rows, settles: Counter[str]) -> Iterable[Problem]:
    nodes = set(actual.nodes)
    for kind, source, target in sorted(actual.edges):
        for end in (source, target):
            if end not in nodes:
                yield Problem(
                    "dangling_edge",
                    source,
                    f"{kind} edge {source} -> {target}: {end} is no node of the session",
                )
    for uuid in sorted(set(expected.nodes) - nodes):
        yield Problem("missing_concept", uuid, "in the log but not in the graph")
    for uuid in sorted(nodes - set(expected.nodes)):
        yield Problem("unexpected_concept", uuid, "in the graph but not in the log")
    for kind, source, target in sorted(expected.edges - actual.edges):
        yield Problem(
            "missing_edge", source, f"{kind} edge {source} -> {target} is in the log, not the graph"
        )
    for kind, source, target in sorted(actual.edges - expected.edges):
        yield Problem(
            "unexpected_edge",
            source,
            f"{kind} edge {source} -> {target} is in the graph, not the log",
        )
    yield from _state_problems(actual, expected, settles)


def _state_problems(actual: _Rows, expected: _Rows, settles: Counter[str]) -> Iterable[Problem]:
    """Canonization statuses and receipts against the log."""
    for node in sorted(set(actual.statuses) | set(expected.statuses)):
        have = actual.statuses.get(node, "None")
        want = expected.statuses.get(node, "None")
        if have != want:
            yield Problem(
                "status_mismatch",
                node,
                f"status {have} in the graph; its canonization log leaves it {want}",
            )
    for receipt in sorted(set(actual.writes) | set(expected.writes)):
        have_state = actual.writes.get(receipt)
        want_state = expected.writes.get(receipt)
        if have_state != want_state:
            yield Problem(
                "receipt_mismatch",
                receipt,
                f"state {have_state or 'absent'} in the graph; the log settles it "
                f"{want_state or 'absent'}",
            )
    for receipt, times in sorted(settles.items()):
        if times > 1:
            yield Problem("receipt_resolved_twice", receipt, f"the log settles it {times} times")


def _annotations(conn: sqlite3.Connection, session: str, now: datetime) -> dict[str, list[str]]:
    """The session's concepts by annotation kind, as a recall naming them would mark them."""
    concepts = [
        row[0]
        for row in conn.execute(
            "SELECT uuid FROM memory_nodes WHERE group_id=? AND node_kind='concept' ORDER BY uuid",
            (session,),
        )
    ]
    known = memory_evidence.load(conn, session, concepts)
    contradicted = evidence.current_contradictions(
        [known.concepts[u] for u in concepts if u in known.concepts],
        known.contradictions,
        known.support,
        now,
    )
    citing = sorted(
        {
            source
            for source, target in conn.execute(
                "SELECT source, target FROM memory_edges WHERE group_id=? AND kind='depends_on'",
                (session,),
            )
            if evidence.ConceptId(target) in contradicted
            and contradicted[evidence.ConceptId(target)].source != source
        }
    )
    older = [
        row[0]
        for row in conn.execute(
            "SELECT DISTINCT older FROM memory_superseded WHERE group_id=? ORDER BY older",
            (session,),
        )
    ]
    demoted = [
        row[0]
        for row in conn.execute(
            "SELECT node_id FROM canon_nodes WHERE group_id=? AND status != 'Canonical' AND"
            " demotion_cause='supersession' AND superseded_by IS NOT NULL ORDER BY node_id",
            (session,),
        )
    ]
    return {
        "contradiction": sorted(str(node) for node in contradicted),
        "rests_on_contradicted": citing,
        "possibly_superseded": older,
        "superseded": demoted,
    }
