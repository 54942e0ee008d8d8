"""Supersession (§6): which contradicting concept, with newer support, supersedes a high concept."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from lcg.domain.memory.canonization.measures import SupersessionEvidence
from lcg.domain.memory.canonization.policy import COVERAGE_BAR, DISTINCT_INTERACTIONS_BAR
from lcg.domain.memory.evidence import (
    EDGE_MIN_AGE,
    Concept,
    ConceptId,
    Contradiction,
    Support,
    current_contradiction,
)


def _first_support(pieces: Iterable[Support]) -> list[Support]:
    """One record per dependence, its first write's: a re-sent citation is not new support."""
    first: dict[tuple[str, ConceptId, ConceptId], Support] = {}
    for piece in pieces:
        key = (piece.kind.value, piece.concept, piece.target)
        known = first.get(key)
        if known is None or (piece.written_at, piece.interaction) < (
            known.written_at,
            known.interaction,
        ):
            first[key] = piece
    return list(first.values())


def _first_contradictions(edges: Iterable[Contradiction]) -> list[Contradiction]:
    first: dict[tuple[ConceptId, ConceptId], Contradiction] = {}
    for edge in edges:
        key = (edge.source, edge.target)
        known = first.get(key)
        if known is None or edge.written_at < known.written_at:
            first[key] = edge
    return list(first.values())


def _outweighs(
    target: Concept,
    edge: Contradiction,
    piece: Support,
    target_support: Sequence[Support],
    now: datetime,
    min_age: timedelta,
) -> bool:
    """Whether `piece` (support of the contradicting concept) is newer than `target`'s counted
    support, judged by the contradiction rule itself: a contradiction dated like `piece` and
    declared by the agent who declared `edge` would be current on `target`. So T's support is
    counted exactly as for the warning (aged, not T's own write, not the declaring agent's).
    Decision: the piece must also be newer than T itself, as a contradiction must."""
    probe = Contradiction(
        target.node_id,
        edge.source,
        edge.source_key,
        edge.agent_id,
        piece.written_at,
        piece.about_time,
    )
    return current_contradiction(target, (probe,), target_support, now, min_age) is not None


def coverage(times: Iterable[datetime], extent: timedelta) -> float:
    """Spread of interaction times over the session's interaction extent (§3 Stage 2):
    no evidence gives 0, a zero extent gives 1."""
    spread = sorted(times)
    if not spread:
        return 0.0
    if extent <= timedelta(0):
        return 1.0
    return (spread[-1] - spread[0]) / extent


@dataclass(frozen=True, slots=True)
class _Pair:
    """A Contradicts edge with both ends' first writes and their support."""

    target: Concept
    source: Concept
    edge: Contradiction
    target_support: Sequence[Support]
    source_support: Sequence[Support]


def _has_newer_support(pair: _Pair, extent: timedelta, now: datetime, min_age: timedelta) -> bool:
    """§6: the contradicting concept's support newer than the target's latest counted support
    comes from at least 3 interactions other than its own, with coverage >= 0.3 [I]."""
    earliest: dict[str, datetime] = {}
    for piece in pair.source_support:
        if (
            piece.written_at > now
            or now - piece.written_at < min_age
            or piece.interaction == pair.source.interaction
            or piece.wrote_target
            or piece.concept == pair.target.node_id
        ):
            continue
        if not _outweighs(pair.target, pair.edge, piece, pair.target_support, now, min_age):
            continue
        known = earliest.get(piece.interaction)
        earliest[piece.interaction] = piece.dated if known is None else min(known, piece.dated)
    if len(earliest) < DISTINCT_INTERACTIONS_BAR:
        return False
    return coverage(earliest.values(), extent) >= COVERAGE_BAR


def _contradiction_rank(edge: Contradiction) -> tuple[float, bool, str, str]:
    """One C per T: the newest contradiction, then canonical key (none last), then id (§7)."""
    return (-edge.dated.timestamp(), edge.source_key is None, edge.source_key or "", edge.source)


def superseders(
    evidence: SupersessionEvidence,
    targets: Iterable[ConceptId],
    now: datetime,
    min_age: timedelta = EDGE_MIN_AGE,
) -> dict[ConceptId, Contradiction]:
    """For each of `targets` that a contradicting concept supersedes at `now`, the
    contradiction whose source does it (§6). A Canonical target is demoted by it; a Venerable
    one is held."""
    concepts = {concept.node_id: concept for concept in evidence.concepts}
    support: dict[ConceptId, list[Support]] = {}
    for piece in _first_support(evidence.support):
        support.setdefault(piece.target, []).append(piece)
    edges: dict[ConceptId, list[Contradiction]] = {}
    for edge in _first_contradictions(evidence.contradictions):
        if edge.written_at <= now and edge.source != edge.target:
            edges.setdefault(edge.target, []).append(edge)
    found: dict[ConceptId, Contradiction] = {}
    for target_id in set(targets):
        target = concepts.get(target_id)
        if target is None:
            continue
        passing = [
            edge
            for edge in edges.get(target_id, ())
            if edge.source in concepts
            and _has_newer_support(
                _Pair(
                    target,
                    concepts[edge.source],
                    edge,
                    support.get(target_id, ()),
                    support.get(edge.source, ()),
                ),
                evidence.interaction_extent,
                now,
                min_age,
            )
        ]
        if passing:
            found[target_id] = min(passing, key=_contradiction_rank)
    return found
