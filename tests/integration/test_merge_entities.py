"""knowledge_merge_entities (P-124, K-INV-038): tombstones, edge rewrites, collapsed edges,
foreign groups, dry runs, refusals, search and rebuilds."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.domain.errors import Conflict, DomainError, InvalidParams, NotFound
from lcg.domain.events import EntityCreated, RelationshipCreated
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call
from tests.helpers.projection_state import assert_scorer_agrees_with_fts5, dump


def entity(call: Call, name: str, group: str = "liminis", summary: str = "") -> str:
    uuid: str = call("knowledge_assert_entity", name=name, group_id=group, summary=summary)[
        "entity_uuid"
    ]
    return uuid


def edge(call: Call, source: str, predicate: str, target: str, group: str = "liminis") -> str:
    uuid: str = call(
        "knowledge_assert_relationship",
        source_name=source,
        predicate=predicate,
        target_name=target,
        group_id=group,
    )["edge_uuid"]
    return uuid


def edges_by_uuid(call: Call, *uuids: str) -> dict[str, dict[str, Any]]:
    return {e["uuid"]: e for e in call("knowledge_get_edges_by_uuids", uuids=list(uuids))["edges"]}


def live_names(call: Call, group: str = "liminis") -> list[str]:
    return [n["name"] for n in call("knowledge_list_entities", group_ids=[group])["nodes"]]


def append_raw(workspace: Workspace, group: str, *events: Any) -> None:
    """Events no tool of this version writes (a foreign group's edge, a second entity of the
    same name), appended through the writer as a handler would."""
    workspace.writer.execute(lambda ctx: ctx.append(GroupId(group), events))


def test_p_124_aliases_become_tombstones_and_their_edges_move_to_the_canonical(
    call: Call,
) -> None:
    ada = entity(call, "Ada Lovelace")
    countess = entity(call, "Countess of Lovelace")
    entity(call, "Babbage")
    knew = edge(call, "Countess of Lovelace", "KNEW", "Babbage")
    praised = edge(call, "Babbage", "PRAISED", "Countess of Lovelace")
    result = call("knowledge_merge_entities", canonical_name="Ada Lovelace", alias_uuids=[countess])
    assert result == {
        "success": True,
        "canonical_uuid": ada,
        "merged_count": 1,
        "skipped": [],
        "edges_rewritten": 2,
        "edges_deduplicated": 0,
        "foreign_edges_skipped": 0,
        "errors": [],
    }
    rows = edges_by_uuid(call, knew, praised)
    assert rows[knew]["source_node_uuid"] == ada
    assert rows[praised]["target_node_uuid"] == ada
    assert all(row["invalid_at"] is None for row in rows.values())
    assert live_names(call) == ["Ada Lovelace", "Babbage"]
    # get by uuid: the tombstone's neighbourhood is empty and says where it went
    tombstone = call("knowledge_get_entity_neighbors", entity_uuid=countess)
    assert (tombstone["merged_into"], tombstone["count"]) == (ada, 0)
    around = call("knowledge_get_entity_neighbors", entity_uuid=ada)
    assert "merged_into" not in around
    assert [n["name"] for n in around["nodes"]] == ["Babbage"]
    assert call("knowledge_status")["entity_count"] == 2


def test_p_124_self_loops_and_duplicate_directed_edges_are_invalidated(call: Call) -> None:
    entity(call, "Ada")
    entity(call, "Countess")
    entity(call, "Engine")
    kept = edge(call, "Ada", "WROTE_ON", "Engine")
    duplicate = edge(call, "Countess", "WROTE_ON", "Engine")
    loop = edge(call, "Countess", "IS", "Ada")
    reverse = edge(call, "Engine", "WROTE_ON", "Countess")  # other direction: not a duplicate
    result = call("knowledge_merge_entities", canonical_name="Ada", alias_names=["Countess"])
    assert (result["edges_rewritten"], result["edges_deduplicated"]) == (1, 2)
    rows = edges_by_uuid(call, kept, duplicate, loop, reverse)
    assert rows[kept]["invalid_at"] is None
    assert rows[reverse]["invalid_at"] is None
    assert rows[duplicate]["invalid_at"] is not None
    assert rows[loop]["invalid_at"] is not None
    assert rows[loop]["source_node_uuid"] != rows[loop]["target_node_uuid"]  # kept as stated
    active = {e["uuid"] for e in call("knowledge_list_relationships")["edges"]}
    assert active == {kept, reverse}


def test_p_017_an_invalidated_edge_carries_its_time_and_only_default_reads_skip_it(
    call: Call, workspace: Workspace
) -> None:
    """P-017's invalidation half (its graph model half, an intermediate RelatesToNode_, is
    not lcg's: edges are rows, ADR 0039): invalidating sets `invalid_at` to the time of the
    invalidating write; the default reads skip the edge (the assert's identity lookup does
    too: K-AST-030); a read by uuid still returns it."""
    entity(call, "Ada")
    entity(call, "Countess")
    engine = entity(call, "Engine")
    edge(call, "Ada", "WROTE_ON", "Engine")
    duplicate = edge(call, "Countess", "WROTE_ON", "Engine")
    call("knowledge_merge_entities", canonical_name="Ada", alias_names=["Countess"])
    [merged] = [r for page in workspace.log.read(GroupId("liminis")) for r in page][-1:]
    stale = edges_by_uuid(call, duplicate)[duplicate]
    assert stale["invalid_at"] == merged.event.occurred_at.isoformat()
    reads = (
        call("knowledge_list_relationships")["edges"],
        call("knowledge_get_edges_by_group", group_ids=["liminis"])["edges"],
        call("knowledge_get_entity_neighbors", entity_uuid=engine)["edges"],
    )
    assert all(duplicate not in {e["uuid"] for e in read} for read in reads)


def test_p_124_two_aliases_with_the_same_edge_keep_the_older_one(call: Call) -> None:
    entity(call, "Ada")
    entity(call, "A. Lovelace")
    entity(call, "Countess")
    entity(call, "Engine")
    first = edge(call, "A. Lovelace", "BUILT", "Engine")
    second = edge(call, "Countess", "BUILT", "Engine")
    between = edge(call, "A. Lovelace", "KNEW", "Countess")  # both ends merge: a self-loop
    result = call(
        "knowledge_merge_entities", canonical_name="Ada", alias_names=["Countess", "A. Lovelace"]
    )
    assert (result["merged_count"], result["edges_rewritten"]) == (2, 1)
    assert result["edges_deduplicated"] == 2
    rows = edges_by_uuid(call, first, second, between)
    assert rows[first]["invalid_at"] is None
    assert rows[second]["invalid_at"] is not None
    assert rows[between]["invalid_at"] is not None


def test_p_124_a_foreign_groups_edges_are_never_rewritten(call: Call, workspace: Workspace) -> None:
    ada = entity(call, "Ada", "g")
    alias = entity(call, "Countess", "g")
    there = entity(call, "Analyst", "other")
    foreign = RelationshipCreated(
        workspace.clock(),
        EdgeUuid("foreign-edge"),
        EntityUuid(there),
        EntityUuid(alias),
        "STUDIED",
        "Analyst studied the Countess",
        None,
        "{}",
        None,
    )
    append_raw(workspace, "other", foreign)
    result = call("knowledge_merge_entities", canonical_uuid=ada, alias_uuids=[alias], group_id="g")
    assert (result["merged_count"], result["foreign_edges_skipped"]) == (1, 1)
    [row] = call("knowledge_get_edges_by_uuids", uuids=["foreign-edge"])["edges"]
    assert (row["target_node_uuid"], row["invalid_at"]) == (alias, None)


def test_p_124_dry_run_returns_the_plan_and_appends_nothing(
    call: Call, workspace: Workspace
) -> None:
    entity(call, "Ada")
    entity(call, "Countess")
    entity(call, "Engine")
    edge(call, "Ada", "WROTE_ON", "Engine")
    edge(call, "Countess", "WROTE_ON", "Engine")
    edge(call, "Countess", "MET", "Engine")
    head = workspace.log.head("liminis")
    before = dump(workspace.reader())
    result = call(
        "knowledge_merge_entities", canonical_name="Ada", alias_names=["Countess"], dry_run=True
    )
    assert workspace.log.head("liminis") == head
    assert dump(workspace.reader()) == before
    assert (result["merged_count"], result["edges_rewritten"], result["edges_deduplicated"]) == (
        0,
        0,
        0,
    )
    [alias] = result["plan"]["aliases"]
    assert (alias["name"], alias["active_edges"], alias["duplicate_edges"]) == ("Countess", 2, 1)
    assert result["plan"]["total_edges_rewritten"] == 1
    assert result["plan"]["total_edges_collapsed"] == 1
    assert result["plan"]["total_foreign_edges_skipped"] == 0


def test_p_124_merge_all_by_name_folds_every_entity_of_the_canonicals_name(
    call: Call, workspace: Workspace
) -> None:
    ada = entity(call, "Ada")
    twins = [EntityUuid(f"twin-{index}") for index in range(2)]
    append_raw(
        workspace,
        "liminis",
        *(EntityCreated(workspace.clock(), t, "ADA ", ("Entity",), "", "{}") for t in twins),
    )
    assert len(live_names(call)) == 3
    result = call("knowledge_merge_entities", canonical_uuid=ada, merge_all_by_name=True)
    assert (result["canonical_uuid"], result["merged_count"]) == (ada, 2)
    assert live_names(call) == ["Ada"]
    again = call("knowledge_merge_entities", canonical_uuid=ada, merge_all_by_name=True)
    assert again["merged_count"] == 0


def test_p_124_a_rerun_skips_aliases_already_merged_and_appends_nothing(
    call: Call, workspace: Workspace
) -> None:
    entity(call, "Ada")
    countess = entity(call, "Countess")
    call("knowledge_merge_entities", canonical_name="Ada", alias_uuids=[countess])
    head = workspace.log.head("liminis")
    again = call("knowledge_merge_entities", canonical_name="Ada", alias_uuids=[countess])
    assert again["merged_count"] == 0
    assert again["skipped"] == [
        {
            "uuid": countess,
            "name": "Countess",
            "reason": f"already merged into {again['canonical_uuid']}",
        }
    ]
    assert workspace.log.head("liminis") == head


@pytest.mark.parametrize(
    ("params", "error", "field"),
    [
        ({"canonical_name": "Ada"}, InvalidParams, "alias_uuids"),
        ({"alias_names": ["Countess"]}, InvalidParams, "canonical_uuid"),
        (
            {"canonical_name": "Ada", "canonical_uuid": "x", "alias_names": ["Countess"]},
            InvalidParams,
            "canonical_uuid",
        ),
        ({"canonical_name": "Nobody", "alias_names": ["Countess"]}, NotFound, "canonical_name"),
        ({"canonical_name": "Ada", "alias_uuids": ["no-such-uuid"]}, NotFound, "alias_uuids[0]"),
        ({"canonical_name": "Ada", "alias_names": ["Countess", "Zed"]}, NotFound, "alias_names[1]"),
        ({"canonical_name": "Ada", "alias_names": ["ada"]}, InvalidParams, "alias_names[0]"),
        ({"canonical_name": "Ada", "alias_names": ["Elsewhere"]}, NotFound, "alias_names[0]"),
        (
            {"canonical_name": "Ada", "group_id": "bad group", "alias_names": ["x"]},
            InvalidParams,
            "group_id",
        ),
    ],
)
def test_p_124_bad_input_names_the_field_and_the_rule_and_writes_nothing(
    call: Call,
    workspace: Workspace,
    params: dict[str, Any],
    error: type[DomainError],
    field: str,
) -> None:
    entity(call, "Ada")
    entity(call, "Countess")
    entity(call, "Elsewhere", "other")
    head = workspace.log.head("liminis")
    with pytest.raises(error) as refused:
        call("knowledge_merge_entities", **params)
    assert refused.value.field == field
    assert refused.value.rule
    assert str(refused.value).startswith(f"{field}: ")
    assert workspace.log.head("liminis") == head


def test_p_124_the_canonical_among_the_aliases_is_refused(call: Call) -> None:
    ada = entity(call, "Ada")
    countess = entity(call, "Countess")
    with pytest.raises(InvalidParams) as refused:
        call("knowledge_merge_entities", canonical_uuid=ada, alias_uuids=[countess, ada])
    assert refused.value.field == "alias_uuids[1]"
    assert refused.value.rule == "must not name the canonical entity"


def test_p_124_a_merged_entity_is_neither_a_canonical_nor_asserted_by_uuid(call: Call) -> None:
    entity(call, "Ada")
    countess = entity(call, "Countess")
    entity(call, "Engine")
    call("knowledge_merge_entities", canonical_name="Ada", alias_uuids=[countess])
    with pytest.raises(Conflict) as refused:
        call("knowledge_merge_entities", canonical_uuid=countess, alias_names=["Engine"])
    assert refused.value.field == "canonical_uuid"
    with pytest.raises(Conflict) as refused:
        call("knowledge_assert_entity", name="Countess", entity_uuid=countess)
    assert refused.value.field == "entity_uuid"
    # the name is free again: asserting it makes a new live entity, not the tombstone
    fresh = entity(call, "Countess")
    assert fresh != countess


def test_p_124_search_no_longer_returns_the_merged_alias(call: Call, workspace: Workspace) -> None:
    entity(call, "Ada Lovelace", summary="mathematician")
    alias = entity(call, "Zyxwaltho Lovelace", summary="zyxwaltho countess")
    entity(call, "Engine")
    edge(call, "Zyxwaltho Lovelace", "DESCRIBED", "Engine")
    found = call("knowledge_find_entities", query="zyxwaltho")["nodes"]
    assert alias in [n["uuid"] for n in found]
    call("knowledge_merge_entities", canonical_name="Ada Lovelace", alias_uuids=[alias])
    found = call("knowledge_find_entities", query="zyxwaltho countess")["nodes"]
    assert alias not in [n["uuid"] for n in found]
    [described] = call("knowledge_find_relationships", query="described engine")["edges"]
    assert described["source_node_uuid"] != alias
    assert_scorer_agrees_with_fts5(workspace, "liminis")
    vectors = workspace.reader().execute(
        "SELECT COUNT(*) FROM vector_catalog WHERE owner_uuid=?", (alias,)
    )
    assert vectors.fetchone()[0] == 0


def test_p_124_a_rebuild_of_a_merged_group_equals_the_incremental_state(
    call: Call, workspace: Workspace
) -> None:
    entity(call, "Ada")
    entity(call, "Countess")
    entity(call, "Engine")
    edge(call, "Ada", "WROTE_ON", "Engine")
    edge(call, "Countess", "WROTE_ON", "Engine")
    edge(call, "Countess", "MET", "Ada")
    edge(call, "Engine", "HELPED", "Countess")
    call("knowledge_add_episode", name="n", episode_body="Countess and Ada")
    call("knowledge_merge_entities", canonical_name="Ada", alias_names=["Countess"])
    live = dump(workspace.reader())
    workspace.runner.rebuild(GroupId("liminis"))
    assert dump(workspace.reader()) == live
    head = workspace.log.head("liminis")
    workspace.runner.rebuild(GroupId("liminis"), to_seq=head - 1)  # before the merge
    assert "Countess" in live_names(call)
    workspace.runner.rebuild(GroupId("liminis"))
    workspace.writer.notify_rebuilt([GroupId("liminis")])
    assert dump(workspace.reader()) == live


def test_p_124_a_summary_backfill_after_a_merge_leaves_the_alias_out(
    call: Call, workspace: Workspace
) -> None:
    entity(call, "Ada", summary="mathematician")
    alias = entity(call, "Countess", summary="wrote note G")
    call("knowledge_merge_entities", canonical_name="Ada", alias_uuids=[alias])
    backfilled = call("knowledge_backfill_summary_embeddings", group_id="liminis")
    assert (backfilled["total_entities"], backfilled["backfilled"]) == (1, 1)
    rows = workspace.reader().execute(
        "SELECT COUNT(*) FROM vector_catalog WHERE owner_uuid=?", (alias,)
    )
    assert rows.fetchone()[0] == 0
