"""Garbage collection's pure rules: when a sweep is due, and what one sweep collects and bumps.

Seed 001 and canonization.md §8 (upstream daemon/gc.rs): a sweep runs after `gc_interval`
mutations, or after `gc_max_interval` with at least `gc_idle_floor` mutations; it collects
orphans, concepts unreachable from every interaction, and Entities and Resources whose eviction
score is under their type's bar, at most `collection_cap` of them, and bumps every other
concept's `gc_survived`. Venerable, Canonical and root-goal concepts are protected, and so are
the two contradiction protections of §7 (P1 follows the contradicted concept's status, P2, #197,
follows the contradiction warning). The caller loads the facts, passes the clock in and appends
what `plan_sweep` returns as events; nothing here reads a clock or a store.
"""

from __future__ import annotations

import math
from collections import abc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from fractions import Fraction
from itertools import islice
from typing import Any, Final, TypeVar

from lcg.domain.memory.canonization import Status
from lcg.domain.memory.evidence import (
    EDGE_MIN_AGE,
    Concept,
    ConceptId,
    Contradiction,
    Support,
    current_contradictions,
)
from lcg.domain.memory.text import ConceptType

_T = TypeVar("_T")

GC_SURVIVED_MAX: Final = 2**31 - 1
"""`gc_survived` saturates here (upstream's i32)."""


class Trigger(StrEnum):
    """Why a sweep ran: its wire name in lambo_stats' `gc.last_sweep.trigger`."""

    MUTATIONS = "mutations"
    ELAPSED = "elapsed"


CanonizationStatus = Status  # one ladder: lcg.domain.memory.canonization


class EdgeKind(StrEnum):
    """The memory store's edge kinds (memory_edges.kind)."""

    PRECEDES = "precedes"
    DERIVES = "derives"
    SEMANTIC = "semantic"
    DEPENDS_ON = "depends_on"
    PARENT_OF = "parent_of"
    PRODUCES = "produces"
    MODIFIES = "modifies"
    CONTRADICTS = "contradicts"


PROVENANCE_KINDS: Final = frozenset({EdgeKind.DERIVES, EdgeKind.SEMANTIC})
"""An interaction's edge to a concept it wrote (a semantic merge is a derivation too)."""

STRUCTURAL_KINDS: Final = frozenset(
    {EdgeKind.DEPENDS_ON, EdgeKind.PARENT_OF, EdgeKind.PRODUCES, EdgeKind.MODIFIES}
)
"""Upstream's Dependency, Hierarchical and Causal edges: concept to concept."""

EDGE_BONUS: Final[Mapping[EdgeKind, float]] = {
    EdgeKind.DEPENDS_ON: 0.02,
    EdgeKind.PRODUCES: 0.02,
    EdgeKind.MODIFIES: 0.02,
    EdgeKind.PARENT_OF: 0.015,
}
"""The score's per-edge bonus (upstream: Dependency and Causal 0.02, Hierarchical 0.015;
provenance and temporal edges 0). This store writes no CoOccurrence or weighted Semantic edges."""

MAX_EDGE_BONUS: Final = 0.25
MAX_SCORE: Final = 1.40

TYPE_MODIFIER: Final[Mapping[ConceptType, float]] = {
    ConceptType.CONSTRAINT: 0.15,
    ConceptType.ENTITY: 0.05,
    ConceptType.LOGIC: 0.05,
    ConceptType.RESOURCE: 0.0,
    ConceptType.OBSERVATION: -0.10,
}

EVICTION_RESISTANCE: Final[Mapping[ConceptType, float]] = {
    ConceptType.CONSTRAINT: 1.5,
    ConceptType.ENTITY: 1.2,
    ConceptType.LOGIC: 1.1,
    ConceptType.RESOURCE: 1.0,
    ConceptType.OBSERVATION: 0.7,
}
"""A type's bar is `min_concept_score / resistance`: Entity 0.10, Resource 0.12."""


