"""knowledge_status fields and hydration states (K-STA-001..006, P-102, P-103)."""

from __future__ import annotations

import pytest

from lcg.interfaces.workspace import Workspace
from tests.conftest import Call


def test_k_sta_001_004_readiness_fields_and_no_healthy_field(call: Call) -> None:
    status = call("knowledge_status")
    assert status["connected"] is True
    assert status["queryable"] is True
    assert status["initializing"] is False
    assert "healthy" not in status


def test_p_102_counts_follow_writes(call: Call) -> None:
    call("knowledge_assert_entity", name="A")
    call("knowledge_assert_entity", name="B")
    call("knowledge_assert_relationship", source_name="A", predicate="P", target_name="B")
    call("knowledge_add_episode", name="e", episode_body="x")
    status = call("knowledge_status")
    assert (status["entity_count"], status["relationship_count"], status["episode_count"]) == (
        2,
        1,
        1,
    )
    assert status["wal"]["max_seq"] == 4
    assert status["wal"]["applied_seq"] == 4
    assert status["wal"]["exists"] is True


def test_k_sta_005_006_empty_group_and_unapplied_wal_are_told_apart(call: Call) -> None:
    status = call("knowledge_status")
    assert status["wal"]["hydration_status"] == "not_applicable"  # nothing in liminis yet
    call("knowledge_assert_entity", name="A", group_id="g")
    call("knowledge_clear_all", confirm=True, preserve_wal=True)
    groups = call("knowledge_status")["wal_groups"]
    assert groups["g"]["hydration_status"] == "wal_ahead"
    call("knowledge_rebuild_from_wal", group_id="g")
    assert call("knowledge_status")["wal_groups"]["g"]["hydration_status"] == "hydrated"


def test_f9_status_reads_a_fixed_number_of_statements_whatever_the_number_of_groups(
    call: Call, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 9, F9: status was two queries per group (2.3 s at 4,000 groups)."""

    def statements_for_status() -> int:
        seen: list[str] = []
        workspace.reader().set_trace_callback(seen.append)
        try:
            status = call("knowledge_status")
        finally:
            workspace.reader().set_trace_callback(None)
        assert set(status["wal_groups"]) == set(workspace.log.groups())
        return len(seen)

    def no_head_per_group(group_id: str) -> int:
        raise AssertionError(f"status asked the WAL for the head of {group_id!r} alone")

    call("knowledge_add_episode", name="e", episode_body="x", group_id="g0")
    monkeypatch.setattr(workspace.log, "head", no_head_per_group)
    few = statements_for_status()
    monkeypatch.undo()
    for index in range(1, 60):
        call("knowledge_add_episode", name="e", episode_body="x", group_id=f"g{index}")
    monkeypatch.setattr(workspace.log, "head", no_head_per_group)
    assert statements_for_status() == few
    status = call("knowledge_status")
    assert status["wal_groups"]["g7"] == {
        "applied_seq": 1,
        "max_seq": 1,
        "hydration_status": "hydrated",
        "pinned_to": None,
    }
