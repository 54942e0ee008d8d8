"""When a concept is contradicted: the evidence rules of seed 001's contradiction warnings.

Pure functions over what the store holds about a concept: its contradictions (Contradicts edges
into it) and its supporting evidence (the concepts that cite it in depends_on, and its parent_of
children). Recall's Contradicted line, the rests-on-contradicted line, lambo_stale, the
contradiction daemon and garbage collection's correction protection all read the same rule here.
The clock arrives as `now`; nothing here reads one.

The rule (M-REC-113..128, canonization.md §7): a contradiction of concept T, dated by the
about-time of the write that first declared it, is current when it is strictly newer than T
itself and strictly newer than every piece of T's counted support. Support counts once the write
that declared it is at least the edge age floor old (measured from when it was written, whatever
its event_time), and never when that write also wrote T, when the agent that declared the
contradiction wrote it, or when it is the contradicting concept itself. Each edge is dated and
attributed by its first write: sending a contradiction or a citation again changes nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final, NewType

from lcg.domain.memory.text import MemoryArgumentError, about_time

ConceptId = NewType("ConceptId", str)
"""A memory concept's full node id (the hyphenated uuid)."""

InteractionId = NewType("InteractionId", str)
"""The write (derive or record_action call) that wrote something: its interaction node's id, or
any other value that names one write the same way on every record passed in."""

EDGE_MIN_AGE: Final = timedelta(seconds=60)
"""canonization_edge_min_age: how old a write must be before its evidence counts."""

RESTS_ON_LINES: Final = 3
"""At most this many rests-on-contradicted lines per hit; the rest are one count line."""

STALE_PAGE_ROWS: Final = 50
"""Rows in one lambo_stale page."""


def dated(about: datetime, written_at: datetime) -> datetime:
    """A write's date as both sides of the rule read it: its about-time, never later than when
    it was written (a future event_time counts as the write's own time), in UTC."""
    return about_time(about, written_at)


@dataclass(frozen=True, slots=True)
class Concept:
    """A concept the rule is asked about: its id and its first write."""

    node_id: ConceptId
    written_at: datetime
    about_time: datetime
    agent_id: str
    interaction: InteractionId

    @property
    def dated(self) -> datetime:
        """The concept's about-time, clamped to when it was written."""
        return dated(self.about_time, self.written_at)


@dataclass(frozen=True, slots=True)
class Contradiction:
    """A Contradicts edge: `source` named `target` in against, in the write described here.

    `source_key` is the contradicting concept's canonical key (None when it has none), which
    breaks ties between contradictions dated alike.
    """

    target: ConceptId
    source: ConceptId
    source_key: str | None
    agent_id: str
    written_at: datetime
    about_time: datetime

    @property
    def dated(self) -> datetime:
        """When the contradiction is dated: its first write's about-time, clamped."""
        return dated(self.about_time, self.written_at)


class SupportKind(StrEnum):
    """How a concept supports another: it cites it, or it is one of its parent_of children."""

    DEPENDS_ON = "depends_on"
    PARENT_OF = "parent_of"


@dataclass(frozen=True, slots=True)
class Support:
    """One piece of `target`'s supporting evidence: `concept` cites it in depends_on (derive or
    record_action) or is one of its parent_of children, declared by the write described here.

    `wrote_target` says that this write also wrote the target itself (re-sent it); a write that
    created the target is recognised by its interaction, so either way the support never counts.
    """

    target: ConceptId
    concept: ConceptId
    kind: SupportKind
    agent_id: str
    written_at: datetime
    about_time: datetime
    interaction: InteractionId
    wrote_target: bool = False

    @property
    def dated(self) -> datetime:
        """When the support is dated: its first write's about-time, clamped."""
        return dated(self.about_time, self.written_at)


@dataclass(frozen=True, slots=True)
class RestsOn:
    """A hit cites `cited` in its own depends_on, and `cited` is contradicted by this."""

    cited: ConceptId
    contradiction: Contradiction


@dataclass(frozen=True, slots=True)
class RestsOnLines:
    """A hit's rests-on-contradicted lines: at most three, then how many more there are."""

    shown: tuple[RestsOn, ...]
    more: int


@dataclass(frozen=True, slots=True)
class StaleRow:
    """A direct dependency that rests on a contradicted concept: `dependent` cites `cited`."""

    dependent: ConceptId
    cited: ConceptId
    contradiction: Contradiction


@dataclass(frozen=True, slots=True)
class StalePage:
    """One lambo_stale page: up to 50 rows from `offset`, and the total over every page."""

    rows: tuple[StaleRow, ...]
    total: int
    offset: int


# --- first writes -----------------------------------------------------------------------------


def _first_contradictions(contradictions: Iterable[Contradiction]) -> list[Contradiction]:
    """One record per edge, its first write's: sending it again does not re-date it."""
    first: dict[tuple[ConceptId, ConceptId], Contradiction] = {}
    for edge in contradictions:
        key = (edge.source, edge.target)
        known = first.get(key)
        if known is None or _contradiction_order(edge) < _contradiction_order(known):
            first[key] = edge
    return list(first.values())


