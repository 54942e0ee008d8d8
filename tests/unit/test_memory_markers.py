"""The edges of the conflict and high-risk rules (canonization.md §7, OQ-23, M-CAN-061): the
30 s window at both ends, the kinds that count, the writer named, and the high-value bar.
The rules' ordinary cases and recall on a real workspace: tests/integration/test_memory_markers.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lcg.domain.memory import markers
from lcg.domain.memory.markers import RecentWrite

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def _pair(first: str, second: str | None, seconds: float = 5) -> list[RecentWrite]:
    return [RecentWrite("agent-b", ago(seconds), first), RecentWrite("agent-c", ago(2), second)]


def test_oq_23_the_conflict_window_holds_30_seconds_and_nothing_from_the_future() -> None:
    assert timedelta(seconds=30) == markers.WINDOW
    assert markers.conflict(_pair("depends_on", "parent_of", 30), NOW, "agent-a") == (
        "Agent C wrote to it 2 seconds ago"
    )
    # one writer left in the window: no conflict
    assert markers.conflict(_pair("depends_on", "parent_of", 30.001), NOW, "agent-a") is None
    future = [RecentWrite("agent-b", NOW + timedelta(seconds=1), "depends_on")]
    assert markers.conflict(_pair("depends_on", "produces") + future, NOW, "agent-a") == (
        "Agent C wrote to it 2 seconds ago"
    )
    assert markers.conflict(_pair("depends_on", "produces", 0), NOW, "agent-a") == (
        "Agent B wrote to it 0 seconds ago"
    )


def test_oq_23_each_dependency_or_causal_kind_makes_a_conflict_with_a_structural_edge() -> None:
    assert {"depends_on", "produces", "modifies"} == markers.DEPENDENCY_OR_CAUSAL
    assert {"depends_on", "produces", "modifies", "parent_of"} == markers.EDITS
    for kind in ("depends_on", "produces", "modifies"):
        assert markers.conflict(_pair("parent_of", kind), NOW, "agent-a") == (
            "Agent C wrote to it 2 seconds ago"
        )
    # a provenance edge or a write of the concept itself is no edit between concepts
    for other in ("derived_from", "contradicts", None):
        assert markers.conflict(_pair("depends_on", other), NOW, "agent-a") is None


def test_oq_23_the_latest_writer_is_named_and_the_asker_only_when_it_alone_wrote_last() -> None:
    writes = [
        RecentWrite("agent-b", ago(20), "depends_on"),
        RecentWrite("agent-c", ago(7), "modifies"),
        RecentWrite("agent-a", ago(1), "produces"),
    ]
    assert markers.conflict(writes, NOW, "agent-a") == "Agent C wrote to it 7 seconds ago"
    assert markers.conflict(writes, NOW, "agent-z") == "Agent A wrote to it 1 seconds ago"
    # two writers at the same instant: the larger id, whoever asks
    tie = [RecentWrite("agent-b", ago(4), "depends_on"), RecentWrite("agent-c", ago(4), "produces")]
    assert markers.conflict(tie, NOW, "agent-a") == "Agent C wrote to it 4 seconds ago"
    assert markers.conflict(list(reversed(tie)), NOW, "agent-a") == (
        "Agent C wrote to it 4 seconds ago"
    )


def test_m_can_061_high_risk_bar_is_canonical_venerable_or_a_blast_radius_of_5() -> None:
    assert {"Canonical", "Venerable"} == markers.HIGH_VALUE
    assert markers.HIGH_BLAST_RADIUS == 5
    fresh = [RecentWrite("agent-b", ago(0))]
    for status in ("Canonical", "Venerable"):
        assert markers.high_risk("a ruling", status, 0, fresh, NOW) == (
            f"High-risk modification: high-value node a ruling ({status}) modified within 30s"
        )
    assert markers.high_risk("a ruling", "Canonical", 1, fresh, NOW) == (
        "High-risk modification: high-value node a ruling (Canonical, blast radius 1)"
        " modified within 30s"
    )
    for status in ("None", "Provisional", "Contested"):
        assert markers.high_risk("a note", status, 4, fresh, NOW) is None
        assert markers.high_risk("a note", status, 5, fresh, NOW) is not None


def test_m_can_061_high_risk_needs_a_write_inside_the_window() -> None:
    assert markers.high_risk("a ruling", "Canonical", 7, [], NOW) is None
    edge = [RecentWrite("agent-b", ago(30), "parent_of")]
    assert markers.high_risk("a ruling", "Canonical", 7, edge, NOW) is not None
    late = [RecentWrite("agent-b", ago(30.5)), RecentWrite("agent-b", NOW + timedelta(seconds=1))]
    assert markers.high_risk("a ruling", "Canonical", 7, late, NOW) is None
