"""What a sweep never collects: held statuses, root goals, the contradiction protections (§7)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

from lcg.domain.memory.evidence import ConceptId, current_contradictions
from lcg.domain.memory.gc.decisions import CollectReason, KeptReason
from lcg.domain.memory.gc.facts import EvidenceInputs
from lcg.domain.memory.gc.graph import Graph
from lcg.domain.memory.gc.knobs import CanonizationStatus, GcKnobs

_HELD_STATUSES: Final = frozenset({CanonizationStatus.VENERABLE, CanonizationStatus.CANONICAL})


def protect(graph: Graph, evidence: EvidenceInputs, now: datetime) -> dict[ConceptId, KeptReason]:
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


def current_corrections(
    graph: Graph, evidence: EvidenceInputs, knobs: GcKnobs, now: datetime
) -> dict[ConceptId, ConceptId]:
    """For each contradicted concept in memory, the correction recall shows for it now."""
    concepts = [c for c in evidence.concepts if c.node_id in graph.row]
    edges = [e for e in evidence.contradictions if e.source in graph.row]
    current = current_contradictions(concepts, edges, evidence.support, now, knobs.edge_min_age)
    return {target: edge.source for target, edge in current.items()}


def keep_shown_corrections(
    graph: Graph, doomed: set[ConceptId], corrections: Mapping[ConceptId, ConceptId]
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


def keep_corrections_of(
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
