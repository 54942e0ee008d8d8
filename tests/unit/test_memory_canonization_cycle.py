"""A cycle planned over rows and only the measures `cycle_needs` names (the worker's path, ADR
0040/0045) decides what the whole snapshot decides; Stage 3's order and budget."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization import (
    Cause,
    ConceptRows,
    ConceptStats,
    Cursors,
    Knobs,
    Measures,
    Policy,
    SessionStats,
    SoloMeasures,
    Status,
    SupersessionEvidence,
    coverage,
    cycle_needs,
    plan_cycle_over,
    plan_cycle_with_cursors,
    superseders,
)
from lcg.domain.memory.evidence import ConceptId, Contradiction
from tests.unit.test_memory_canonization import (
    NOW,
    SUPERSEDE,
    TARGET,
    _stats,
    at,
    cid,
    first_write,
    hero,
    peers,
    session,
    superseding,
    support,
)


def _over_needs(snapshot: SessionStats, knobs: Knobs) -> tuple[ConceptId, ...]:
    rows = ConceptRows.of(snapshot.concepts)
    needs = cycle_needs(rows, knobs, snapshot.cursors)
    by_id = {c.node_id: c for c in snapshot.concepts}
    measures = {node: Measures.of(by_id[node]) for node in needs}
    plan = plan_cycle_over(rows, measures, knobs, NOW, snapshot.evidence, snapshot.cursors)
    assert plan == plan_cycle_with_cursors(snapshot, knobs, NOW)
    return needs


@given(
    concepts=st.lists(_stats, max_size=40, unique_by=lambda c: c.node_id),
    budget=st.integers(0, 6),
    batch=st.integers(1, 8),
    cursor=st.one_of(st.none(), st.integers(0, 400).map(cid)),
    policy=st.sampled_from(list(Policy)),
)
def test_a_cycle_over_the_needed_measures_plans_what_the_whole_snapshot_plans(
    concepts: list[ConceptStats],
    budget: int,
    batch: int,
    cursor: ConceptId | None,
    policy: Policy,
) -> None:
    knobs = Knobs(
        max_canonical_nodes=budget, batch_size=batch, min_peer_count=3, promotion_policy=policy
    )
    _over_needs(session(*concepts, cursors=Cursors(cursor, cursor)), knobs)


def _canonical(n: int) -> ConceptStats:
    return ConceptStats(cid(n), Status.CANONICAL, score=0.9, blast_radius=n)


def test_cycle_needs_every_canonical_only_while_the_budget_overflows() -> None:
    concepts = [_canonical(n) for n in (11, 12)] + peers(3)
    for budget, canonical in ((2, False), (1, True)):
        needs = _over_needs(session(*concepts), Knobs(max_canonical_nodes=budget))
        assert (cid(11) in needs, cid(12) in needs) == (canonical, canonical)
    # Swarm's Stage 1 reads only the rows; Solo reads every None concept
    assert _over_needs(session(*peers(3)), Knobs()) == ()
    solo = _over_needs(session(*peers(3)), Knobs(promotion_policy=Policy.SOLO))
    assert solo == tuple(cid(n) for n in (1, 2, 3))
    # Stage 2's window (Candidates) and Stage 3's (Venerables) are read both
    both = session(ConceptStats(cid(7), Status.CANDIDATE), ConceptStats(cid(8), Status.VENERABLE))
    assert _over_needs(both, Knobs()) == (cid(7), cid(8))


def test_a_superseded_canonical_is_demoted_without_its_measures() -> None:
    snapshot = superseding()
    assert TARGET not in _over_needs(snapshot, SUPERSEDE)
    assert [t.cause for t in plan_cycle_with_cursors(snapshot, SUPERSEDE, NOW).transitions] == [
        Cause.SUPERSESSION
    ]


def test_a_needed_concept_without_measures_is_refused() -> None:
    snapshot = session(ConceptStats(cid(7), Status.CANDIDATE))
    rows = ConceptRows.of(snapshot.concepts)
    with pytest.raises(DomainError, match="is not measured") as refused:
        plan_cycle_over(rows, {}, Knobs(), NOW)
    assert (refused.value.field, refused.value.rule) == ("measures", "cycle_needs")


def _venerable(n: int, key: str | None, score: float = 0.9) -> ConceptStats:
    return dataclasses.replace(
        hero(Status.VENERABLE), node_id=cid(n), canonical_key=key, score=score
    )


def test_stage3_promotes_by_score_then_keyed_concepts_by_key_within_the_budget_left() -> None:
    knobs = Knobs(max_canonical_nodes=2)
    venerables = [_venerable(1, None), _venerable(2, "b"), _venerable(3, "a"), _venerable(4, "c")]
    promoted = [
        t.node_id
        for t in plan_cycle_with_cursors(
            session(_canonical(9), *venerables), knobs, NOW
        ).transitions
        if t.to_status is Status.CANONICAL
    ]
    assert promoted == [cid(3)]  # one place left: the keyed concept first by key
    keyless = [_venerable(1, None), _venerable(2, None), _venerable(5, "z", score=1.2)]
    promoted = [
        t.node_id
        for t in plan_cycle_with_cursors(
            session(*keyless), Knobs(max_canonical_nodes=2), NOW
        ).transitions
        if t.to_status is Status.CANONICAL
    ]
    assert promoted == [cid(5), cid(1)]  # the higher score first, then keyless ones by id


def test_a_concept_nothing_has_measured_carries_no_evidence() -> None:
    # what Stage 1 under Swarm judges a row by when its measures were not read
    nothing = Measures(0, 0.0, 0, None, SoloMeasures((), 0, 0, 0))
    assert Measures() == nothing
    assert Measures.of(ConceptStats(cid(1), Status.NONE)) == nothing
    bare = ConceptStats(cid(1), Status.NONE)
    assert (bare.canonical_key, bare.score, bare.gc_survived) == (None, 0.0, 0)
    assert SessionStats(()).cursors == Cursors(None, None)
    assert SessionStats(()).evidence == SupersessionEvidence((), (), (), timedelta(0))


def test_the_causes_have_the_wire_names_of_canonization_events() -> None:
    assert [c.value for c in Cause] == ["promotion", "budget", "supersession"]


def test_a_concept_twice_in_the_rows_is_refused() -> None:
    twice = ConceptRows.of((ConceptStats(cid(1), Status.NONE), ConceptStats(cid(1), Status.NONE)))
    with pytest.raises(DomainError, match="measured twice") as refused:
        plan_cycle_over(twice, {}, Knobs(), NOW)
    assert (refused.value.field, refused.value.rule) == ("concepts", "unique ids")


def test_coverage_is_the_spread_over_the_extent_0_without_evidence_1_without_extent() -> None:
    times = [NOW, NOW - timedelta(minutes=15), NOW - timedelta(minutes=30)]
    assert coverage(times, timedelta(hours=1)) == 0.5
    assert coverage([], timedelta(hours=1)) == 0.0
    assert coverage(times, timedelta(0)) == 1.0


def test_m_can_021_newer_support_exactly_the_minimum_age_old_counts() -> None:
    # canonization.md §3: evidence "at least canonization_edge_min_age (60 s) old"
    old_enough = superseding(newer_support=(20, 30, 59))  # the last one 60 s before NOW
    hops = plan_cycle_with_cursors(old_enough, SUPERSEDE, NOW).transitions
    assert [t.cause for t in hops] == [Cause.SUPERSESSION]


def test_of_two_contradictions_dated_alike_the_canonical_key_first_supersedes() -> None:
    # §7: the newest contradiction, then the contradicting concept's canonical key, then id
    low, high = cid(0x10), cid(0x20)
    evidence = SupersessionEvidence(
        concepts=(
            first_write(TARGET, 0, "agent-a"),
            first_write(low, 10, "agent-c"),
            first_write(high, 10, "agent-d"),
        ),
        contradictions=(
            Contradiction(TARGET, low, "zeta", "agent-c", at(10), at(10)),
            Contradiction(TARGET, high, "alpha", "agent-d", at(10), at(10)),
        ),
        support=(
            *(support(low, m, 10 + i) for i, m in enumerate((20, 30, 40))),
            *(support(high, m, 20 + i) for i, m in enumerate((20, 30, 40))),
        ),
        interaction_extent=timedelta(minutes=60),
    )
    assert superseders(evidence, [TARGET], NOW)[TARGET].source == high
