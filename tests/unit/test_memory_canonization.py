"""The canonization policy (M-CAN-001..029, M-INS-030..043, canonization.md §1-§6, §10)."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization import (
    Cause,
    ConceptStats,
    Cursors,
    Demotion,
    IllegalTransition,
    Knobs,
    Policy,
    SessionStats,
    SoloMeasures,
    Status,
    SupersessionEvidence,
    Transition,
    check_transition,
    evaluate,
    last_demotion_line,
    p90,
    parse_policy,
    plan_cycle,
    plan_cycle_with_cursors,
    solo_sessions,
)
from lcg.domain.memory.evidence import (
    Concept,
    ConceptId,
    Contradiction,
    InteractionId,
    Support,
    SupportKind,
)
from lcg.domain.memory.text import ConceptType

NOW = datetime(2026, 9, 30, 12, 0, 0, tzinfo=UTC)
KNOBS = Knobs()


def cid(n: int) -> ConceptId:
    return ConceptId(f"{n:08x}-0000-4000-8000-000000000000")


HERO = cid(0x724C92B9)


def peers(count: int = 20, score: float = 0.1) -> list[ConceptStats]:
    """Ordinary None concepts that fail Stage 1 (low score, never swept)."""
    return [ConceptStats(cid(i + 1), Status.NONE, score=score) for i in range(count)]


def hero(status: Status = Status.NONE, **changes: object) -> ConceptStats:
    base = ConceptStats(
        HERO,
        status,
        canonical_key="schema user",
        score=0.9,
        gc_survived=3,
        distinct_interactions=3,
        coverage=0.5,
        blast_radius=9,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def session(*concepts: ConceptStats, **kwargs: object) -> SessionStats:
    return SessionStats(tuple(concepts), **kwargs)  # type: ignore[arg-type]


def applied(snapshot: SessionStats, transitions: Iterable[Transition]) -> SessionStats:
    """The next snapshot after the job appended `transitions` (what the projection does)."""
    moved = {t.node_id: t for t in transitions}
    concepts = []
    for stats in snapshot.concepts:
        hop = moved.get(stats.node_id)
        if hop is None:
            concepts.append(stats)
            continue
        demotion = stats.last_demotion
        if hop.last_demotion_time is not None:
            demotion = Demotion(hop.last_demotion_time, hop.cause, hop.superseded_by)
        concepts.append(dataclasses.replace(stats, status=hop.to_status, last_demotion=demotion))
    return dataclasses.replace(snapshot, concepts=tuple(concepts))


# --- the ladder -------------------------------------------------------------------------------


def test_statuses_have_the_wire_names_of_canonization_events() -> None:  # M-CAN-001
    assert [s.value for s in Status] == ["None", "Candidate", "Venerable", "Canonical"]


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (Status.NONE, Status.CANDIDATE),
        (Status.CANDIDATE, Status.VENERABLE),
        (Status.VENERABLE, Status.CANONICAL),
        (Status.CANONICAL, Status.NONE),
        (Status.NONE, Status.VENERABLE),
    ],
)
def test_legal_transitions_pass(start: Status, end: Status) -> None:
    check_transition(start, start, end)


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (Status.NONE, Status.CANONICAL),
        (Status.CANDIDATE, Status.CANONICAL),
        (Status.CANONICAL, Status.VENERABLE),
        (Status.VENERABLE, Status.NONE),
        (Status.CANDIDATE, Status.NONE),
        (Status.NONE, Status.NONE),
    ],
)
def test_illegal_transitions_are_refused(start: Status, end: Status) -> None:
    with pytest.raises(IllegalTransition, match="not on the ladder"):
        check_transition(start, start, end)


def test_a_transition_from_a_stale_status_is_refused() -> None:
    with pytest.raises(IllegalTransition, match="the concept is Venerable"):
        check_transition(Status.VENERABLE, Status.CANDIDATE, Status.VENERABLE)


# --- knobs and policy selection -----------------------------------------------------------------


def test_oq_47_knobs_default_to_upstream_values() -> None:  # §10
    assert KNOBS.promotion_policy is Policy.SWARM
    assert KNOBS.min_peer_count == 20
    assert KNOBS.edge_min_age == timedelta(seconds=60)
    assert KNOBS.eval_interval == timedelta(seconds=60)
    assert KNOBS.batch_size == 50
    assert KNOBS.repromotion_cooldown == timedelta(seconds=300)
    assert KNOBS.max_canonical_nodes == 1000
    assert KNOBS.supersede is False


@pytest.mark.parametrize("text", ["Swarm", " swarm ", "SWARM", "Solo", "solo\n"])
def test_promotion_policy_is_trimmed_and_case_insensitive(text: str) -> None:  # M-CAN-008
    assert parse_policy(text).value == text.strip().capitalize()


def test_a_bad_promotion_policy_names_the_value_and_the_choices() -> None:
    with pytest.raises(DomainError, match=r"'Hive'.*Swarm \| Solo"):
        parse_policy("Hive")


def test_knobs_refuse_a_zero_batch() -> None:
    with pytest.raises(DomainError, match="batch_size"):
        Knobs(batch_size=0)


# --- Stage 1 (Swarm) ----------------------------------------------------------------------------


def test_p90_is_nearest_rank_and_counts_bad_scores_as_zero() -> None:
    assert p90([float(i) for i in range(1, 11)]) == 9.0
    assert p90([float(i) for i in range(1, 21)]) == 18.0
    assert p90([math.nan, -1.0, 0.5]) == 0.5
    assert p90([math.nan, -1.0, math.inf]) == 0.0
    assert p90([]) == 0.0


def test_stage1_is_eligible_when_every_gate_is_met() -> None:
    admission = evaluate(HERO, session(hero(), *peers(19)), KNOBS, NOW)
    assert admission.next is Status.CANDIDATE
    assert admission.eligible
    assert [(c.gate, c.stage, c.comparison, c.met) for c in admission.checks] == [
        ("peer_count", 1, ">=", True),
        ("gc_survived", 1, ">=", True),
        ("score_p90", 1, ">", True),
    ]
    assert admission.reasons == ()


def test_stage1_peer_count_gate_fails_below_twenty_non_canonical_concepts() -> None:
    canonical = ConceptStats(cid(0xFFFF), Status.CANONICAL, score=0.1)
    admission = evaluate(HERO, session(hero(), *peers(18), canonical), KNOBS, NOW)
    check = admission.checks[0]
    assert (check.gate, check.current, check.bar, check.met) == ("peer_count", 19, 20, False)
    assert admission.reasons == ("- stage 1: 19 peer concepts in the session, needs at least 20",)
    assert not admission.eligible


def test_stage1_gc_survived_gate_needs_three_sweeps() -> None:
    admission = evaluate(HERO, session(hero(gc_survived=2), *peers(19)), KNOBS, NOW)
    assert [c.gate for c in admission.checks if not c.met] == ["gc_survived"]
    assert admission.reasons == ("- stage 1: survived 2 garbage collections, needs at least 3",)


def test_stage1_score_must_be_strictly_above_p90() -> None:
    tied = evaluate(HERO, session(hero(score=0.1), *peers(19)), KNOBS, NOW)
    check = tied.checks[2]
    assert (check.gate, check.current, check.bar, check.met) == ("score_p90", 0.1, 0.1, False)
    assert not tied.eligible


# --- Stage 2 ------------------------------------------------------------------------------------


def test_stage2_reason_names_dependents_from_other_interactions() -> None:  # M-CAN-010
    admission = evaluate(HERO, session(hero(Status.CANDIDATE, distinct_interactions=2)), KNOBS, NOW)
    assert admission.reasons == (
        "- stage 2: dependents from 2 other interactions, needs at least 3",
    )
    assert admission.lines() == (
        "canonization (Swarm): Candidate -> Venerable refused",
        "  - stage 2: dependents from 2 other interactions, needs at least 3",
    )


@pytest.mark.parametrize(("coverage", "met"), [(0.29, False), (0.3, True), (1.0, True)])
def test_stage2_coverage_is_inclusive_at_three_tenths(coverage: float, met: bool) -> None:
    admission = evaluate(HERO, session(hero(Status.CANDIDATE, coverage=coverage)), KNOBS, NOW)
    assert admission.checks[1].gate == "coverage"
    assert admission.checks[1].met is met
    assert admission.eligible is met


# --- Stage 3 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("radius", "met"), [(5, False), (6, True)])
def test_stage3_blast_radius_must_be_above_five(radius: int, met: bool) -> None:
    admission = evaluate(HERO, session(hero(Status.VENERABLE, blast_radius=radius)), KNOBS, NOW)
    check = next(c for c in admission.checks if c.gate == "blast_radius")
    assert (check.current, check.bar, check.comparison, check.met) == (radius, 5, ">", met)
    assert admission.eligible is met


def test_stage3_canonical_budget_fails_while_the_budget_is_full() -> None:  # M-CAN-011
    knobs = Knobs(max_canonical_nodes=1)
    full = session(hero(Status.VENERABLE), ConceptStats(cid(1), Status.CANONICAL))
    admission = evaluate(HERO, full, knobs, NOW)
    check = admission.checks[-1]
    assert (check.gate, check.current, check.bar, check.comparison) == (
        "canonical_budget",
        1,
        1,
        "<",
    )
    assert not check.met
    assert "- stage 3: canonical budget full (1 of 1)" in admission.reasons
    assert plan_cycle(full, knobs, NOW) == []
    assert plan_cycle_with_cursors(full, knobs, NOW).cursors.stage3 is None


def test_a_canonical_concept_has_no_next_hop() -> None:  # M-INS-033
    admission = evaluate(HERO, session(hero(Status.CANONICAL)), KNOBS, NOW)
    assert admission.next is None
    assert admission.checks == ()
    assert not admission.eligible
    assert admission.lines() == ("canonization (Swarm): Canonical",)


# --- the seed's demo: the ladder walk -------------------------------------------------------------


def test_the_ladder_walk_records_blast_radius_null_null_then_measured() -> None:
    # M-CAN-002, M-CAN-003, M-CAN-004: one hop per cycle, radius only on the promotion.
    snapshot = session(hero(), *peers(19))
    history: list[Transition] = []
    for minute in range(3):
        hops = plan_cycle(snapshot, KNOBS, NOW + timedelta(minutes=minute))
        assert [t.node_id for t in hops] == [HERO]
        history += hops
        snapshot = applied(snapshot, hops)
    assert [(t.from_status, t.to_status, t.blast_radius) for t in history] == [
        (Status.NONE, Status.CANDIDATE, None),
        (Status.CANDIDATE, Status.VENERABLE, None),
        (Status.VENERABLE, Status.CANONICAL, 9),
    ]
    assert all(t.cause is Cause.PROMOTION for t in history)
    assert [t.occurred_at for t in history] == [NOW + timedelta(minutes=m) for m in range(3)]
    assert plan_cycle(snapshot, KNOBS, NOW) == []


# --- batches and round robin ----------------------------------------------------------------------


def test_stage1_takes_the_first_batch_by_id() -> None:  # M-CAN-007
    eligible = [hero(node_id=cid(1000 + i)) for i in range(60)]
    hops = plan_cycle(session(*reversed(eligible), *peers(600)), KNOBS, NOW)
    assert [t.node_id for t in hops] == [cid(1000 + i) for i in range(50)]


def test_stage2_windows_go_round_robin_and_wrap() -> None:  # M-CAN-007
    candidates = [hero(Status.CANDIDATE, node_id=cid(i)) for i in range(120)]
    snapshot = session(*candidates)
    first = plan_cycle_with_cursors(snapshot, KNOBS, NOW)
    assert [t.node_id for t in first.transitions] == [cid(i) for i in range(50)]
    assert first.cursors == Cursors(stage2=cid(49))
    second = plan_cycle_with_cursors(
        dataclasses.replace(snapshot, cursors=Cursors(stage2=cid(99))), KNOBS, NOW
    )
    assert [t.node_id for t in second.transitions] == [
        *(cid(i) for i in range(100, 120)),
        *(cid(i) for i in range(30)),
    ]
    assert second.cursors.stage2 == cid(29)


def test_stage3_promotes_by_score_while_the_budget_has_room() -> None:
    venerables = [
        hero(Status.VENERABLE, node_id=cid(1), score=0.5),
        hero(Status.VENERABLE, node_id=cid(2), score=0.9),
        hero(Status.VENERABLE, node_id=cid(3), score=0.7),
    ]
    hops = plan_cycle(session(*venerables), Knobs(max_canonical_nodes=2), NOW)
    assert [t.node_id for t in hops] == [cid(2), cid(3)]


# --- budget demotion and cooldown ---------------------------------------------------------------


def test_budget_demotion_demotes_the_smallest_blast_radius_first() -> None:  # M-CAN-027
    canonicals = [
        hero(Status.CANONICAL, node_id=cid(1), blast_radius=7, canonical_key="b"),
        hero(Status.CANONICAL, node_id=cid(2), blast_radius=6, canonical_key="z"),
        hero(Status.CANONICAL, node_id=cid(3), blast_radius=6, canonical_key="a"),
        hero(Status.CANONICAL, node_id=cid(4), blast_radius=6, canonical_key=None),
    ]
    hops = plan_cycle(session(*canonicals), Knobs(max_canonical_nodes=2), NOW)
    assert hops == [
        Transition(cid(3), Status.CANONICAL, Status.NONE, None, Cause.BUDGET, NOW, NOW),
        Transition(cid(2), Status.CANONICAL, Status.NONE, None, Cause.BUDGET, NOW, NOW),
    ]


def test_inspect_ends_with_the_last_budget_demotion() -> None:  # M-CAN-029, M-INS-042
    demoted = hero(last_demotion=Demotion(NOW, Cause.BUDGET))
    admission = evaluate(HERO, session(demoted, *peers(19)), KNOBS, NOW)
    assert admission.lines()[-1] == "last demotion 2026-09-30T12:00:00Z: budget"


@pytest.mark.parametrize(("seconds", "promoted"), [(100, False), (299, False), (300, True)])
def test_cooldown_blocks_repromotion_for_300_seconds(seconds: int, promoted: bool) -> None:
    demoted = hero(
        Status.VENERABLE,
        last_demotion=Demotion(NOW - timedelta(seconds=seconds), Cause.BUDGET),
    )
    admission = evaluate(HERO, session(demoted), KNOBS, NOW)
    check = admission.checks[0]
    assert (check.gate, check.current, check.bar, check.met) == (
        "cooldown",
        seconds,
        300,
        promoted,
    )
    assert bool(plan_cycle(session(demoted), KNOBS, NOW)) is promoted
    if not promoted:
        assert f"- stage 3: demoted {seconds} seconds ago, cooling down for 300" in (
            admission.reasons
        )


def test_a_budget_demotion_then_cooldown_then_repromotion() -> None:
    knobs = Knobs(max_canonical_nodes=1)
    other = hero(Status.CANONICAL, node_id=cid(1), blast_radius=20)
    snapshot = session(hero(Status.CANONICAL), other)
    demotions = plan_cycle(snapshot, knobs, NOW)
    assert [(t.node_id, t.cause) for t in demotions] == [(HERO, Cause.BUDGET)]
    snapshot = applied(snapshot, demotions)
    # back at Venerable (it re-climbed) and the budget has room again
    snapshot = session(
        dataclasses.replace(snapshot.concepts[0], status=Status.VENERABLE),
    )
    assert plan_cycle(snapshot, knobs, NOW + timedelta(seconds=299)) == []
    later = plan_cycle(snapshot, knobs, NOW + timedelta(seconds=300))
    assert [(t.to_status, t.blast_radius) for t in later] == [(Status.CANONICAL, 9)]


# --- Solo -----------------------------------------------------------------------------------------


def test_solo_sessions_count_times_at_least_24_hours_apart() -> None:
    day = timedelta(hours=24)
    times = [NOW, NOW, NOW + timedelta(hours=23), NOW + day, NOW + day + timedelta(hours=1)]
    assert solo_sessions(times) == 2
    assert solo_sessions([]) == 0


def solo(status: Status, **measures: int) -> ConceptStats:
    return hero(
        status,
        concept_type=ConceptType.CONSTRAINT,
        gc_survived=0,
        solo=SoloMeasures(support_times=(NOW,), **measures),
    )


def test_solo_admission_lists_the_score_terms() -> None:  # M-CAN-009, M-INS-035
    stats = solo(Status.NONE, human_confirmed=1, valid_actions=1, reverts=1)
    admission = evaluate(HERO, session(stats), Knobs(promotion_policy=Policy.SOLO), NOW)
    assert admission.solo is not None
    terms = admission.solo
    assert (terms.sessions, terms.raw, terms.resistance, terms.score) == (1, 4.0, 1.5, 6.0)
    assert terms.band is Status.VENERABLE
    assert evaluate(HERO, session(stats), KNOBS, NOW).solo is None


def test_solo_promotes_without_peers_or_sweeps_where_swarm_refuses() -> None:
    stats = solo(Status.NONE, valid_actions=1)  # (1 + 2) x 1.5 = 4.5: band Candidate
    solo_knobs = Knobs(promotion_policy=Policy.SOLO)
    assert [t.to_status for t in plan_cycle(session(stats), solo_knobs, NOW)] == [Status.CANDIDATE]
    assert plan_cycle(session(stats), KNOBS, NOW) == []
    assert evaluate(HERO, session(stats), solo_knobs, NOW).lines() == (
        "canonization (Solo): None -> Candidate eligible",
    )


def test_solo_bands_gate_stage2_and_stage3() -> None:
    knobs = Knobs(promotion_policy=Policy.SOLO)
    low = solo(Status.CANDIDATE, valid_actions=1)  # 4.5 < 6
    assert plan_cycle(session(low), knobs, NOW) == []
    assert evaluate(HERO, session(low), knobs, NOW).reasons == (
        "- stage 2: solo score 4.5, needs at least 6",
    )
    high = solo(Status.VENERABLE, human_confirmed=2)  # (1 + 8) x 1.5 = 13.5
    assert [t.blast_radius for t in plan_cycle(session(high), knobs, NOW)] == [9]


def test_solo_stamps_the_blast_radius_only_when_the_blast_test_passes() -> None:
    knobs = Knobs(promotion_policy=Policy.SOLO)
    small = dataclasses.replace(solo(Status.VENERABLE, human_confirmed=2), blast_radius=3)
    assert [(t.to_status, t.blast_radius) for t in plan_cycle(session(small), knobs, NOW)] == [
        (Status.CANONICAL, None)
    ]


# --- supersession ---------------------------------------------------------------------------------

T0 = NOW - timedelta(hours=1)
TARGET = HERO
NEWER = ConceptId("8c41d0e2-0000-4000-8000-000000000000")


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def first_write(node_id: ConceptId, minute: float, agent: str) -> Concept:
    return Concept(node_id, at(minute), at(minute), agent, InteractionId(f"w-{node_id}"))


def support(
    target: ConceptId, minute: float, n: int, agent: str = "agent-x", interaction: str = ""
) -> Support:
    return Support(
        target,
        cid(0x100 + n),
        SupportKind.DEPENDS_ON,
        agent,
        at(minute),
        at(minute),
        InteractionId(interaction or f"w-{n}"),
    )


def evidence(
    newer_support: Iterable[float] = (20, 30, 40), target_support: Iterable[Support] = ()
) -> SupersessionEvidence:
    return SupersessionEvidence(
        concepts=(first_write(TARGET, 0, "agent-a"), first_write(NEWER, 10, "agent-c")),
        contradictions=(
            Contradiction(TARGET, NEWER, "attempt flush give three", "agent-c", at(10), at(10)),
        ),
        support=(
            support(TARGET, 1, 1, "agent-b"),
            *target_support,
            *(support(NEWER, m, 10 + i) for i, m in enumerate(newer_support)),
        ),
        interaction_extent=timedelta(minutes=60),
    )


SUPERSEDE = Knobs(supersede=True)


def superseding(status: Status = Status.CANONICAL, **kwargs: object) -> SessionStats:
    newer = ConceptStats(NEWER, Status.NONE)
    return session(hero(status), newer, evidence=evidence(**kwargs))  # type: ignore[arg-type]


def test_supersession_is_off_by_default() -> None:  # M-CAN-020
    assert plan_cycle(superseding(), KNOBS, NOW) == []


def test_newer_support_from_three_other_interactions_demotes_the_canonical() -> None:
    # M-CAN-021, M-CAN-023: demoted to None, the contradicting concept is not promoted.
    assert plan_cycle(superseding(), SUPERSEDE, NOW) == [
        Transition(TARGET, Status.CANONICAL, Status.NONE, None, Cause.SUPERSESSION, NOW, NOW, NEWER)
    ]


@pytest.mark.parametrize(
    "newer_support",
    [(20, 30), (20, 21, 22), (20, 30, 59.5)],
    ids=["two-interactions", "no-spread", "too-young"],
)
def test_a_contradiction_without_enough_newer_support_demotes_nothing(
    newer_support: tuple[float, ...],
) -> None:  # M-CAN-022
    assert plan_cycle(superseding(newer_support=newer_support), SUPERSEDE, NOW) == []


def test_support_newer_than_the_contradicting_support_keeps_the_canonical() -> None:
    later = (support(TARGET, 50, 2, "agent-b"),)
    assert plan_cycle(superseding(target_support=later), SUPERSEDE, NOW) == []


def test_support_from_the_declaring_agent_never_defends_the_target() -> None:  # M-CAN-026
    own = (support(TARGET, 50, 2, "agent-c"),)
    hops = plan_cycle(superseding(target_support=own), SUPERSEDE, NOW)
    assert [(t.node_id, t.cause) for t in hops] == [(TARGET, Cause.SUPERSESSION)]


def test_a_venerable_the_newer_side_would_supersede_is_held() -> None:
    # M-CAN-024, M-CAN-025, M-INS-043
    snapshot = superseding(Status.VENERABLE)
    admission = evaluate(TARGET, snapshot, SUPERSEDE, NOW)
    assert not admission.eligible
    assert admission.held_by == NEWER
    assert admission.reasons == ("held: contradicted by 8c41d0e2 with newer evidence",)
    assert admission.lines()[0] == "canonization (Swarm): Venerable -> Canonical refused"
    assert plan_cycle(snapshot, SUPERSEDE, NOW) == []
    assert evaluate(TARGET, snapshot, KNOBS, NOW).eligible
    assert [t.to_status for t in plan_cycle(snapshot, KNOBS, NOW)] == [Status.CANONICAL]


def test_the_last_demotion_line_quotes_the_superseding_concept() -> None:  # M-CAN-029
    demotion = Demotion(NOW, Cause.SUPERSESSION, NEWER, "flushes give up after three attempts")
    assert last_demotion_line(demotion) == (
        'last demotion 2026-09-30T12:00:00Z: superseded by "flushes give up after three'
        ' attempts" (id 8c41d0e2)'
    )
    gone = dataclasses.replace(demotion, superseded_by_content=None)
    assert last_demotion_line(gone) == (
        "last demotion 2026-09-30T12:00:00Z: superseded by (id 8c41d0e2)"
    )


def test_a_superseded_concept_is_not_also_demoted_by_the_budget() -> None:
    other = hero(Status.CANONICAL, node_id=cid(1), blast_radius=1)
    snapshot = dataclasses.replace(superseding(), concepts=(*superseding().concepts, other))
    hops = plan_cycle(snapshot, Knobs(supersede=True, max_canonical_nodes=1), NOW)
    assert [(t.node_id, t.cause) for t in hops] == [(TARGET, Cause.SUPERSESSION)]


# --- determinism ----------------------------------------------------------------------------------


def test_a_concept_measured_twice_is_refused() -> None:
    with pytest.raises(DomainError, match="measured twice"):
        plan_cycle(session(hero(), hero()), KNOBS, NOW)


_statuses = st.sampled_from(list(Status))
_stats = st.builds(
    ConceptStats,
    node_id=st.integers(0, 400).map(cid),
    status=_statuses,
    canonical_key=st.one_of(st.none(), st.sampled_from(["a", "b"])),
    score=st.floats(0, 1.4),
    gc_survived=st.integers(0, 4),
    distinct_interactions=st.integers(0, 4),
    coverage=st.floats(0, 1),
    blast_radius=st.integers(0, 8),
)


@given(
    concepts=st.lists(_stats, max_size=40, unique_by=lambda c: c.node_id),
    seed=st.integers(0, 2**32),
    budget=st.integers(0, 12),
    batch=st.integers(1, 8),
    cursor=st.one_of(st.none(), st.integers(0, 400).map(cid)),
)
def test_plan_cycle_does_not_depend_on_input_order(
    concepts: list[ConceptStats],
    seed: int,
    budget: int,
    batch: int,
    cursor: ConceptId | None,
) -> None:
    knobs = Knobs(max_canonical_nodes=budget, batch_size=batch, min_peer_count=3)
    cursors = Cursors(cursor, cursor)
    shuffled = list(concepts)
    random.Random(seed).shuffle(shuffled)
    first = plan_cycle_with_cursors(session(*concepts, cursors=cursors), knobs, NOW)
    second = plan_cycle_with_cursors(session(*shuffled, cursors=cursors), knobs, NOW)
    assert first == second
    moved = [t.node_id for t in first.transitions]
    assert len(moved) == len(set(moved))  # at most one hop per concept per cycle
    for hop in first.transitions:
        check_transition(hop.from_status, hop.from_status, hop.to_status)
    canonical = sum(c.status is Status.CANONICAL for c in concepts)
    up = sum(t.to_status is Status.CANONICAL for t in first.transitions)
    down = sum(t.from_status is Status.CANONICAL for t in first.transitions)
    assert canonical + up - down <= max(budget, canonical - down)
    assert canonical + up - down <= budget or up == 0