# --- knobs ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GcKnobs:
    """Every knob garbage collection reads (canonization.md §10), with upstream's defaults.

    Only `gc_interval`, `gc_max_interval` and `gc_idle_floor` are settable (`[daemon]` in the
    settings file); the rest are fixed constants kept here so a test can state them.
    """

    gc_interval: int = 10_000
    gc_max_interval: timedelta = timedelta(seconds=86_400)
    gc_idle_floor: int = 100
    min_concept_score: float = 0.12
    score_cut_types: frozenset[ConceptType] = frozenset({ConceptType.ENTITY, ConceptType.RESOURCE})
    recency_window: timedelta = timedelta(days=365)
    collect_fraction: float = 0.05
    collect_floor: int = 32
    bump_chunk: int = 500
    advisory_ceiling: int = 10_000
    clock_skew: timedelta = timedelta(minutes=5)
    max_canonical_nodes: int = 1000
    edge_min_age: timedelta = EDGE_MIN_AGE
    weight_recency: float = 0.25
    weight_frequency: float = 0.20
    weight_activity: float = 0.20
    weight_density: float = 0.35

    def __post_init__(self) -> None:
        if self.gc_interval < 1:
            raise ValueError("gc_interval must be at least 1")
        if self.gc_max_interval <= timedelta(0):
            raise ValueError("gc_max_interval_secs must be more than 0")
        if self.gc_idle_floor < 0:
            raise ValueError("gc_idle_floor must be 0 or more")
        if self.bump_chunk < 1:
            raise ValueError("bump_chunk must be at least 1")

    @property
    def warnings(self) -> tuple[str, ...]:
        """Settings that are accepted but say something odd (upstream warns, never refuses)."""
        if self.gc_idle_floor >= self.gc_interval:
            return (
                f"gc_idle_floor {self.gc_idle_floor} is not below gc_interval "
                f"{self.gc_interval}: the elapsed trigger can never fire first",
            )
        return ()

    def bar(self, concept_type: ConceptType) -> float | None:
        """The score cut's bar for a type, or None for a type exempt from the cut."""
        if concept_type not in self.score_cut_types:
            return None
        return self.min_concept_score / EVICTION_RESISTANCE[concept_type]


# --- triggers ---------------------------------------------------------------------------------


def anchor_gc_clock(last_gc_at: datetime | None, now: datetime, knobs: GcKnobs) -> datetime | None:
    """The `last_gc_at` to persist before checking triggers, or None when it stands.

    An unset clock starts at the first daemon cycle; one more than `clock_skew` in the future
    (a wall-clock jump) is re-anchored at now. The mutation count is not touched.
    """
    _check_aware(now)
    if last_gc_at is None or last_gc_at - now > knobs.clock_skew:
        return now
    return None


def should_sweep(
    mutations_since: int,
    last_gc_at: datetime | None,
    now: datetime,
    knobs: GcKnobs,
    *,
    bumps_pending: int = 0,
) -> Trigger | None:
    """Whether a sweep is due, and why.

    `mutations_since` is `epoch - last_gc_epoch` (GC's own writes excluded). The mutation
    trigger needs no clock; the elapsed one needs `gc_idle_floor` mutations and a clock that
    has started, and measures from one stored instant, so a long outage still gives one sweep.
    Nothing is due while the last sweep's survivor bumps are still draining.
    """
    _check_aware(now)
    if bumps_pending > 0:
        return None
    since = max(0, mutations_since)
    if since >= knobs.gc_interval:
        return Trigger.MUTATIONS
    if since < knobs.gc_idle_floor or last_gc_at is None:
        return None
    if now - last_gc_at >= knobs.gc_max_interval:
        return Trigger.ELAPSED
    return None


# --- what a sweep reads -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConceptFacts:
    """What a sweep needs to know about one concept of the session.

    `created_at` is when it was first written (write time, not its about-time: a backdated
    event_time does not age a concept out); `last_accessed` is its last recall, if any.
    """

    node_id: ConceptId
    concept_type: ConceptType
    status: CanonizationStatus
    created_at: datetime
    last_accessed: datetime | None = None
    access_count: int = 0
    gc_survived: int = 0
    root_goal: bool = False


@dataclass(frozen=True, slots=True)
class GcEdge:
    """One stored edge. Provenance edges run from an interaction; precedes edges join two
    interactions; every other kind joins two concepts."""

    kind: EdgeKind
    source: str
    target: str


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """The whole session as one sweep sees it.

    `concepts` must hold every concept of the session (an edge into a concept not listed is
    ignored); `interaction_count` is the number of interaction nodes; `epoch` is the mutation
    count before the sweep, which rotates the survivor bump order.
    """

    concepts: Sequence[ConceptFacts]
    edges: Sequence[GcEdge]
    interaction_count: int
    epoch: int


