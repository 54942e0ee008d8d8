"""knowledge_status fields and hydration states (K-STA-001..006, P-102, P-103)."""

from __future__ import annotations

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
