"""The `--ledger` completion line of an applied write (seed 001): its replacement candidates
only as a count, cosines and flags, never ids or text."""

from __future__ import annotations

import json

from lcg.domain.memory.records import Candidate, Candidates, WriteOutcome
from lcg.interfaces.ledger_lines import completion_fields, completion_line

OLD = "5e6f7a8b-0000-4000-8000-000000000001"
OTHER = "9a8b7c6d-0000-4000-8000-000000000002"
EXCERPT = "the embedder listens on port 8080"


def _outcome(*candidates: Candidate, total: int | None = None) -> WriteOutcome:
    found = Candidates(candidates, len(candidates) if total is None else total)
    return WriteOutcome(
        agent_id="agent-a",
        about_time="2026-01-01T00:00:00+00:00",
        interaction="interaction",
        nodes=(),
        reinforced_nodes=(),
        edges=(),
        created=("1a2b3c4d-0000-4000-8000-000000000003",),
        matched=(),
        created_count=1,
        matched_count=0,
        semantic_merged=0,
        reinforced=0,
        edges_count=1,
        embedded=1,
        summary="derived 1 concept(s)",
        replacement_candidates=found if candidates or total else None,
    )


def _candidate(node: str, cosine: float, **flags: bool) -> Candidate:
    return Candidate(node[:8], node, EXCERPT, cosine, "1a2b3c4d", **flags)


def test_m_der_124_candidates_are_a_count_and_cosines_never_ids_or_text() -> None:
    fields = completion_fields(_outcome(_candidate(OLD, 0.8684), _candidate(OTHER, 0.86)))
    assert fields["replacement_candidates"] == 2
    assert fields["replacement_cosines"] == [0.8684, 0.86]
    assert "replacement_merged" not in fields
    assert "replacement_newer" not in fields
    line = json.dumps(completion_line("liminis", "lwr1.x", "applied", fields))
    for hidden in (OLD, OLD[:8], OTHER[:8], "1a2b3c4d", EXCERPT):
        assert hidden not in line, hidden


def test_m_der_124_merged_and_newer_flags_come_one_per_cosine_when_any_is_set() -> None:
    fields = completion_fields(
        _outcome(_candidate(OLD, 0.99, merged=True), _candidate(OTHER, 0.9, newer=True))
    )
    assert fields["replacement_merged"] == [True, False]
    assert fields["replacement_newer"] == [False, True]


def test_m_der_124_the_count_is_the_true_total_and_no_candidates_adds_no_keys() -> None:
    fields = completion_fields(_outcome(_candidate(OLD, 0.9), total=12))
    assert fields["replacement_candidates"] == 12
    assert fields["replacement_cosines"] == [0.9]
    plain = completion_fields(_outcome())
    assert not any(key.startswith("replacement") for key in plain)