@dataclass(frozen=True, slots=True)
class FactColumns:
    """`SessionFacts` as columns (row i of each concept column is one concept) and the edges as
    `(kind value, source, target)` triples: what the store hands a sweep and the daemon score
    without an object per concept or per edge (100k concepts, 250k edges)."""

    node_ids: Sequence[ConceptId]
    concept_types: Sequence[ConceptType]
    statuses: Sequence[CanonizationStatus]
    created_at: Sequence[datetime]
    last_accessed: Sequence[datetime | None]
    access_counts: Sequence[int]
    gc_survived: Sequence[int]
    root_goals: Sequence[bool]
    edges: abc.Collection[tuple[str, str, str]]
    interaction_count: int
    epoch: int
    edges_distinct: bool = False  # True when the store's unique key already dedupes `edges`

    def __post_init__(self) -> None:
        size = len(self.node_ids)
        columns = (
            self.concept_types,
            self.statuses,
            self.created_at,
            self.last_accessed,
            self.access_counts,
            self.gc_survived,
            self.root_goals,
        )
        if any(len(column) != size for column in columns):
            raise ValueError("every concept column needs one value per concept")

    @classmethod
    def of(cls, facts: SessionFacts) -> FactColumns:
        """The same session, as columns."""
        concepts = facts.concepts
        return cls(
            node_ids=[c.node_id for c in concepts],
            concept_types=[c.concept_type for c in concepts],
            statuses=[c.status for c in concepts],
            created_at=[c.created_at for c in concepts],
            last_accessed=[c.last_accessed for c in concepts],
            access_counts=[c.access_count for c in concepts],
            gc_survived=[c.gc_survived for c in concepts],
            root_goals=[c.root_goal for c in concepts],
            edges={(e.kind.value, e.source, e.target) for e in facts.edges},
            interaction_count=facts.interaction_count,
            epoch=facts.epoch,
        )


@dataclass(frozen=True, slots=True)
class EvidenceInputs:
    """The contradiction records (§7) and what the evidence rule needs about contradicted
    concepts. `concepts` need only the targets of `contradictions`."""

    concepts: Sequence[Concept] = ()
    contradictions: Sequence[Contradiction] = ()
    support: Sequence[Support] = ()


# --- what a sweep decides ---------------------------------------------------------------------


class CollectReason(StrEnum):
    """Which clause collected a concept."""

    ORPHAN = "orphan"
    DISCONNECTED = "disconnected"
    UNDER_BAR = "under_bar"
    CASCADE = "cascade"


class KeptReason(StrEnum):
    """Why a concept is protected from this sweep."""

    STATUS = "status"
    ROOT_GOAL = "root_goal"
    CONTRADICTS_HELD_STATUS = "contradicts_venerable_or_canonical"
    SHOWN_CORRECTION = "shown_correction"


@dataclass(frozen=True, slots=True)
class Collection:
    """One collected concept and the clause that collected it."""

    node_id: ConceptId
    reason: CollectReason


@dataclass(frozen=True, slots=True)
class LastSweep:
    """lambo_stats' `gc.last_sweep`, field for field."""

    trigger: Trigger
    collected: int
    deferred: int
    collection_cap: int
    cap_bound: bool
    resources_spared_by_dependents: int
    survivors_deferred: int


@dataclass(frozen=True, slots=True)
class Sweep:
    """One sweep's decisions. Id tuples are in id order, except the bumps (drain order)."""

    trigger: Trigger
    collected: tuple[Collection, ...]
    deferred: tuple[ConceptId, ...]
    collection_cap: int
    resources_spared: tuple[ConceptId, ...]
    protected: Mapping[ConceptId, KeptReason]
    bumps: tuple[ConceptId, ...]
    pending_bumps: tuple[ConceptId, ...]
    canonical_count: int
    canonical_over_budget: bool
    warnings: tuple[str, ...] = ()

    @property
    def collected_ids(self) -> tuple[ConceptId, ...]:
        """The collected concepts' ids, in id order."""
        return tuple(c.node_id for c in self.collected)

    @property
    def cap_bound(self) -> bool:
        """Whether the per-sweep cap held anything back."""
        return bool(self.deferred)

    @property
    def survivors_deferred(self) -> int:
        """Survivor bumps left to drain after this sweep's first chunk."""
        return len(self.pending_bumps)

    def last_sweep(self) -> LastSweep:
        """The figures lambo_stats reports for this sweep."""
        return LastSweep(
            trigger=self.trigger,
            collected=len(self.collected),
            deferred=len(self.deferred),
            collection_cap=self.collection_cap,
            cap_bound=self.cap_bound,
            resources_spared_by_dependents=len(self.resources_spared),
            survivors_deferred=self.survivors_deferred,
        )


# --- the graph a sweep walks ------------------------------------------------------------------

_PROVENANCE_VALUES: Final = frozenset(kind.value for kind in PROVENANCE_KINDS)
_UNCONNECTING_VALUES: Final = frozenset({EdgeKind.PRECEDES.value, EdgeKind.CONTRADICTS.value})

Pause = Callable[[], None]
"""Called between chunks of a long pass over a session's rows or edges. A job on a thread that
others share passes one that lets them run; the rules themselves never wait."""
PAUSE_EVERY: Final = 512


def no_pause() -> None:
    """Run a pass straight through."""


def _paced(items: Iterable[_T], pause: Pause) -> Iterator[_T]:
    """`items`, calling `pause()` before each `PAUSE_EVERY` of them."""
    if pause is no_pause:
        yield from items
        return
    rest = iter(items)
    while chunk := tuple(islice(rest, PAUSE_EVERY)):
        pause()
        yield from chunk