def _first_support(support: Iterable[Support]) -> list[Support]:
    """One record per dependence: a re-sent citation reinforces it and is not new evidence."""
    first: dict[tuple[SupportKind, ConceptId, ConceptId], Support] = {}
    for edge in support:
        key = (edge.kind, edge.concept, edge.target)
        known = first.get(key)
        if known is None or _support_order(edge) < _support_order(known):
            first[key] = edge
    return list(first.values())


# Earliest write first. Two records of one edge written at the same instant are told apart by
# every other field, so the choice never depends on the order the records arrive in.


def _contradiction_order(
    edge: Contradiction,
) -> tuple[datetime, datetime, datetime, str, bool, str]:
    return (
        edge.written_at,
        edge.dated,
        edge.about_time,
        edge.agent_id,
        edge.source_key is None,
        edge.source_key or "",
    )


def _support_order(edge: Support) -> tuple[datetime, datetime, datetime, str, str, bool]:
    return (
        edge.written_at,
        edge.dated,
        edge.about_time,
        edge.agent_id,
        edge.interaction,
        edge.wrote_target,
    )


# --- the rule ---------------------------------------------------------------------------------


def _check_clock(now: datetime, min_age: timedelta) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")
    if min_age < timedelta(0):
        raise ValueError("min_age must not be negative")


def _counts(
    piece: Support,
    concept: Concept,
    contradiction: Contradiction,
    now: datetime,
    min_age: timedelta,
) -> bool:
    """Whether `piece` counts as evidence for `concept` against `contradiction`."""
    return (
        now - piece.written_at >= min_age
        and piece.interaction != concept.interaction
        and not piece.wrote_target
        and piece.agent_id != contradiction.agent_id
        and piece.concept != contradiction.source
    )


def _fires(
    concept: Concept,
    contradiction: Contradiction,
    support: Sequence[Support],
    now: datetime,
    min_age: timedelta,
) -> bool:
    when = contradiction.dated
    if when <= concept.dated:
        return False
    return all(
        piece.dated < when
        for piece in support
        if _counts(piece, concept, contradiction, now, min_age)
    )


def _newest(contradictions: Iterable[Contradiction]) -> Contradiction | None:
    """One per hit: the newest, then the contradicting concept's canonical key (a concept with
    no key after every key), then its id."""
    chosen: Contradiction | None = None
    for candidate in contradictions:
        if chosen is None or _precedes(candidate, chosen):
            chosen = candidate
    return chosen


def _precedes(first: Contradiction, second: Contradiction) -> bool:
    if first.dated != second.dated:
        return first.dated > second.dated
    return _tie_key(first) < _tie_key(second)


def _tie_key(contradiction: Contradiction) -> tuple[bool, str, str]:
    key = contradiction.source_key
    return (key is None, key or "", contradiction.source)


def _current(
    concept: Concept,
    contradictions: Iterable[Contradiction],
    support: Sequence[Support],
    now: datetime,
    min_age: timedelta,
) -> Contradiction | None:
    """The rule over records already reduced to their first writes and grouped by target."""
    firing = (
        edge
        for edge in contradictions
        if edge.written_at <= now
        and edge.source != concept.node_id
        and _fires(concept, edge, support, now, min_age)
    )
    return _newest(firing)


def current_contradiction(
    concept: Concept,
    contradictions: Iterable[Contradiction],
    support: Iterable[Support],
    now: datetime,
    min_age: timedelta = EDGE_MIN_AGE,
) -> Contradiction | None:
    """The contradiction recall shows on `concept` at `now`, or None when none is current.

    Records about other concepts are ignored, and so is anything written after `now` (it has
    not happened yet at that time). The result carries what the Contradicted line needs: its
    date (`dated`), the declaring agent and the contradicting concept's id.
    """
    _check_clock(now, min_age)
    edges = [e for e in _first_contradictions(contradictions) if e.target == concept.node_id]
    pieces = [p for p in _first_support(support) if p.target == concept.node_id]
    return _current(concept, edges, pieces, now, min_age)


# --- many concepts at once --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Grouped:
    contradictions: Mapping[ConceptId, list[Contradiction]]
    support: Mapping[ConceptId, list[Support]]


def _group(contradictions: Iterable[Contradiction], support: Iterable[Support]) -> _Grouped:
    edges: dict[ConceptId, list[Contradiction]] = {}
    for edge in _first_contradictions(contradictions):
        edges.setdefault(edge.target, []).append(edge)
    pieces: dict[ConceptId, list[Support]] = {}
    for piece in _first_support(support):
        pieces.setdefault(piece.target, []).append(piece)
    return _Grouped(edges, pieces)


