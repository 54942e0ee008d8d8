"""delete_episode, delete_by_group and clear_all (K-DEL-014/015, P-120, P-122, P-123)."""

from __future__ import annotations

import pytest

from lcg.domain.errors import InvalidParams
from lcg.domain.ids import GroupId
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call


def fill(call: Call, group: str) -> None:
    call("knowledge_assert_entity", name="Ada", group_id=group)
    call("knowledge_assert_entity", name="Bob", group_id=group)
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        predicate="KNEW",
        target_name="Bob",
        group_id=group,
    )
    call("knowledge_add_episode", name="e", episode_body="Ada knew Bob", group_id=group)


def counts(call: Call, group: str) -> tuple[int, int, int]:
    return (
        call("knowledge_get_nodes_by_group", group_ids=[group])["count"],
        call("knowledge_get_edges_by_group", group_ids=[group])["count"],
        call("knowledge_get_episodes", group_id=group)["count"],
    )


def test_p_120_a_20_delete_episode_removes_it_and_keeps_entities(call: Call) -> None:
    fill(call, "g")
    [episode] = call("knowledge_get_episodes", group_id="g")["episodes"]
    assert call("knowledge_delete_episode", episode_uuid=episode["uuid"]) == {"status": "deleted"}
    assert counts(call, "g") == (2, 1, 0)


def test_p_120_a_20_delete_unknown_episode_is_a_no_op_success(
    call: Call, workspace: Workspace
) -> None:
    assert call("knowledge_delete_episode", episode_uuid="nope") == {"status": "deleted"}
    assert workspace.log.groups() == []


def test_k_del_014_delete_by_group_purges_only_that_group(call: Call, workspace: Workspace) -> None:
    fill(call, "a")
    fill(call, "b")
    head_b = workspace.log.head("b")
    result = call("knowledge_delete_by_group", group_ids=["a"], confirm=True)
    assert result["success"] is True
    assert result["groups"] == [{"group_id": "a", "entities": 2, "episodes": 1, "edges": 1}]
    assert result["applied_seq_reset"] is False
    assert counts(call, "a") == (0, 0, 0)
    assert counts(call, "b") == (2, 1, 1)
    assert workspace.log.head("b") == head_b


def test_p_122_purge_is_recorded_in_the_groups_own_stream(call: Call, workspace: Workspace) -> None:
    fill(call, "a")
    call("knowledge_delete_by_group", group_ids=["a"], confirm=True)
    last = [r for page in workspace.log.read(GroupId("a")) for r in page][-1]
    assert last.event.wire_name == "group_purged"
    wal = call("knowledge_status")["wal_groups"]["a"]
    assert wal["applied_seq"] == wal["max_seq"] == last.seq


def test_p_122_purging_an_empty_group_is_a_no_op(call: Call, workspace: Workspace) -> None:
    result = call("knowledge_delete_by_group", group_ids=["ghost"], confirm=True)
    assert result["groups"] == [{"group_id": "ghost", "entities": 0, "episodes": 0, "edges": 0}]
    assert workspace.log.head("ghost") == 0


def test_p_122_a_23_without_confirm_or_dry_run_nothing_is_purged(call: Call) -> None:
    """A-23: the document's `{group_ids: [group_id]}` is abbreviated; a purge needs
    `confirm: true`, and `dry_run: true` alone counts without purging."""
    fill(call, "a")
    with pytest.raises(InvalidParams) as error:
        call("knowledge_delete_by_group", group_ids=["a"])
    assert error.value.field == "confirm"
    assert counts(call, "a") == (2, 1, 1)
    with pytest.raises(InvalidParams):
        call("knowledge_delete_by_group", group_ids=["a"], confirm=False)
    counted = call("knowledge_delete_by_group", group_ids=["a"], dry_run=True)
    assert counted["groups"][0]["entities"] == 2
    assert counts(call, "a") == (2, 1, 1)


def test_p_122_dry_run_counts_without_purging(call: Call) -> None:
    fill(call, "a")
    result = call("knowledge_delete_by_group", group_ids=["a"], dry_run=True, confirm=True)
    assert result["dry_run"] is True
    assert result["groups"][0]["entities"] == 2
    assert counts(call, "a") == (2, 1, 1)


@pytest.mark.parametrize("group_ids", [[], None, [""]])
def test_delete_by_group_requires_non_empty_group_ids(call: Call, group_ids: object) -> None:
    with pytest.raises(InvalidParams) as error:
        call("knowledge_delete_by_group", group_ids=group_ids, confirm=True)
    assert str(error.value.field).startswith("group_ids")


def test_k_del_015_purge_does_not_delete_or_reopen_the_database_file(
    call: Call, settings: Settings
) -> None:
    fill(call, "a")
    inode = settings.graph_path.stat().st_ino
    call("knowledge_delete_by_group", group_ids=["a"], confirm=True)
    assert settings.graph_path.stat().st_ino == inode


def test_p_123_clear_all_requires_confirm(call: Call) -> None:
    fill(call, "a")
    with pytest.raises(InvalidParams) as error:
        call("knowledge_clear_all", confirm=False)
    assert error.value.field == "confirm"
    assert counts(call, "a") == (2, 1, 1)


def test_p_123_clear_all_erases_graph_and_wal(call: Call, workspace: Workspace) -> None:
    fill(call, "a")
    assert call("knowledge_clear_all", confirm=True)["success"] is True
    assert counts(call, "a") == (0, 0, 0)
    assert workspace.log.groups() == []
    fill(call, "a")  # the workspace is usable again and streams restart at seq 1
    assert workspace.log.head("a") == 4


def test_p_123_clear_all_preserving_wal_can_be_replayed_back(
    call: Call, workspace: Workspace
) -> None:
    fill(call, "a")
    call("knowledge_clear_all", confirm=True, preserve_wal=True)
    assert counts(call, "a") == (0, 0, 0)
    wal = call("knowledge_status")["wal_groups"]["a"]
    assert wal["hydration_status"] == "wal_ahead"
    call("knowledge_rebuild_from_wal", group_id="a")
    assert counts(call, "a") == (2, 1, 1)