@dataclass(frozen=True, slots=True)
class _Graph:
    """The session's concepts (by row: row i is `facts.node_ids[i]`) and their edges, indexed
    once per sweep.

    Contradicts edges are left out of everything here: a contradiction keeps nothing connected
    and changes no score (M-CAN-014, M-CAN-045); its two protections read `EvidenceInputs`.
    `neighbours` is empty unless the graph was built to be walked.
    """

    facts: FactColumns
    row: Mapping[str, int]
    neighbours: Sequence[list[int]]
    anchored: Sequence[int]
    incident: Sequence[int]
    bonus: Sequence[float]
    derived_by: Sequence[int]
    dependents: frozenset[int]
    most_incident: int
    pause: Pause


def _rows(node_ids: Sequence[ConceptId]) -> dict[str, int]:
    row: dict[str, int] = dict(zip(node_ids, range(len(node_ids)), strict=True))
    if len(row) != len(node_ids):
        seen: set[str] = set()
        for node in node_ids:
            if node in seen:
                raise ValueError(f"concept {node} is listed twice")
            seen.add(node)
    return row


_BONUS_SUMS: dict[tuple[int, int, int], float] = {}


def _bonus_sum(steady: int, parents: int, produces: int) -> float:
    """A concept's edge bonus summed edge by edge in the (kind, source, target) order of its
    distinct edges: depends_on and modifies (0.02 each), then parent_of (0.015), then produces
    (0.02). Float sums depend on their order, so the order is the one a sorted edge list gives,
    whatever order the edges arrive in; equal counts give the same sum, so it is kept."""
    key = (steady, parents, produces)
    found = _BONUS_SUMS.get(key)
    if found is None:
        total = 0.0
        for _ in range(steady):
            total += EDGE_BONUS[EdgeKind.DEPENDS_ON]
        for _ in range(parents):
            total += EDGE_BONUS[EdgeKind.PARENT_OF]
        for _ in range(produces):
            total += EDGE_BONUS[EdgeKind.PRODUCES]
        found = _BONUS_SUMS[key] = total
    return found


def _build(facts: FactColumns, *, walk: bool = True, pause: Pause = no_pause) -> _Graph:
    """Index the session once, in one pass over the edges that turns their ends into rows:
    every later pass reads small ints (a pass over 250k edges' strings is memory-bound)."""
    row = _rows(facts.node_ids)
    size = len(facts.node_ids)
    incident = [0] * size
    steady, parent_edges, produced = [0] * size, [0] * size, [0] * size
    derivers: set[tuple[str, int]] = set()
    pairs: set[tuple[int, int]] = set()  # (source, target) of structural edges, distinct
    parents: set[int] = set()
    neighbours: list[list[int]] = [[] for _ in range(size)] if walk else []
    at = row.get
    # A re-sent edge is one edge; kind values compare as strings (EdgeKind is a StrEnum).
    edges = facts.edges if facts.edges_distinct else set(facts.edges)
    for kind, source_text, target_text in _paced(edges, pause):
        target = at(target_text)
        if kind in _PROVENANCE_VALUES:
            if target is not None:
                incident[target] += 1
                derivers.add((source_text, target))
            continue
        if kind in _UNCONNECTING_VALUES:
            continue
        source = at(source_text)
        if source is None or target is None or source == target:
            continue
        incident[source] += 1
        incident[target] += 1
        if kind == EdgeKind.PARENT_OF:
            parent_edges[source] += 1
            parent_edges[target] += 1
            parents.add(source)
        elif kind == EdgeKind.PRODUCES:
            produced[source] += 1
            produced[target] += 1
        elif kind in (EdgeKind.DEPENDS_ON, EdgeKind.MODIFIES):
            steady[source] += 1
            steady[target] += 1
        if walk:
            neighbours[source].append(target)
            neighbours[target].append(source)
        pairs.add((source, target))
    derived_by = [0] * size
    for _, target in derivers:
        derived_by[target] += 1
    return _Graph(
        facts=facts,
        row=row,
        neighbours=neighbours,
        anchored=[node for node in range(size) if derived_by[node]],
        incident=incident,
        bonus=list(map(_bonus_sum, steady, parent_edges, produced)),
        derived_by=derived_by,
        dependents=_with_dependents(size, pairs, parents),
        most_incident=max(incident, default=0),
        pause=pause,
    )


def _with_dependents(size: int, pairs: set[tuple[int, int]], parents: set[int]) -> frozenset[int]:
    """Concepts others depend on: another concept has a structural edge into it (it is cited,
    a parent_of child, or an action's target), it has parent_of children (the seed's dependents),
    or it is some concept's only structural source (upstream's blast radius)."""
    sources = [0] * size
    only = [0] * size
    for source, target in pairs:
        sources[target] += 1
        only[target] = source
    found = set(parents)
    for target in range(size):
        if sources[target]:
            found.add(target)
            if sources[target] == 1:
                found.add(only[target])
    return frozenset(found)


