"""The two scores over the graph: the eviction score of the score cut, the daemon score S(c)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc.facts import ConceptFacts, FactColumns, SessionFacts
from lcg.domain.memory.gc.graph import Graph, Pause, bonus_sum, build_graph, no_pause, paced
from lcg.domain.memory.gc.knobs import MAX_EDGE_BONUS, MAX_SCORE, TYPE_MODIFIER, GcKnobs
from lcg.domain.memory.text import ConceptType


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


def eviction_scores(graph: Graph, knobs: GcKnobs, now: datetime) -> Callable[[int], float]:
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
    graph = build_graph(facts, walk=False, pause=pause)
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
    bonus = list(map(bonus_sum, degrees.steady, degrees.parents, degrees.produced))
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
    for created, accessed, accesses, kind, derived, edges, edge_bonus in paced(columns, pause):
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
