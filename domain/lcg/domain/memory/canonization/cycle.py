"""One canonization cycle (§2): Stage 1, Stage 2 and Stage 3 promotions, then demotions."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from itertools import islice
from typing import Final

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization.answers import Admission, CyclePlan, Transition
from lcg.domain.memory.canonization.gates import admit
from lcg.domain.memory.canonization.ladder import IllegalTransition, Status
from lcg.domain.memory.canonization.measures import (
    Cause,
    ConceptStats,
    Cursors,
    Measures,
    SessionStats,
    SupersessionEvidence,
)
from lcg.domain.memory.canonization.policy import Knobs, Policy
from lcg.domain.memory.canonization.scoring import clean_score
from lcg.domain.memory.canonization.session import ConceptRows, index_concepts
from lcg.domain.memory.evidence import ConceptId


def _stage3_order(stats: ConceptStats) -> tuple[float, bool, str, str]:
    key = stats.canonical_key
    return (-clean_score(stats.score), key is None, key or "", stats.node_id)


def _budget_order(stats: ConceptStats) -> tuple[int, bool, str, str]:
    key = stats.canonical_key
    return (stats.blast_radius, key is None, key or "", stats.node_id)


def _promotion(stats: ConceptStats, admission: Admission, now: datetime) -> Transition:
    if admission.next is None:
        raise IllegalTransition(f"{stats.node_id} is {stats.status}: no hop up", rule="ladder")
    return Transition(
        stats.node_id, stats.status, admission.next, admission.stamp, Cause.PROMOTION, now
    )


def _demotion(
    stats: ConceptStats, cause: Cause, now: datetime, by: ConceptId | None = None
) -> Transition:
    return Transition(stats.node_id, stats.status, Status.NONE, None, cause, now, now, by)


def cycle_needs(
    rows: ConceptRows, knobs: Knobs, cursors: Cursors = Cursors()
) -> tuple[ConceptId, ...]:
    """The concepts whose `Measures` the next cycle over `rows` reads, in id order: Stage 2's
    and Stage 3's windows, every Canonical while the budget overflows, and under Solo every None
    concept (Stage 1 under Swarm reads only the rows)."""
    ladder = rows.ladder
    window2, _, window3, _ = ladder.windows(cursors, knobs)
    needed = set(window2) | set(window3)
    if knobs.promotion_policy is Policy.SOLO:
        needed.update(ladder.by_status[Status.NONE])
    canonical = ladder.by_status[Status.CANONICAL]
    if len(canonical) > knobs.max_canonical_nodes:
        needed.update(canonical)
    return tuple(sorted(rows.node_ids[row] for row in needed))


def plan_cycle_over(
    rows: ConceptRows,
    measures: Mapping[ConceptId, Measures],
    knobs: Knobs,
    now: datetime,
    evidence: SupersessionEvidence = SupersessionEvidence(),
    cursors: Cursors = Cursors(),
) -> CyclePlan:
    """`plan_cycle_with_cursors` over rows and the measures of (at least) the `cycle_needs`
    concepts; a needed concept without measures is refused."""
    ladder = rows.ladder
    ctx = ladder.context(evidence, knobs, now)

    def stats(row: int, *, measured: bool = True) -> ConceptStats:
        node = rows.node_ids[row]
        found = measures.get(node)
        if found is None:
            if measured:
                raise DomainError(
                    f"concept {node} is not measured", field="measures", rule="cycle_needs"
                )
            found = _UNMEASURED
        return ConceptStats(
            node,
            rows.statuses[row],
            rows.concept_types[row],
            rows.canonical_keys[row],
            rows.scores[row],
            rows.gc_survived[row],
            found.distinct_interactions,
            found.coverage,
            found.blast_radius,
            found.last_demotion,
            found.solo,
        )

    plan: list[Transition] = []
    # Decision: the policy's Stage-1 candidates are the None concepts that pass every Stage-1
    # gate, so the batch (no cursor) never starves behind concepts that fail.
    # Judged in id order until the batch is full: the rest could not enter it.
    solo = knobs.promotion_policy is Policy.SOLO
    judged = (stats(row, measured=solo) for row in ladder.stage1(ctx, knobs))
    admitted = ((c, admit(c, ctx, knobs, now)) for c in judged)
    eligible = ((c, a) for c, a in admitted if a.eligible)
    plan += [_promotion(c, a, now) for c, a in islice(eligible, knobs.batch_size)]

    window2, stage2, window3, stage3 = ladder.windows(cursors, knobs)
    for row in window2:
        candidate = stats(row)
        admission = admit(candidate, ctx, knobs, now)
        if admission.eligible:
            plan.append(_promotion(candidate, admission, now))

    remaining = knobs.max_canonical_nodes - ctx.canonical_count
    for venerable in sorted((stats(row) for row in window3), key=_stage3_order):
        admission = admit(venerable, ctx, knobs, now)
        if remaining > 0 and admission.eligible:
            plan.append(_promotion(venerable, admission, now))
            remaining -= 1

    canonical = ladder.by_status[Status.CANONICAL]
    kept = [row for row in canonical if rows.node_ids[row] not in ctx.superseded_by]
    for row in canonical:
        by = ctx.superseded_by.get(rows.node_ids[row])
        if by is not None:
            plan.append(_demotion(stats(row, measured=False), Cause.SUPERSESSION, now, by))
    overflow = len(kept) - knobs.max_canonical_nodes
    if overflow > 0:
        ranked = sorted((stats(row) for row in kept), key=_budget_order)
        plan += [_demotion(c, Cause.BUDGET, now) for c in ranked[:overflow]]
    return CyclePlan(tuple(plan), Cursors(stage2, stage3))


_UNMEASURED: Final = Measures()


def plan_cycle_with_cursors(session: SessionStats, knobs: Knobs, now: datetime) -> CyclePlan:
    """One canonization cycle over a pre-cycle snapshot (§2): Stage 1 (first `batch_size`
    eligible None concepts by id), Stage 2 and Stage 3 (round-robin windows), then
    supersession demotions (§6, when on) and budget demotions. A concept takes at most one hop.
    The plan depends on the snapshot's content, never on the order of `session.concepts`."""
    by_id = index_concepts(session)
    measures = {node: Measures.of(stats) for node, stats in by_id.items()}
    rows = ConceptRows.of(session.concepts)
    return plan_cycle_over(rows, measures, knobs, now, session.evidence, session.cursors)


def plan_cycle(session: SessionStats, knobs: Knobs, now: datetime) -> list[Transition]:
    """The transitions of one cycle, in the order they apply (see `plan_cycle_with_cursors`,
    which also gives the cursors the next cycle starts from)."""
    return list(plan_cycle_with_cursors(session, knobs, now).transitions)
