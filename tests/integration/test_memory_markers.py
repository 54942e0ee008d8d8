"""Conflict and high-risk markers on recall hits (issue 12; OQ-23 answered by canonization.md
§7; M-CAN-061, M-DER-056): the pure rules of lcg.domain.memory.markers, then recall on a real
workspace with the clock advanced across the 30 s window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lcg.domain.memory import markers
from lcg.domain.memory.markers import RecentWrite
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.conftest import SteppingClock
from tests.integration.test_memory_writes import call, concept, derive, settled

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SCHEMA = "the user schema owns the users table"


def ago(seconds: int) -> datetime:
    return NOW - timedelta(seconds=seconds)


def test_oq_23_a_conflict_needs_two_writers_and_a_dependency_or_causal_edge() -> None:
    one_writer = [RecentWrite("agent-b", ago(3), "depends_on"), RecentWrite("agent-b", ago(2))]
    assert markers.conflict(one_writer, NOW, "agent-a") is None
    only_structure = [
        RecentWrite("agent-b", ago(3), "parent_of"),
        RecentWrite("agent-c", ago(2), "parent_of"),
    ]
    assert markers.conflict(only_structure, NOW, "agent-a") is None
    two = [RecentWrite("agent-b", ago(9), "depends_on"), RecentWrite("agent-c", ago(4), "produces")]
    assert markers.conflict(two, NOW, "agent-a") == "Agent C wrote to it 4 seconds ago"
    # the asker is not named while another writer is; it is when it wrote alone last
    assert markers.conflict(two, NOW, "agent-c") == "Agent B wrote to it 9 seconds ago"


def test_m_der_056_a_contradiction_is_no_conflict_but_a_fresh_write() -> None:
    contradicted = [
        RecentWrite("agent-b", ago(3), "contradicts"),
        RecentWrite("agent-c", ago(2), "contradicts"),
        RecentWrite("agent-c", ago(2)),
    ]
    assert markers.conflict(contradicted, NOW, "agent-a") is None
    line = markers.high_risk("the ruling", "Canonical", 0, contradicted, NOW)
    assert (
        line == "High-risk modification: high-value node the ruling (Canonical) modified within 30s"
    )


def test_m_can_061_high_risk_is_for_high_value_concepts_within_30_seconds() -> None:
    fresh = [RecentWrite("agent-b", ago(30))]
    assert markers.high_risk("a note", "None", 4, fresh, NOW) is None
    assert markers.high_risk("a note", "None", 5, fresh, NOW) == (
        "High-risk modification: high-value node a note (None, blast radius 5) modified within 30s"
    )
    assert markers.high_risk("a ruling", "Venerable", 5, [RecentWrite("b", ago(31))], NOW) is None
    assert markers.high_risk("a ruling", "Venerable", 0, fresh, NOW) is not None


def _text(app: App, query: str = "users table") -> str:
    result: dict[str, Any] = call(app, "lambo_recall", agent_id="agent-z", query=query)
    assert result["text"] == result["structuredContent"]["context"]
    return str(result["text"])


def test_oq_23_recall_marks_a_concurrent_edit_until_the_window_passes(
    app: App, workspace: Workspace
) -> None:
    clock = workspace.clock
    assert isinstance(clock, SteppingClock)
    settled(app, derive(app, concept(SCHEMA, "entity")))
    settled(app, derive(app, concept("logins read the users table", depends_on=[SCHEMA])))
    before = _text(app)
    assert "wrote to it" not in before  # one writer so far
    settled(
        app,
        derive(app, concept("billing reads the users table", depends_on=[SCHEMA]), agent="agent-b"),
    )
    result: dict[str, Any] = call(app, "lambo_recall", agent_id="agent-z", query="users table")
    blocks = str(result["text"]).split("\n\n")
    (schema_block,) = [block for block in blocks if block.startswith(SCHEMA)]
    marker = schema_block.split("\n")[1]
    assert marker.startswith("Agent B wrote to it ")
    assert marker.endswith(" seconds ago")
    assert 0 <= int(marker.split()[-3]) <= 30
    assert marker in result["structuredContent"]["warnings"]
    clock.now += timedelta(seconds=31)
    assert "wrote to it" not in _text(app)  # short-lived: gone after the window


def test_m_can_061_a_fresh_write_to_a_load_bearing_concept_is_high_risk(
    app: App, workspace: Workspace
) -> None:
    clock = workspace.clock
    assert isinstance(clock, SteppingClock)
    settled(app, derive(app, concept(SCHEMA, "entity")))
    dependents = [
        concept(f"service {n} reads the users table", depends_on=[SCHEMA]) for n in range(5)
    ]
    settled(app, derive(app, *dependents))
    text = _text(app, SCHEMA)
    expected = f"High-risk modification: high-value node {SCHEMA} (None, blast radius 5)"
    assert f"{expected} modified within 30s" in text.split("\n")
    clock.now += timedelta(seconds=31)
    assert "High-risk" not in _text(app, SCHEMA)
    # being contradicted is a fresh write to it (M-DER-056), and raises no conflict line
    correction = concept("accounts replaced the users table", "observation", against=[SCHEMA])
    settled(app, derive(app, correction, agent="agent-c"))
    again = _text(app, SCHEMA)
    assert expected in again, again
    assert "wrote to it" not in again
