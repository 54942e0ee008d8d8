"""A full rebuild of a group that is alone empties whole tables (ADR 0017): same state as before.

The reset of the only group drops and re-creates the FTS5 tables and truncates the others;
with another group present it deletes the group's rows. Both must leave exactly the state
that incremental writes built, and never touch another group.
"""

from __future__ import annotations

from lcg.domain.ids import GroupId
from lcg.interfaces.workspace import Workspace
from lcg.projections.graph import schema
from lcg.projections.reset import only_group
from tests.conftest import Call
from tests.helpers.projection_state import assert_scorer_agrees_with_fts5, dump


def write_group(call: Call, group: str) -> None:
    call("knowledge_assert_entity", name="Ada", summary="wrote programs", group_id=group)
    call("knowledge_assert_entity", name="Bob", summary="a sailor", group_id=group)
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        predicate="KNEW",
        target_name="Bob",
        group_id=group,
    )
    for index, source in enumerate(("text", "message", "message")):
        call(
            "knowledge_add_episode",
            name=f"note {index}",
            episode_body=f"about Ada and Bob, turn {index}",
            source=source,
            group_id=group,
        )


def search(call: Call, group: str) -> list[object]:
    found = call("knowledge_find_entities", query="sailor programs", group_ids=[group])
    passages = call("knowledge_search_passages", query="Ada turn", group_ids=[group], min_score=0)
    return [
        [(n["uuid"], n["score"]) for n in found["nodes"]],
        [(p["episode_uuid"], p["part"], p["score"]) for p in passages["passages"]],
    ]


def rebuild(workspace: Workspace, group: str) -> None:
    workspace.runner.rebuild(GroupId(group))
    workspace.writer.notify_rebuilt([GroupId(group)])


def test_rebuilding_the_only_group_empties_whole_tables_and_equals_incremental_state(
    call: Call, workspace: Workspace
) -> None:
    write_group(call, "solo")
    conn = workspace.runner.conn
    assert only_group(conn, schema.GRAPH_TABLES, "solo")
    before, found = dump(conn), search(call, "solo")
    rebuild(workspace, "solo")
    assert dump(conn) == before
    assert search(call, "solo") == found
    assert_scorer_agrees_with_fts5(workspace, "solo")
    call("knowledge_add_episode", name="after", episode_body="Ada again", group_id="solo")
    assert call("knowledge_get_episodes", group_id="solo")["count"] == 4


def test_rebuilding_one_of_two_groups_leaves_the_other_untouched(
    call: Call, workspace: Workspace
) -> None:
    write_group(call, "a")
    write_group(call, "b")
    conn = workspace.runner.conn
    assert not only_group(conn, schema.GRAPH_TABLES, "a")
    before, found_a, found_b = dump(conn), search(call, "a"), search(call, "b")
    rebuild(workspace, "a")
    assert dump(conn) == before
    assert (search(call, "a"), search(call, "b")) == (found_a, found_b)
    assert_scorer_agrees_with_fts5(workspace, "b")