def _reachable(graph: _Graph, removed: Iterable[int] = ()) -> bytearray:
    """Concepts reachable from any interaction, edges followed either way, without `removed`:
    a flag per row (1: reachable)."""
    blocked = bytearray(len(graph.facts.node_ids))
    for node in removed:
        blocked[node] = 1
    seen = bytearray(len(blocked))
    stack = [node for node in graph.anchored if not blocked[node]]
    for node in stack:
        seen[node] = 1
    neighbours, pause = graph.neighbours, graph.pause
    walked = 0
    while stack:
        walked += 1
        if not walked % PAUSE_EVERY:
            pause()
        for other in neighbours[stack.pop()]:
            if not seen[other] and not blocked[other]:
                seen[other] = 1
                stack.append(other)
    return seen


# --- the score cut ----------------------------------------------------------------------------


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0


def _touched(created_at: datetime, last_accessed: datetime | None) -> datetime:
    return created_at if last_accessed is None else max(created_at, last_accessed)


def _recency_of(touched: datetime, now: datetime, window: timedelta) -> float:
    if window <= timedelta(0):
        return 0.0
    age = max(timedelta(0), now - touched)
    return _unit(1 - age / window)


def eviction_recency(concept: ConceptFacts, now: datetime, window: timedelta) -> float:
    """1 at the last touch (the later of creation and last recall), falling to 0 over
    `window`; a touch in the future counts as now."""
    return _recency_of(_touched(concept.created_at, concept.last_accessed), now, window)


class _Memo(dict[Any, float]):
    """A term of the daemon score per distinct input: most concepts share their write's time
    and small counts, so each product is worked out once (the same float every time)."""

    def __init__(self, term: Callable[[Any], float]) -> None:
        super().__init__()
        self._term = term

    def __missing__(self, key: Any) -> float:
        value = self[key] = self._term(key)
        return value


def _eviction_scores(graph: _Graph, knobs: GcKnobs, now: datetime) -> Callable[[int], float]:
    """The eviction score of a row: the live dimensions renormalised, plus the concept's own
    frequency, its edge bonus and its type modifier, clamped to [0, 1.40]. Each term is worked
    out once per distinct input (the same floats, summed in the same order)."""
    facts = graph.facts
    most, count = graph.most_incident, facts.interaction_count
    live = knobs.weight_recency + knobs.weight_activity + knobs.weight_density
    recency = _Memo(lambda at: knobs.weight_recency * _recency_of(at, now, knobs.recency_window))
    activity = _Memo(lambda n: knobs.weight_activity * _unit(n / count if count else 0))
    density = _Memo(lambda n: knobs.weight_density * _unit(n / most if most else 0.0))
    frequency = _Memo(lambda n: knobs.weight_frequency * _unit(n / 10))
    bonus = _Memo(lambda b: min(MAX_EDGE_BONUS, b))

    def score(node: int) -> float:
        weighted = (
            recency[_touched(facts.created_at[node], facts.last_accessed[node])]
            + activity[graph.derived_by[node]]
            + density[graph.incident[node]]
        )
        total = (
            (weighted / live if live > 0 else 0.0)
            + bonus[graph.bonus[node]]
            + TYPE_MODIFIER[facts.concept_types[node]]
            + frequency[facts.access_counts[node]]
        )
        return min(MAX_SCORE, max(0.0, total)) if math.isfinite(total) else 0.0

    return score


def daemon_scores(
    facts: SessionFacts | FactColumns, span: tuple[datetime, datetime] | None, knobs: GcKnobs
) -> dict[ConceptId, float]:
    """The daemon score S(c) of every concept (canonization.md §3), which Stage 1 ranks.

    S = 0.25R + 0.20F + 0.20A + 0.35D + edge bonus + type modifier, each dimension in [0, 1]
    and the total in [0, 1.40]. R places the concept's last touch (its last recall, else its
    creation) within the session's interaction span `span` (first, last); a zero span (or
    none) gives 1. F is access_count / 10, A the share of interactions that derived it, D its
    incident edges over the session's most.
    """
    columns = facts if isinstance(facts, FactColumns) else FactColumns.of(facts)
    return dict(zip(columns.node_ids, daemon_score_column(columns, span, knobs), strict=True))


def daemon_score_column(
    facts: FactColumns,
    span: tuple[datetime, datetime] | None,
    knobs: GcKnobs,
    pause: Pause = no_pause,
) -> list[float]:
    """`daemon_scores` as a column: row i is `facts.node_ids[i]`'s score."""
    graph = _build(facts, walk=False, pause=pause)
    return _score_column(
        ScoreInputs(
            created_at=facts.created_at,
            last_accessed=facts.last_accessed,
            access_counts=facts.access_counts,
            concept_types=facts.concept_types,
            interaction_count=facts.interaction_count,
        ),
        graph.derived_by,
        graph.incident,
        graph.bonus,
        span,
        knobs,
        pause,
    )


