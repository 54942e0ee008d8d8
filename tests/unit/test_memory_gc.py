"""Garbage collection's pure rules (M-CAN-040..049, M-STA-064..069; canonization.md §8)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcg.domain.memory.evidence import (
    Concept,
    ConceptId,
    Contradiction,
    InteractionId,
    Support,
    SupportKind,
)
from lcg.domain.memory.gc import (
    GC_SURVIVED_MAX,
    CanonizationStatus,
    CollectReason,
    ConceptFacts,
    EdgeKind,
    EvidenceInputs,
    FactColumns,
    GcEdge,
    GcKnobs,
    KeptReason,
    LastSweep,
    SessionFacts,
    Sweep,
    Trigger,
    anchor_gc_clock,
    bumped,
    collection_cap,
    daemon_score_column,
    daemon_scores,
    drain_bumps,
    plan_sweep,
    should_sweep,
    survivor_drain_order,
)
from lcg.domain.memory.text import ConceptType

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 8, 10, 10, 0, tzinfo=UTC)
OLD = T0  # more than the 365-day recency window before NOW
FRESH = NOW - timedelta(hours=1)
KNOBS = GcKnobs()
ENTITY, RESOURCE, LOGIC = ConceptType.ENTITY, ConceptType.RESOURCE, ConceptType.LOGIC
NONE, VENERABLE, CANONICAL = (
    CanonizationStatus.NONE,
    CanonizationStatus.VENERABLE,
    CanonizationStatus.CANONICAL,
)
HUB = 0xFFF  # a Logic concept 40 interactions derived: the density every other one is measured by
INTERACTIONS = 100


def cid(n: int) -> ConceptId:
    return ConceptId(f"{n:08x}-0000-4000-8000-000000000000")


def concept(
    n: int,
    concept_type: ConceptType = ENTITY,
    status: CanonizationStatus = NONE,
    created: datetime = OLD,
    *,
    root_goal: bool = False,
    access_count: int = 0,
) -> ConceptFacts:
    return ConceptFacts(
        cid(n), concept_type, status, created, access_count=access_count, root_goal=root_goal
    )


def derived(n: int, interaction: int = 0) -> GcEdge:
    return GcEdge(EdgeKind.DERIVES, f"interaction-{interaction}", cid(n))


def edge(kind: EdgeKind, source: int, target: int) -> GcEdge:
    return GcEdge(kind, cid(source), cid(target))


def session(
    concepts: list[ConceptFacts], edges: list[GcEdge], *, epoch: int = 0, hub: bool = True
) -> SessionFacts:
    if hub:
        concepts = [*concepts, concept(HUB, LOGIC)]
        edges = [*edges, *(derived(HUB, i) for i in range(40))]
    return SessionFacts(concepts, edges, INTERACTIONS, epoch)


def sweep(
    facts: SessionFacts,
    evidence: EvidenceInputs | None = None,
    knobs: GcKnobs = KNOBS,
    now: datetime = NOW,
) -> Sweep:
    return plan_sweep(facts, evidence or EvidenceInputs(), knobs, now, Trigger.MUTATIONS)


def reasons(result: Sweep) -> dict[ConceptId, CollectReason]:
    return {c.node_id: c.reason for c in result.collected}


# --- evidence records -------------------------------------------------------------------------


def evidence_concept(n: int, written: datetime) -> Concept:
    return Concept(cid(n), written, written, "agent-a", InteractionId(f"write-{n}"))


def contradiction(source: int, target: int, written: datetime) -> Contradiction:
    return Contradiction(cid(target), cid(source), None, "agent-c", written, written)


def support(dependent: int, target: int, written: datetime) -> Support:
    return Support(
        cid(target),
        cid(dependent),
        SupportKind.DEPENDS_ON,
        "agent-b",
        written,
        written,
        InteractionId(f"write-{dependent}"),
    )


# --- triggers (M-CAN-040, M-CAN-044) ----------------------------------------------------------


def test_m_can_040_mutations_trigger_at_gc_interval() -> None:
    assert should_sweep(10_000, None, NOW, KNOBS) is Trigger.MUTATIONS
    assert should_sweep(9_999, NOW, NOW, KNOBS) is None


def test_m_can_040_elapsed_trigger_after_max_interval_over_the_idle_floor() -> None:
    day_ago = NOW - timedelta(seconds=86_400)
    assert should_sweep(100, day_ago, NOW, KNOBS) is Trigger.ELAPSED
    assert should_sweep(100, day_ago + timedelta(seconds=1), NOW, KNOBS) is None


def test_idle_floor_keeps_an_idle_session_from_sweeping_on_time_alone() -> None:
    assert should_sweep(99, NOW - timedelta(days=30), NOW, KNOBS) is None


def test_a_long_outage_still_gives_one_elapsed_sweep() -> None:
    assert should_sweep(150, NOW - timedelta(days=400), NOW, KNOBS) is Trigger.ELAPSED


def test_elapsed_trigger_waits_for_the_clock_to_start() -> None:
    assert should_sweep(5_000, None, NOW, KNOBS) is None


def test_no_sweep_while_survivor_bumps_drain() -> None:
    assert should_sweep(20_000, None, NOW, KNOBS, bumps_pending=1) is None


def test_m_can_044_first_daemon_cycle_starts_the_clock() -> None:
    assert anchor_gc_clock(None, NOW, KNOBS) == NOW
    assert anchor_gc_clock(NOW - timedelta(days=3), NOW, KNOBS) is None


def test_a_clock_more_than_five_minutes_ahead_is_reanchored() -> None:
    assert anchor_gc_clock(NOW + timedelta(minutes=6), NOW, KNOBS) == NOW
    assert anchor_gc_clock(NOW + timedelta(minutes=5), NOW, KNOBS) is None


def test_knobs_refuse_a_zero_interval_and_warn_on_a_floor_at_the_interval() -> None:
    with pytest.raises(ValueError, match="gc_interval"):
        GcKnobs(gc_interval=0)
    with pytest.raises(ValueError, match="gc_max_interval_secs"):
        GcKnobs(gc_max_interval=timedelta(0))
    assert GcKnobs(gc_interval=1).warnings
    assert KNOBS.warnings == ()


def test_bars_by_type_follow_resistance_and_exempt_logic_constraint_observation() -> None:
    assert KNOBS.bar(ENTITY) == pytest.approx(0.10)
    assert KNOBS.bar(RESOURCE) == pytest.approx(0.12)
    assert KNOBS.bar(LOGIC) is None
    assert KNOBS.bar(ConceptType.CONSTRAINT) is None
    assert KNOBS.bar(ConceptType.OBSERVATION) is None


# --- what is collected ------------------------------------------------------------------------


def test_orphans_are_collected() -> None:
    result = sweep(session([concept(1, LOGIC, created=FRESH)], []))
    assert reasons(result) == {cid(1): CollectReason.ORPHAN}


def test_disconnected_concepts_are_collected() -> None:
    facts = session([concept(1, LOGIC), concept(2, LOGIC)], [edge(EdgeKind.DEPENDS_ON, 1, 2)])
    assert reasons(sweep(facts)) == {
        cid(1): CollectReason.DISCONNECTED,
        cid(2): CollectReason.DISCONNECTED,
    }


def test_m_can_045_a_contradiction_keeps_nothing_connected() -> None:
    facts = session(
        [concept(1, LOGIC, created=FRESH), concept(2, LOGIC, created=FRESH)],
        [derived(1), edge(EdgeKind.CONTRADICTS, 2, 1)],
    )
    assert reasons(sweep(facts)) == {cid(2): CollectReason.ORPHAN}


def test_under_bar_entities_are_collected() -> None:
    facts = session(
        [concept(1, ENTITY), concept(2, ENTITY, created=FRESH)], [derived(1), derived(2)]
    )
    assert reasons(sweep(facts)) == {cid(1): CollectReason.UNDER_BAR}


def test_logic_is_exempt_from_the_score_cut() -> None:
    assert sweep(session([concept(1, LOGIC)], [derived(1)])).collected == ()


def test_recall_accesses_raise_the_score_over_the_bar() -> None:
    facts = session([concept(1, ENTITY, access_count=10)], [derived(1)])
    assert sweep(facts).collected == ()


def test_m_can_042_resources_with_dependents_are_spared_and_counted() -> None:
    facts = session(
        [concept(1, RESOURCE), concept(2, LOGIC), concept(3, RESOURCE)],
        [derived(1), derived(2), derived(3), edge(EdgeKind.DEPENDS_ON, 2, 1)],
    )
    result = sweep(facts)
    assert reasons(result) == {cid(3): CollectReason.UNDER_BAR}
    assert result.resources_spared == (cid(1),)
    assert result.last_sweep().resources_spared_by_dependents == 1


def test_a_parent_of_parent_resource_is_spared_by_its_children() -> None:
    facts = session(
        [concept(1, RESOURCE), concept(2, LOGIC)],
        [derived(1), derived(2), edge(EdgeKind.PARENT_OF, 1, 2)],
    )
    assert sweep(facts).resources_spared == (cid(1),)


def test_a_disconnected_resource_with_dependents_is_collected_and_not_counted_as_spared() -> None:
    facts = session([concept(1, RESOURCE), concept(2, LOGIC)], [edge(EdgeKind.DEPENDS_ON, 2, 1)])
    result = sweep(facts)
    assert set(reasons(result)) == {cid(1), cid(2)}
    assert result.resources_spared == ()


def test_a_concept_cut_off_by_this_sweeps_collections_goes_in_the_cascade() -> None:
    facts = session(
        [concept(1, ENTITY), concept(2, LOGIC)], [derived(1), edge(EdgeKind.DEPENDS_ON, 2, 1)]
    )
    assert reasons(sweep(facts)) == {
        cid(1): CollectReason.UNDER_BAR,
        cid(2): CollectReason.CASCADE,
    }


# --- protections ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [VENERABLE, CANONICAL])
def test_venerable_and_canonical_concepts_are_never_collected(
    status: CanonizationStatus,
) -> None:
    result = sweep(session([concept(1, ENTITY, status)], []))
    assert result.collected == ()
    assert result.protected[cid(1)] is KeptReason.STATUS


def test_root_goal_concepts_are_never_collected() -> None:
    result = sweep(session([concept(1, root_goal=True)], []))
    assert result.collected == ()
    assert result.protected[cid(1)] is KeptReason.ROOT_GOAL


def _p1(status: CanonizationStatus) -> tuple[SessionFacts, EvidenceInputs]:
    """C (2) contradicts T (1); T has newer support from 3, so the warning has lapsed."""
    facts = session(
        [concept(1, LOGIC, status, created=FRESH), concept(2, LOGIC), concept(3, LOGIC)],
        [derived(1), derived(3), edge(EdgeKind.DEPENDS_ON, 3, 1)],
    )
    written = NOW - timedelta(hours=3)
    evidence = EvidenceInputs(
        (evidence_concept(1, written - timedelta(hours=1)),),
        (contradiction(2, 1, written),),
        (support(3, 1, written + timedelta(hours=1)),),
    )
    return facts, evidence


@pytest.mark.parametrize("status", [VENERABLE, CANONICAL])
def test_m_can_046_contradicting_a_venerable_or_canonical_concept_keeps_it(
    status: CanonizationStatus,
) -> None:
    """Also M-CAN-050: the contradicting concept (2, an orphan otherwise collected) is kept
    alive by contradicting the long-lived one alone; nothing guards who may do so."""
    result = sweep(*_p1(status))
    assert result.collected == ()
    assert result.protected[cid(2)] is KeptReason.CONTRADICTS_HELD_STATUS


def test_m_can_046_the_protection_ends_with_the_status() -> None:
    assert reasons(sweep(*_p1(NONE))) == {cid(2): CollectReason.ORPHAN}


def _p2(*, target_connected: bool = True, newer_support: bool = False) -> Sweep:
    """C (2, an orphan) is the correction recall shows for T (1, status None)."""
    edges = [derived(1), derived(3)] if target_connected else [derived(3)]
    facts = session([concept(1, LOGIC, created=FRESH), concept(2, LOGIC), concept(3, LOGIC)], edges)
    written = NOW - timedelta(hours=3)
    pieces = (support(3, 1, written + timedelta(hours=1)),) if newer_support else ()
    evidence = EvidenceInputs(
        (evidence_concept(1, written - timedelta(hours=1)),),
        (contradiction(2, 1, written),),
        pieces,
    )
    return sweep(facts, evidence)


def test_m_can_047_the_shown_correction_is_kept_while_the_contradicted_concept_is_in_memory() -> (
    None
):
    result = _p2()
    assert result.collected == ()
    assert result.protected[cid(2)] is KeptReason.SHOWN_CORRECTION


def test_m_can_048_the_correction_protection_ends_when_newer_evidence_outweighs_it() -> None:
    assert reasons(_p2(newer_support=True)) == {cid(2): CollectReason.ORPHAN}


def test_m_can_048_the_correction_protection_ends_when_the_contradicted_concept_goes() -> None:
    assert reasons(_p2(target_connected=False)) == {
        cid(1): CollectReason.ORPHAN,
        cid(2): CollectReason.ORPHAN,
    }


def _mutual(*, first_connected: bool) -> Sweep:
    """1 and 2 contradict each other, both contradictions current."""
    facts = session(
        [concept(1, LOGIC, created=FRESH), concept(2, LOGIC)],
        [derived(1)] if first_connected else [],
    )
    at = NOW - timedelta(hours=5)
    evidence = EvidenceInputs(
        (evidence_concept(1, at), evidence_concept(2, at + timedelta(hours=1))),
        (
            contradiction(2, 1, at + timedelta(hours=1)),
            contradiction(1, 2, at + timedelta(hours=2)),
        ),
    )
    return sweep(facts, evidence)


def test_m_can_049_two_concepts_that_only_contradict_each_other_keep_neither_alive() -> None:
    assert set(reasons(_mutual(first_connected=False))) == {cid(1), cid(2)}


def test_m_can_049_a_mutual_contradiction_keeps_the_correction_of_a_survivor() -> None:
    result = _mutual(first_connected=True)
    assert result.collected == ()
    assert result.protected[cid(2)] is KeptReason.SHOWN_CORRECTION


def test_corrections_chain_from_a_concept_that_survives_on_its_own() -> None:
    facts = session(
        [concept(1, LOGIC, created=FRESH), concept(2, LOGIC), concept(3, LOGIC)], [derived(1)]
    )
    at = NOW - timedelta(hours=5)
    evidence = EvidenceInputs(
        (evidence_concept(1, at), evidence_concept(2, at + timedelta(hours=1))),
        (
            contradiction(2, 1, at + timedelta(hours=1)),
            contradiction(3, 2, at + timedelta(hours=2)),
        ),
    )
    result = sweep(facts, evidence)
    assert result.collected == ()
    assert {cid(2), cid(3)} <= set(result.protected)


# --- the cap and deferral (M-CAN-041) ---------------------------------------------------------


def test_collection_cap_is_five_percent_of_unprotected_with_a_floor_of_32() -> None:
    assert collection_cap(100, KNOBS) == 32
    assert collection_cap(700, KNOBS) == 35
    assert collection_cap(701, KNOBS) == 36
    assert collection_cap(60, GcKnobs(collect_floor=0)) == 3


def test_m_can_041_the_cap_defers_the_rest_to_the_next_sweep() -> None:
    knobs = GcKnobs(collect_floor=2, collect_fraction=0.0)
    facts = session([concept(n, LOGIC) for n in range(1, 6)], [])
    result = sweep(facts, knobs=knobs)
    assert result.collected_ids == (cid(1), cid(2))
    assert result.deferred == (cid(3), cid(4), cid(5))
    assert result.cap_bound
    assert result.collection_cap == 2
    assert not set(result.deferred) & set(result.bumps + result.pending_bumps)


def test_the_cap_takes_orphans_then_disconnected_then_the_furthest_under_the_bar() -> None:
    knobs = GcKnobs(collect_floor=2, collect_fraction=0.0)
    facts = session(
        [concept(1, ENTITY), concept(2, LOGIC), concept(3, LOGIC), concept(4, LOGIC)],
        [derived(1), edge(EdgeKind.DEPENDS_ON, 2, 3)],
    )
    result = sweep(facts, knobs=knobs)
    assert reasons(result) == {cid(4): CollectReason.ORPHAN, cid(2): CollectReason.DISCONNECTED}
    assert result.deferred == (cid(1), cid(3))


def test_a_deferred_concept_keeps_its_shown_correction() -> None:
    knobs = GcKnobs(collect_floor=1, collect_fraction=0.0)
    facts = session([concept(1, LOGIC), concept(2, LOGIC)], [])
    at = NOW - timedelta(hours=5)
    evidence = EvidenceInputs(
        (evidence_concept(2, at),), (contradiction(1, 2, at + timedelta(hours=1)),)
    )
    result = sweep(facts, evidence, knobs)
    assert result.collected == ()
    assert result.deferred == (cid(1), cid(2))


def test_protected_concepts_do_not_count_toward_the_cap() -> None:
    knobs = GcKnobs(collect_floor=0)
    facts = session([concept(n, LOGIC, VENERABLE) for n in range(40)], [], hub=False)
    assert sweep(facts, knobs=knobs).collection_cap == 0


# --- survivors (M-CAN-043) --------------------------------------------------------------------


def test_m_can_043_survivors_are_bumped_in_chunks_and_the_rest_drain() -> None:
    knobs = GcKnobs(bump_chunk=2)
    facts = session(
        [concept(n, LOGIC, created=FRESH) for n in range(1, 5)], [derived(n) for n in range(1, 5)]
    )
    result = sweep(facts, knobs=knobs)
    assert len(result.bumps) == 2
    assert result.survivors_deferred == 3
    assert set(result.bumps + result.pending_bumps) == {*map(cid, range(1, 5)), cid(HUB)}
    now, rest = drain_bumps(result.pending_bumps, knobs)
    assert now == result.pending_bumps[:2]
    assert rest == result.pending_bumps[2:]


def test_protected_concepts_take_survivor_bumps_and_collected_ones_do_not() -> None:
    result = sweep(session([concept(1, status=CANONICAL), concept(2, LOGIC)], []))
    assert cid(1) in result.bumps
    assert cid(2) not in result.bumps


def test_the_drain_order_is_a_rotation_of_id_order_chosen_by_the_epoch() -> None:
    ids = [cid(n) for n in range(10)]
    orders = {tuple(survivor_drain_order(list(reversed(ids)), epoch)) for epoch in range(20)}
    assert len(orders) > 1
    for order in orders:
        start = ids.index(order[0])
        assert list(order) == ids[start:] + ids[:start]
    assert survivor_drain_order(ids, 7) == survivor_drain_order(ids, 7)


def test_gc_survived_saturates() -> None:
    assert bumped(0) == 1
    assert bumped(GC_SURVIVED_MAX) == GC_SURVIVED_MAX


def test_gc_records_an_over_budget_canonical_count_and_never_demotes() -> None:
    knobs = GcKnobs(max_canonical_nodes=1)
    facts = session([concept(1, status=CANONICAL), concept(2, status=CANONICAL)], [])
    result = sweep(facts, knobs=knobs)
    assert result.canonical_count == 2
    assert result.canonical_over_budget
    assert result.collected == ()


def test_m_sta_last_sweep_reports_the_stats_fields() -> None:
    knobs = GcKnobs(collect_floor=1, collect_fraction=0.0, bump_chunk=1)
    facts = session(
        [concept(1, LOGIC), concept(2, LOGIC), concept(3, LOGIC, created=FRESH)], [derived(3)]
    )
    assert sweep(facts, knobs=knobs).last_sweep() == LastSweep(
        trigger=Trigger.MUTATIONS,
        collected=1,
        deferred=1,
        collection_cap=1,
        cap_bound=True,
        resources_spared_by_dependents=0,
        survivors_deferred=1,
    )


def test_a_naive_clock_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        sweep(session([], []), now=NOW.replace(tzinfo=None))


# --- determinism ------------------------------------------------------------------------------

_T = TypeVar("_T")
_KINDS = [k for k in EdgeKind if k is not EdgeKind.PRECEDES]


@st.composite
def _sessions(draw: st.DrawFn) -> tuple[SessionFacts, EvidenceInputs]:
    size = draw(st.integers(1, 10))
    concepts = [
        concept(
            n,
            draw(st.sampled_from(list(ConceptType))),
            draw(st.sampled_from(list(CanonizationStatus))),
            NOW - timedelta(days=draw(st.integers(0, 800))),
            access_count=draw(st.integers(0, 12)),
        )
        for n in range(size)
    ]
    ends = st.integers(0, size - 1)
    edges = draw(
        st.lists(
            st.one_of(
                st.builds(derived, ends, st.integers(0, 3)),
                st.builds(edge, st.sampled_from(_KINDS), ends, ends),
            ),
            max_size=20,
        )
    )
    hours = st.integers(1, 100)
    claims = draw(st.lists(st.tuples(ends, ends, hours), max_size=6))
    evidence = EvidenceInputs(
        tuple(evidence_concept(n, NOW - timedelta(hours=120)) for n in range(size)),
        tuple(contradiction(s, t, NOW - timedelta(hours=h)) for s, t, h in claims if s != t),
        tuple(
            support(s, t, NOW - timedelta(hours=h))
            for s, t, h in draw(st.lists(st.tuples(ends, ends, hours), max_size=6))
        ),
    )
    return SessionFacts(concepts, edges, 4, draw(st.integers(0, 2**40))), evidence


def _shuffled(items: Sequence[_T], rnd: random.Random) -> list[_T]:
    copy = list(items)
    rnd.shuffle(copy)
    return copy


@pytest.mark.slow  # a property test of seconds: `pytest -m "not slow"` skips it
@settings(max_examples=150, deadline=None)
@given(_sessions(), st.randoms(use_true_random=False), st.integers(0, 4))
def test_a_sweep_does_not_depend_on_input_order(
    inputs: tuple[SessionFacts, EvidenceInputs], rnd: random.Random, floor: int
) -> None:
    facts, evidence = inputs
    knobs = GcKnobs(collect_floor=floor, collect_fraction=0.0, bump_chunk=3)
    edges = _shuffled(facts.edges, rnd)
    other = SessionFacts(
        _shuffled(facts.concepts, rnd), edges + edges[:2], facts.interaction_count, facts.epoch
    )
    other_evidence = EvidenceInputs(
        _shuffled(evidence.concepts, rnd),
        _shuffled(evidence.contradictions, rnd),
        _shuffled(evidence.support, rnd),
    )
    first = plan_sweep(facts, evidence, knobs, NOW, Trigger.ELAPSED)
    assert plan_sweep(other, other_evidence, knobs, NOW, Trigger.ELAPSED) == first
    assert not set(first.protected) & set(first.collected_ids)
    assert len(first.collected) <= first.collection_cap


def test_a_paused_sweep_and_score_decide_as_an_unpaused_one() -> None:
    """The jobs pass a pause that lets other threads run between chunks of a long pass."""
    rng = random.Random(5)
    concepts = [concept(n, rng.choice([ENTITY, RESOURCE, LOGIC])) for n in range(1, 1400)]
    edges = [derived(n, n % 7) for n in range(1, 1400) if n % 5]
    edges += [edge(EdgeKind.DEPENDS_ON, n, rng.randint(1, 1399)) for n in range(1, 1400, 3)]
    facts = session(concepts, edges)
    pauses: list[int] = []

    def pause() -> None:
        pauses.append(1)

    paused = plan_sweep(facts, EvidenceInputs(), KNOBS, NOW, Trigger.MUTATIONS, pause=pause)
    assert paused == sweep(facts)
    assert len(pauses) >= 3
    columns = FactColumns.of(facts)
    span = (OLD, NOW)
    assert daemon_score_column(columns, span, KNOBS, pause) == list(
        daemon_scores(facts, span, KNOBS).values()
    )
