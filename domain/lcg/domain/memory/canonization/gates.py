"""The gates of a concept's next hop under Swarm or Solo: inspect's admission (M-INS-030..043)."""

from __future__ import annotations

from datetime import datetime

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization.answers import (
    Admission,
    Check,
    SoloTerms,
    held_line,
    reason_line,
)
from lcg.domain.memory.canonization.ladder import NEXT, Status
from lcg.domain.memory.canonization.measures import (
    ConceptStats,
    Measures,
    SessionStats,
    SupersessionEvidence,
)
from lcg.domain.memory.canonization.policy import (
    BLAST_RADIUS_BAR,
    COVERAGE_BAR,
    DISTINCT_INTERACTIONS_BAR,
    GC_SURVIVED_BAR,
    SOLO_BANDS,
    Knobs,
    Policy,
)
from lcg.domain.memory.canonization.scoring import clean_score, solo_terms
from lcg.domain.memory.canonization.session import (
    ConceptRows,
    Context,
    index_concepts,
    session_context,
)
from lcg.domain.memory.evidence import ConceptId


def _at_least(gate: str, stage: int, current: float, bar: float) -> Check:
    return Check(gate, stage, current, bar, ">=", current >= bar)


def _cooldown(stats: ConceptStats, knobs: Knobs, now: datetime) -> Check:
    bar = knobs.repromotion_cooldown.total_seconds()
    if stats.last_demotion is None:
        return Check("cooldown", 3, None, bar, ">=", True)
    since = (now - stats.last_demotion.at).total_seconds()
    return Check("cooldown", 3, since, bar, ">=", since >= bar)


def _budget(ctx: Context, knobs: Knobs) -> Check:
    count, bar = ctx.canonical_count, knobs.max_canonical_nodes
    return Check("canonical_budget", 3, count, bar, "<", count < bar)


def _swarm_checks(
    stats: ConceptStats, ctx: Context, knobs: Knobs, now: datetime
) -> tuple[Check, ...]:
    match stats.status:
        case Status.NONE:
            score = clean_score(stats.score)
            return (
                _at_least("peer_count", 1, ctx.peer_count, knobs.min_peer_count),
                _at_least("gc_survived", 1, stats.gc_survived, GC_SURVIVED_BAR),
                Check("score_p90", 1, score, ctx.p90, ">", score > ctx.p90),
            )
        case Status.CANDIDATE:
            return (
                _at_least(
                    "distinct_interactions",
                    2,
                    stats.distinct_interactions,
                    DISTINCT_INTERACTIONS_BAR,
                ),
                _at_least("coverage", 2, stats.coverage, COVERAGE_BAR),
            )
        case Status.VENERABLE:
            radius = stats.blast_radius
            return (
                _cooldown(stats, knobs, now),
                Check("blast_radius", 3, radius, BLAST_RADIUS_BAR, ">", radius > BLAST_RADIUS_BAR),
                _budget(ctx, knobs),
            )
        case _:
            return ()


def _solo_checks(
    stats: ConceptStats, terms: SoloTerms, ctx: Context, knobs: Knobs, now: datetime
) -> tuple[Check, ...]:
    bars = {floor_status: floor for floor, floor_status in SOLO_BANDS}
    match stats.status:
        case Status.NONE:
            return (_at_least("solo_band", 1, terms.score, bars[Status.CANDIDATE]),)
        case Status.CANDIDATE:
            return (_at_least("solo_band", 2, terms.score, bars[Status.VENERABLE]),)
        case Status.VENERABLE:
            return (
                _cooldown(stats, knobs, now),
                _at_least("solo_band", 3, terms.score, bars[Status.CANONICAL]),
                _budget(ctx, knobs),
            )
        case _:
            return ()


def _stamp(stats: ConceptStats, policy: Policy) -> int | None:
    """The blast radius a hop records: the measured value on the Stage-3 hop (under Solo only
    when the blast test passed too), else null (the stored value of a non-Canonical concept,
    which only a Stage-3 hop sets and every demotion resets)."""
    if stats.status is not Status.VENERABLE:
        return None
    if policy is Policy.SOLO and stats.blast_radius <= BLAST_RADIUS_BAR:
        return None
    return stats.blast_radius


def admit(stats: ConceptStats, ctx: Context, knobs: Knobs, now: datetime) -> Admission:
    policy = knobs.promotion_policy
    terms = solo_terms(stats) if policy is Policy.SOLO else None
    if terms is None:
        checks = _swarm_checks(stats, ctx, knobs, now)
    else:
        checks = _solo_checks(stats, terms, ctx, knobs, now)
    held_by = ctx.superseded_by.get(stats.node_id) if stats.status is Status.VENERABLE else None
    reasons = [reason_line(check) for check in checks if not check.met]
    if held_by is not None:
        reasons.append(held_line(held_by))
    following = NEXT.get(stats.status)
    return Admission(
        policy=policy,
        status=stats.status,
        next=following,
        eligible=following is not None and not reasons,
        checks=checks,
        solo=terms,
        reasons=tuple(reasons),
        held_by=held_by,
        last_demotion=stats.last_demotion,
        stamp=_stamp(stats, policy),
    )


def evaluate(concept: ConceptId, session: SessionStats, knobs: Knobs, now: datetime) -> Admission:
    """lambo_inspect's admission for `concept`: the gates of its next hop as the next cycle
    measures them (M-INS-037). `eligible` says every gate holds now; the cycle's batch and
    round-robin order decide when the hop is taken."""
    by_id = index_concepts(session)
    if concept not in by_id:
        raise DomainError(
            f"concept {concept} is not in the snapshot", field="concept", rule="known"
        )
    return admit(by_id[concept], session_context(session, knobs, now), knobs, now)


def evaluate_over(
    concept: ConceptId,
    rows: ConceptRows,
    measures: Measures,
    knobs: Knobs,
    now: datetime,
    evidence: SupersessionEvidence = SupersessionEvidence(),
) -> Admission:
    """`evaluate` over the rows a cycle reads and the one concept's `measures`: the gates
    `plan_cycle_over` judges it by, with the session-wide context (peer count, p90, the
    Canonical count, supersession) worked out from the rows as the cycle works it out."""
    ladder = rows.ladder
    row = next((i for i, node in enumerate(rows.node_ids) if node == concept), None)
    if row is None:
        raise DomainError(
            f"concept {concept} is not in the snapshot", field="concept", rule="known"
        )
    stats = ConceptStats(
        concept,
        rows.statuses[row],
        rows.concept_types[row],
        rows.canonical_keys[row],
        rows.scores[row],
        rows.gc_survived[row],
        measures.distinct_interactions,
        measures.coverage,
        measures.blast_radius,
        measures.last_demotion,
        measures.solo,
    )
    return admit(stats, ladder.context(evidence, knobs, now), knobs, now)