@dataclass(frozen=True, slots=True)
class Degrees:
    """What the daemon score reads of each concept's edges (row i: one concept), counted as
    `daemon_score_column` counts them over the session's distinct edges: `incident` its
    derives and semantic edges in plus its structural edges either way to another concept of
    the session, `derived_by` the distinct sources of the former, and the latter by kind
    (`steady`: depends_on and modifies, `parents`: parent_of, `produced`: produces). A store
    that keeps these as writes land scores a session without reading its edges (ADR 0040)."""

    incident: Sequence[int]
    derived_by: Sequence[int]
    steady: Sequence[int]
    parents: Sequence[int]
    produced: Sequence[int]


@dataclass(frozen=True, slots=True)
class ScoreInputs:
    """The concept columns the daemon score reads besides the edges (row i: one concept)."""

    created_at: Sequence[datetime]
    last_accessed: Sequence[datetime | None]
    access_counts: Sequence[int]
    concept_types: Sequence[ConceptType]
    interaction_count: int


def degree_score_column(
    concepts: ScoreInputs,
    degrees: Degrees,
    span: tuple[datetime, datetime] | None,
    knobs: GcKnobs,
    pause: Pause = no_pause,
) -> list[float]:
    """`daemon_score_column` from kept counters instead of the edges: the same floats."""
    size = len(concepts.created_at)
    columns = (
        degrees.incident,
        degrees.derived_by,
        degrees.steady,
        degrees.parents,
        degrees.produced,
        concepts.last_accessed,
        concepts.access_counts,
        concepts.concept_types,
    )
    if any(len(column) != size for column in columns):
        raise ValueError("every degree column needs one value per concept")
    bonus = list(map(_bonus_sum, degrees.steady, degrees.parents, degrees.produced))
    return _score_column(concepts, degrees.derived_by, degrees.incident, bonus, span, knobs, pause)


def _score_column(
    concepts: ScoreInputs,
    derived_by: Sequence[int],
    incident: Sequence[int],
    bonuses: Sequence[float],
    span: tuple[datetime, datetime] | None,
    knobs: GcKnobs,
    pause: Pause,
) -> list[float]:
    most, count = max(incident, default=0), concepts.interaction_count
    if span is None or span[1] <= span[0]:
        recency = _Memo(lambda _: knobs.weight_recency * 1.0)
    else:
        start, width = span[0], span[1] - span[0]
        recency = _Memo(lambda at: knobs.weight_recency * _unit((at - start) / width))
    frequency = _Memo(lambda n: knobs.weight_frequency * _unit(n / 10))
    activity = _Memo(lambda n: knobs.weight_activity * _unit(n / count if count else 0))
    density = _Memo(lambda n: knobs.weight_density * _unit(n / most if most else 0.0))
    bonus = _Memo(lambda b: min(MAX_EDGE_BONUS, b))
    scores: list[float] = []
    columns = zip(
        concepts.created_at,
        concepts.last_accessed,
        concepts.access_counts,
        concepts.concept_types,
        derived_by,
        incident,
        bonuses,
        strict=True,
    )
    for created, accessed, accesses, kind, derived, edges, edge_bonus in _paced(columns, pause):
        total = (
            recency[created if accessed is None else max(created, accessed)]
            + frequency[accesses]
            + activity[derived]
            + density[edges]
            + bonus[edge_bonus]
            + TYPE_MODIFIER[kind]
        )
        scores.append(min(MAX_SCORE, max(0.0, total)) if math.isfinite(total) else 0.0)
    return scores


# --- protections ------------------------------------------------------------------------------

_HELD_STATUSES: Final = frozenset({CanonizationStatus.VENERABLE, CanonizationStatus.CANONICAL})


def _protected(
    graph: _Graph, evidence: EvidenceInputs, now: datetime
) -> dict[ConceptId, KeptReason]:
    """Protection by status, root goal, and P1: contradicting a concept that is Venerable or
    Canonical right now (it follows the status, not the warning)."""
    facts = graph.facts
    kept: dict[ConceptId, KeptReason] = {}
    for node, status, root_goal in zip(
        facts.node_ids, facts.statuses, facts.root_goals, strict=True
    ):
        if status in _HELD_STATUSES:
            kept[node] = KeptReason.STATUS
        elif root_goal:
            kept[node] = KeptReason.ROOT_GOAL
    for edge in evidence.contradictions:
        target = graph.row.get(edge.target)
        if (
            edge.written_at <= now
            and edge.source in graph.row
            and edge.source != edge.target
            and target is not None
            and facts.statuses[target] in _HELD_STATUSES
        ):
            kept.setdefault(edge.source, KeptReason.CONTRADICTS_HELD_STATUS)
    return kept


