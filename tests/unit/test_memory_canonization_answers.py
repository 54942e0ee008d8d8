"""Inspect's canonization answers, line by line (M-INS-030..043): each gate's reason wording,
a gate with no current value, and the last demotion line of each cause."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lcg.domain.memory.canonization import Cause, Check, Demotion, last_demotion_line
from lcg.domain.memory.canonization.answers import reason_line
from lcg.domain.memory.evidence import ConceptId
from lcg.projections.canonization.measure import demotion_of
from lcg.projections.canonization.state import NodeState

NOW = datetime(2026, 9, 30, 12, 0, 0, tzinfo=UTC)
NEWER = ConceptId("8c41d0e2-0000-4000-8000-000000000001")


def _check(gate: str, current: float | None, bar: float, stage: int = 2) -> Check:
    return Check(gate, stage, current, bar, ">=", met=False)


@pytest.mark.parametrize(
    ("gate", "current", "bar", "line"),
    [
        (
            "score_p90",
            0.25,
            0.5,
            "- stage 2: score 0.25 not above the session's 90th percentile 0.5",
        ),
        (
            "coverage",
            0.1,
            0.2,
            "- stage 2: dependents cover 0.1 of the session, needs at least 0.2",
        ),
        ("blast_radius", 3, 3, "- stage 2: blast radius 3, needs more than 3"),
        ("peer_count", 19, 20, "- stage 2: 19 peer concepts in the session, needs at least 20"),
        ("cooldown", 12, 300, "- stage 2: demoted 12 seconds ago, cooling down for 300"),
        ("solo", 4.5, 6, "- stage 2: solo score 4.5, needs at least 6"),
    ],
)
def test_m_ins_each_gate_names_its_measure_and_bar(
    gate: str, current: float, bar: float, line: str
) -> None:
    assert reason_line(_check(gate, current, bar)) == line


def test_m_ins_a_gate_with_no_measure_yet_says_none() -> None:
    assert reason_line(_check("score_p90", None, 0.5, stage=1)) == (
        "- stage 1: score none not above the session's 90th percentile 0.5"
    )


def test_m_ins_041_a_demotion_line_names_supersession_only_with_the_superseding_concept() -> None:
    assert last_demotion_line(Demotion(NOW, Cause.BUDGET)) == (
        "last demotion 2026-09-30T12:00:00Z: budget"
    )
    # a budget demotion carries no superseding concept even if one were given
    assert last_demotion_line(Demotion(NOW, Cause.BUDGET, NEWER, "newer")) == (
        "last demotion 2026-09-30T12:00:00Z: budget"
    )
    assert last_demotion_line(Demotion(NOW, Cause.SUPERSESSION)) == (
        "last demotion 2026-09-30T12:00:00Z: supersession"
    )


def test_m_can_053_a_superseded_line_quotes_the_superseding_concept_only_while_in_memory() -> None:
    """The demotion read for a cycle or inspect takes the superseding concept's content from
    the concepts in memory (`contents`): quoted while it is there, the id alone once it is
    collected."""
    state = NodeState(
        status="Venerable",
        last_demotion_at=NOW,
        demotion_cause="supersession",
        superseded_by=NEWER,
    )
    held = demotion_of(state, {NEWER: "flushes give up after three attempts"})
    gone = demotion_of(state, {})
    assert held is not None
    assert gone is not None
    assert last_demotion_line(held) == (
        'last demotion 2026-09-30T12:00:00Z: superseded by "flushes give up after three'
        ' attempts" (id 8c41d0e2)'
    )
    assert last_demotion_line(gone) == (
        "last demotion 2026-09-30T12:00:00Z: superseded by (id 8c41d0e2)"
    )
