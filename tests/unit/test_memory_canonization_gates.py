"""The gates inspect's admission lists for each hop (M-INS-030..043: gate, stage, comparison),
`evaluate_over` (the rows and one concept's measures) agreeing with `evaluate`, and the fields
and rules of the ladder's refusals (§1)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization import (
    Cause,
    ConceptRows,
    Demotion,
    IllegalTransition,
    Knobs,
    Measures,
    Policy,
    Status,
    check_transition,
    evaluate,
    evaluate_over,
)
from tests.unit.test_memory_canonization import HERO, KNOBS, NOW, cid, hero, peers, session

SWARM_GATES = {
    Status.NONE: [("peer_count", 1, ">="), ("gc_survived", 1, ">="), ("score_p90", 1, ">")],
    Status.CANDIDATE: [("distinct_interactions", 2, ">="), ("coverage", 2, ">=")],
    Status.VENERABLE: [
        ("cooldown", 3, ">="),
        ("blast_radius", 3, ">"),
        ("canonical_budget", 3, "<"),
    ],
    Status.CANONICAL: [],
}


@pytest.mark.parametrize("status", list(Status))
def test_m_ins_each_hop_lists_its_gates_stages_and_comparisons(status: Status) -> None:
    snapshot = session(hero(status), *peers())
    admission = evaluate(HERO, snapshot, KNOBS, NOW)
    assert [(c.gate, c.stage, c.comparison) for c in admission.checks] == SWARM_GATES[status]
    rows = ConceptRows.of(snapshot.concepts)
    for knobs in (KNOBS, Knobs(promotion_policy=Policy.SOLO)):
        over = evaluate_over(HERO, rows, Measures.of(hero(status)), knobs, NOW)
        assert over == evaluate(HERO, snapshot, knobs, NOW)


def test_m_ins_a_concept_outside_the_snapshot_is_refused_by_both_evaluations() -> None:
    snapshot = session(*peers(3))
    with pytest.raises(DomainError, match="is not in the snapshot") as refused:
        evaluate(HERO, snapshot, KNOBS, NOW)
    assert (refused.value.field, refused.value.rule) == ("concept", "known")
    with pytest.raises(DomainError, match="is not in the snapshot") as refused_over:
        evaluate_over(HERO, ConceptRows.of(snapshot.concepts), Measures(), KNOBS, NOW)
    assert (refused_over.value.field, refused_over.value.rule) == ("concept", "known")
    assert evaluate_over(cid(2), ConceptRows.of(snapshot.concepts), Measures(), KNOBS, NOW)


def test_m_can_the_ladders_refusals_name_their_field_and_rule() -> None:
    with pytest.raises(IllegalTransition) as stale:
        check_transition(Status.VENERABLE, Status.CANDIDATE, Status.VENERABLE)
    assert (stale.value.field, stale.value.rule) == ("from_status", "current status")
    with pytest.raises(IllegalTransition) as off:
        check_transition(Status.NONE, Status.NONE, Status.CANONICAL)
    assert (off.value.field, off.value.rule) == ("to_status", "legal transition")


def test_m_ins_the_cooldown_gate_after_a_demotion_compares_the_seconds_since_it() -> None:
    demoted = hero(
        Status.VENERABLE, last_demotion=Demotion(NOW - timedelta(seconds=10), Cause.BUDGET)
    )
    check = evaluate(HERO, session(demoted, *peers()), KNOBS, NOW).checks[0]
    assert (check.gate, check.stage, check.current, check.comparison, check.met) == (
        "cooldown",
        3,
        10,
        ">=",
        False,
    )