def _corrections(
    graph: _Graph, evidence: EvidenceInputs, knobs: GcKnobs, now: datetime
) -> dict[ConceptId, ConceptId]:
    """For each contradicted concept in memory, the correction recall shows for it now."""
    concepts = [c for c in evidence.concepts if c.node_id in graph.row]
    edges = [e for e in evidence.contradictions if e.source in graph.row]
    current = current_contradictions(concepts, edges, evidence.support, now, knobs.edge_min_age)
    return {target: edge.source for target, edge in current.items()}


def _shown_corrections(
    graph: _Graph, doomed: set[ConceptId], corrections: Mapping[ConceptId, ConceptId]
) -> set[ConceptId]:
    """P2 (#197): a correction is kept while the concept it corrects stays in memory.

    Only a concept that survives on other grounds counts, so the least fixpoint is taken: two
    concepts that only contradict each other keep neither alive (M-CAN-049).
    """
    kept: set[ConceptId] = set()
    changed = True
    while changed:
        changed = False
        for target, source in sorted(corrections.items()):
            if target in graph.row and target not in doomed and source in doomed:
                doomed.discard(source)
                kept.add(source)
                changed = True
    return kept


def _keep_corrections_of(
    held: list[ConceptId],
    collected: dict[ConceptId, CollectReason],
    corrections: Mapping[ConceptId, ConceptId],
) -> None:
    """A deferred concept stays in memory, so its shown correction must too: move it from the
    collected to the deferred (it was collectable, so it takes no survivor bump)."""
    pending = list(held)
    while pending:
        source = corrections.get(pending.pop())
        if source is not None and source in collected:
            del collected[source]
            held.append(source)
            pending.append(source)


# --- one sweep --------------------------------------------------------------------------------


def collection_cap(unprotected: int, knobs: GcKnobs) -> int:
    """`max(collect_floor, ceil(collect_fraction x unprotected))`, in exact decimal arithmetic."""
    fraction = knobs.collect_fraction
    share = Fraction(str(fraction)) if math.isfinite(fraction) and fraction > 0 else Fraction(0)
    return max(knobs.collect_floor, math.ceil(min(share, Fraction(1)) * max(0, unprotected)))


@dataclass(frozen=True, slots=True)
class _Candidates:
    orphans: list[ConceptId]
    disconnected: list[ConceptId]
    under_bar: list[tuple[float, ConceptId]]
    spared: list[ConceptId]

    def ids(self) -> set[ConceptId]:
        return {*self.orphans, *self.disconnected, *(node for _, node in self.under_bar)}

    def without(self, kept: set[ConceptId]) -> _Candidates:
        return _Candidates(
            [n for n in self.orphans if n not in kept],
            [n for n in self.disconnected if n not in kept],
            [(r, n) for r, n in self.under_bar if n not in kept],
            self.spared,
        )

    def ordered(self) -> list[tuple[ConceptId, CollectReason]]:
        """Orphans by id, disconnected by id, then furthest under the bar first, then id."""
        return [
            *((n, CollectReason.ORPHAN) for n in sorted(self.orphans)),
            *((n, CollectReason.DISCONNECTED) for n in sorted(self.disconnected)),
            *((n, CollectReason.UNDER_BAR) for _, n in sorted(self.under_bar)),
        ]


def _candidates(
    graph: _Graph,
    protected: Mapping[ConceptId, KeptReason],
    knobs: GcKnobs,
    now: datetime,
) -> _Candidates:
    reachable = _reachable(graph)
    facts = graph.facts
    bars = {kind: knobs.bar(kind) for kind in ConceptType}
    score_of = _eviction_scores(graph, knobs, now)
    found = _Candidates([], [], [], [])
    for row, (node, concept_type) in _paced(
        enumerate(zip(facts.node_ids, facts.concept_types, strict=True)), graph.pause
    ):
        if node in protected:
            continue
        if graph.incident[row] == 0:
            found.orphans.append(node)
        elif not reachable[row]:
            found.disconnected.append(node)
        elif (bar := bars[concept_type]) is not None:
            score = score_of(row)
            if score >= bar:
                continue
            if concept_type is ConceptType.RESOURCE and row in graph.dependents:
                found.spared.append(node)
            else:
                found.under_bar.append((score / bar, node))
    return found


