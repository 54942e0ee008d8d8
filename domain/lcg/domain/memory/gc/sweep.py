"""One sweep: the candidates, the cap, the cascade, and the survivors it bumps."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction

from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc.bumps import survivor_drain_order
from lcg.domain.memory.gc.decisions import Collection, CollectReason, KeptReason, Sweep
from lcg.domain.memory.gc.facts import EvidenceInputs, FactColumns, SessionFacts
from lcg.domain.memory.gc.graph import Graph, Pause, build_graph, no_pause, paced, reachable_rows
from lcg.domain.memory.gc.knobs import CanonizationStatus, GcKnobs
from lcg.domain.memory.gc.protections import (
    current_corrections,
    keep_corrections_of,
    keep_shown_corrections,
    protect,
)
from lcg.domain.memory.gc.score import eviction_scores
from lcg.domain.memory.gc.triggers import Trigger, check_aware
from lcg.domain.memory.text import ConceptType


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
    graph: Graph,
    protected: Mapping[ConceptId, KeptReason],
    knobs: GcKnobs,
    now: datetime,
) -> _Candidates:
    reachable = reachable_rows(graph)
    facts = graph.facts
    bars = {kind: knobs.bar(kind) for kind in ConceptType}
    score_of = eviction_scores(graph, knobs, now)
    found = _Candidates([], [], [], [])
    for row, (node, concept_type) in paced(
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
    check_aware(now)
    columns = facts if isinstance(facts, FactColumns) else FactColumns.of(facts)
    graph = build_graph(columns, pause=pause)
    ids = graph.facts.node_ids
    protected = protect(graph, evidence, now)
    found = _candidates(graph, protected, knobs, now)
    corrections = current_corrections(graph, evidence, knobs, now)
    for node in keep_shown_corrections(graph, found.ids(), corrections):
        protected[node] = KeptReason.SHOWN_CORRECTION
    found = found.without(set(protected))
    cap = collection_cap(len(ids) - len(protected), knobs)
    ordered = found.ordered()
    collected = dict(ordered[:cap])
    held = [node for node, _ in ordered[cap:]]
    keep_corrections_of(held, collected, corrections)
    reachable = reachable_rows(graph, [graph.row[node] for node in collected])
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
    keep_corrections_of(held, collected, corrections)
    return _sweep(graph, knobs, trigger, collected, held, cap, found, protected)


def _sweep(
    graph: Graph,
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