def current_contradictions(
    concepts: Iterable[Concept],
    contradictions: Iterable[Contradiction],
    support: Iterable[Support],
    now: datetime,
    min_age: timedelta = EDGE_MIN_AGE,
) -> dict[ConceptId, Contradiction]:
    """`current_contradiction` for many concepts, grouping the records once: the concepts that
    are contradicted at `now`, each with the contradiction recall shows."""
    _check_clock(now, min_age)
    grouped = _group(contradictions, support)
    found: dict[ConceptId, Contradiction] = {}
    for concept in concepts:
        edges = grouped.contradictions.get(concept.node_id, [])
        if not edges:
            continue
        pieces = grouped.support.get(concept.node_id, [])
        current = _current(concept, edges, pieces, now, min_age)
        if current is not None:
            found[concept.node_id] = current
    return found


def next_change(
    contradictions: Iterable[Contradiction],
    support: Iterable[Support],
    now: datetime,
    min_age: timedelta = EDGE_MIN_AGE,
) -> datetime | None:
    """The first instant after `now` at which `current_contradictions` over these records can
    answer differently with no new record, or None when it never can: the rule reads the clock
    only as "a contradiction written by now" and "support at least `min_age` old", so the
    answer holds until the next write time of a contradiction, or of support plus `min_age`."""
    _check_clock(now, min_age)
    later = [edge.written_at for edge in contradictions if edge.written_at > now]
    later += [aged for piece in support if (aged := piece.written_at + min_age) > now]
    return min(later, default=None)


def rests_on_contradicted(
    hit: ConceptId,
    cited: Iterable[Concept],
    contradictions: Iterable[Contradiction],
    support: Iterable[Support],
    now: datetime,
    min_age: timedelta = EDGE_MIN_AGE,
    limit: int = RESTS_ON_LINES,
) -> RestsOnLines:
    """The rests-on-contradicted lines of `hit`, whose own depends_on cites `cited`.

    A cited concept is contradicted by exactly the rule of `current_contradiction`. It gets no
    line when `hit` itself contradicts it (any Contradicts edge from `hit` to it). Lines follow
    the cited concepts' ids, at most `limit`; `more` counts the contradicted concepts left out.
    """
    own = [c for c in cited if c.node_id != hit]
    targets = {c.node_id for c in own}
    edges = [e for e in contradictions if e.target in targets]
    contradicted_by_hit = {e.target for e in edges if e.source == hit and e.written_at <= now}
    candidates = [c for c in own if c.node_id not in contradicted_by_hit]
    current = current_contradictions(candidates, edges, support, now, min_age)
    lines = tuple(RestsOn(cited_id, current[cited_id]) for cited_id in sorted(current))
    return RestsOnLines(lines[:limit], max(0, len(lines) - limit))


def stale_rows(
    concepts: Iterable[Concept],
    contradictions: Iterable[Contradiction],
    support: Iterable[Support],
    now: datetime,
    min_age: timedelta = EDGE_MIN_AGE,
    targets: Iterable[ConceptId] | None = None,
) -> tuple[StaleRow, ...]:
    """Every direct dependency that rests on a contradicted concept, in lambo_stale's order.

    `concepts` are the cited concepts to check (the session's contradicted ones, or any
    superset); `targets`, when given, keeps only those cited concepts (a receipt's stale_report
    reads the write's affected targets). A row is a depends_on citation, written by `now`, of
    a concept contradicted by the rule of `current_contradiction`; a dependent that itself
    contradicts the cited concept is left out, and so are parent_of children and indirect
    dependents. Rows are ordered by the cited concept's id, then the dependent's id.
    """
    kept = None if targets is None else frozenset(targets)
    checked = [c for c in concepts if kept is None or c.node_id in kept]
    edges = list(_first_contradictions(contradictions))
    pieces = _first_support(support)
    current = current_contradictions(checked, edges, pieces, now, min_age)
    contradicting = {(e.source, e.target) for e in edges if e.written_at <= now}
    rows = [
        StaleRow(piece.concept, piece.target, current[piece.target])
        for piece in pieces
        if piece.kind is SupportKind.DEPENDS_ON
        and piece.target in current
        and piece.written_at <= now
        and (piece.concept, piece.target) not in contradicting
    ]
    rows.sort(key=lambda row: (row.cited, row.dependent))
    return tuple(rows)


def check_stale_offset(offset: int | None) -> int:
    """lambo_stale's offset: omitted is 0; a negative offset is refused (OQ-18)."""
    if offset is None:
        return 0
    if isinstance(offset, bool) or offset < 0:
        raise MemoryArgumentError("offset must be 0 or more", field="offset", rule="range")
    return offset


def stale_page(
    rows: tuple[StaleRow, ...], offset: int = 0, size: int = STALE_PAGE_ROWS
) -> StalePage:
    """The page of `rows` starting at `offset` (past the end: no rows), with the total."""
    start = check_stale_offset(offset)
    return StalePage(rows[start : start + size], len(rows), start)