def plan_sweep(
    facts: SessionFacts | FactColumns,
    evidence: EvidenceInputs,
    knobs: GcKnobs,
    now: datetime,
    trigger: Trigger,
    *,
    pause: Pause = no_pause,
) -> Sweep:
    """Decide one sweep at `now`: what it collects, defers, spares, protects and bumps.

    Pure and deterministic: the input order of concepts, edges and evidence changes nothing.
    The caller appends the result as events (collections, bumps, the new `last_gc_at` and
    `last_gc_epoch`) and drains `pending_bumps` with `drain_bumps` on later ticks. `pause` is
    called between chunks of the long passes (see `Pause`).
    """
    _check_aware(now)
    columns = facts if isinstance(facts, FactColumns) else FactColumns.of(facts)
    graph = _build(columns, pause=pause)
    ids = graph.facts.node_ids
    protected = _protected(graph, evidence, now)
    found = _candidates(graph, protected, knobs, now)
    corrections = _corrections(graph, evidence, knobs, now)
    for node in _shown_corrections(graph, found.ids(), corrections):
        protected[node] = KeptReason.SHOWN_CORRECTION
    found = found.without(set(protected))
    cap = collection_cap(len(ids) - len(protected), knobs)
    ordered = found.ordered()
    collected = dict(ordered[:cap])
    held = [node for node, _ in ordered[cap:]]
    _keep_corrections_of(held, collected, corrections)
    reachable = _reachable(graph, [graph.row[node] for node in collected])
    kept_back = set(held)
    cascade = sorted(
        node
        for row, node in enumerate(ids)
        if not reachable[row] and node not in protected and node not in collected
        if node not in kept_back
    )
    room = max(0, cap - len(collected))
    collected.update((node, CollectReason.CASCADE) for node in cascade[:room])
    held.extend(cascade[room:])
    _keep_corrections_of(held, collected, corrections)
    return _sweep(graph, knobs, trigger, collected, held, cap, found, protected)


def _sweep(
    graph: _Graph,
    knobs: GcKnobs,
    trigger: Trigger,
    collected: Mapping[ConceptId, CollectReason],
    held: Sequence[ConceptId],
    cap: int,
    found: _Candidates,
    protected: Mapping[ConceptId, KeptReason],
) -> Sweep:
    facts = graph.facts
    deferred = set(held)
    survivors = sorted(n for n in facts.node_ids if n not in collected and n not in deferred)
    order = survivor_drain_order(survivors, facts.epoch)
    canonical = sum(
        1
        for status, node in zip(facts.statuses, facts.node_ids, strict=True)
        if status is CanonizationStatus.CANONICAL and node not in collected
        if node not in deferred
    )
    remaining = len(facts.node_ids) - len(collected)
    warnings: list[str] = []
    if deferred:
        warnings.append(
            f"GC collection cap bound: collected {len(collected)} of "
            f"{len(collected) + len(deferred)} candidates (cap {cap}); "
            f"{len(deferred)} deferred to the next sweep"
        )
    if canonical > knobs.max_canonical_nodes:
        warnings.append(
            f"canonical concept count {canonical} exceeds max_canonical_nodes "
            f"{knobs.max_canonical_nodes}; garbage collection does not demote"
        )
    if remaining > knobs.advisory_ceiling:
        warnings.append(
            f"concept count {remaining} exceeds the advisory {knobs.advisory_ceiling}; "
            "nothing evicted for it"
        )
    return Sweep(
        trigger=trigger,
        collected=tuple(Collection(n, collected[n]) for n in sorted(collected)),
        deferred=tuple(sorted(deferred)),
        collection_cap=cap,
        resources_spared=tuple(sorted(found.spared)),
        protected={n: protected[n] for n in sorted(protected)},
        bumps=tuple(order[: knobs.bump_chunk]),
        pending_bumps=tuple(order[knobs.bump_chunk :]),
        canonical_count=canonical,
        canonical_over_budget=canonical > knobs.max_canonical_nodes,
        warnings=tuple(warnings),
    )


# --- survivor bumps ---------------------------------------------------------------------------

_U64: Final = 2**64 - 1


def _splitmix64(seed: int) -> int:
    z = (seed + 0x9E37_79B9_7F4A_7C15) & _U64
    z = ((z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9) & _U64
    z = ((z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB) & _U64
    return z ^ (z >> 31)


def survivor_drain_order(survivors: Sequence[ConceptId], epoch: int) -> list[ConceptId]:
    """Survivors in id order, rotated by an offset mixed from the pre-sweep epoch, so the bumps
    a restart loses (pending bumps live in memory) are not always the same ids'."""
    order = sorted(survivors)
    if len(order) > 1:
        offset = _splitmix64(epoch & _U64) % len(order)
        order = order[offset:] + order[:offset]
    return order


def drain_bumps(
    pending: Sequence[ConceptId], knobs: GcKnobs
) -> tuple[tuple[ConceptId, ...], tuple[ConceptId, ...]]:
    """One tick's drain: the bumps to apply now (at most `bump_chunk`) and those still pending."""
    return tuple(pending[: knobs.bump_chunk]), tuple(pending[knobs.bump_chunk :])


def bumped(gc_survived: int) -> int:
    """`gc_survived` after one more survived sweep, saturating."""
    return min(GC_SURVIVED_MAX, max(0, gc_survived) + 1)


def _check_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")
