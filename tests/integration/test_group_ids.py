"""The omitted-vs-[] group_ids contract of the read tools that exist (K-GID)."""

from __future__ import annotations

import pytest

from lcg.interfaces import operations
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call


@pytest.fixture
def two_groups(call: Call) -> dict[str, str]:
    """Ada -KNEW-> Bob in group a; Ada -KNEW-> Cy in group b."""
    ids: dict[str, str] = {}
    for group, other in (("a", "Bob"), ("b", "Cy")):
        ids[f"ada-{group}"] = call("knowledge_assert_entity", name="Ada", group_id=group)[
            "entity_uuid"
        ]
        ids[other] = call("knowledge_assert_entity", name=other, group_id=group)["entity_uuid"]
        call(
            "knowledge_assert_relationship",
            source_name="Ada",
            predicate="KNEW",
            target_name=other,
            group_id=group,
        )
    return ids


def groups_of(rows: list[dict[str, object]]) -> set[object]:
    return {row["group_id"] for row in rows}


@pytest.mark.parametrize(
    ("tool", "key"),
    [("knowledge_get_nodes_by_group", "nodes"), ("knowledge_get_edges_by_group", "edges")],
)
def test_k_gid_009_010_013_014_exact_tools_all_on_omit_or_null_nothing_on_empty(
    call: Call, two_groups: dict[str, str], tool: str, key: str
) -> None:
    assert groups_of(call(tool)[key]) == {"a", "b"}
    assert groups_of(call(tool, group_ids=None)[key]) == {"a", "b"}
    empty = call(tool, group_ids=[])
    assert empty[key] == []
    assert empty["count"] == 0


@pytest.mark.parametrize(
    ("tool", "key"),
    [("knowledge_list_entities", "nodes"), ("knowledge_list_relationships", "edges")],
)
def test_k_gid_005_006_016_017_list_tools_treat_empty_as_all(
    call: Call, two_groups: dict[str, str], tool: str, key: str
) -> None:
    """With the find tools' test (empty is nothing), K-GID-021: the split on [] is kept."""
    options: list[dict[str, object]] = [{}, {"group_ids": None}, {"group_ids": []}]
    for params in options:
        assert groups_of(call(tool, **params)[key]) == {"a", "b"}


def test_k_gid_007_018_neighbors_treat_omitted_null_and_empty_as_all(
    call: Call, two_groups: dict[str, str]
) -> None:
    # Ada of group a only has edges in a; filtering by b hides them, [] does not.
    center = two_groups["ada-a"]
    options: list[dict[str, object]] = [{}, {"group_ids": None}, {"group_ids": []}]
    for params in options:
        result = call("knowledge_get_entity_neighbors", entity_uuid=center, **params)
        assert [n["name"] for n in result["nodes"]] == ["Bob"]
        assert result["edge_count"] == 1
    filtered = call("knowledge_get_entity_neighbors", entity_uuid=center, group_ids=["b"])
    assert filtered["nodes"] == []
    assert filtered["edges"] == []


@pytest.mark.parametrize(
    ("tool", "key"),
    [
        ("knowledge_get_nodes_by_group", "nodes"),
        ("knowledge_get_edges_by_group", "edges"),
        ("knowledge_list_entities", "nodes"),
        ("knowledge_list_relationships", "edges"),
    ],
)
def test_k_gid_020_listed_groups_restrict_results_exactly(
    call: Call, two_groups: dict[str, str], tool: str, key: str
) -> None:
    assert groups_of(call(tool, group_ids=["b"])[key]) == {"b"}
    assert groups_of(call(tool, group_ids=["a", "nope"])[key]) == {"a"}


def test_p_114_get_episodes_takes_one_group_newest_first(call: Call) -> None:
    for index in range(3):
        call("knowledge_add_episode", name=f"e{index}", episode_body=f"body {index}")
    call("knowledge_add_episode", name="elsewhere", episode_body="x", group_id="other")
    result = call("knowledge_get_episodes", last_n=2)
    assert [e["name"] for e in result["episodes"]] == ["e2", "e1"]
    assert result["count"] == 2
    assert {e["group_id"] for e in call("knowledge_get_episodes", last_n=50)["episodes"]} == {
        "liminis"
    }


def test_p_116_edges_by_uuids_skips_unknown_and_keeps_order(
    call: Call, two_groups: dict[str, str]
) -> None:
    uuids = [edge["uuid"] for edge in call("knowledge_list_relationships")["edges"]]
    result = call("knowledge_get_edges_by_uuids", uuids=[uuids[1], "missing", uuids[0]])
    assert [edge["uuid"] for edge in result["edges"]] == [uuids[1], uuids[0]]


def test_k_gid_008_019_p_119_entities_by_source(call: Call, workspace: Workspace) -> None:
    """No tool of this build writes mentions yet (extraction will): link entities to their
    episodes in the projection directly, as the extraction's events will."""
    for group in ("a", "b"):
        entity = call("knowledge_assert_entity", name="Ada", group_id=group)["entity_uuid"]
        episode = call(
            "knowledge_add_episode",
            name="c1",
            episode_body="Ada",
            group_id=group,
            source_description="notes.md:c1",
        )["episode_uuid"]
        workspace.runner.conn.execute(
            "INSERT INTO mentions VALUES (?, ?, ?)", (episode, entity, group)
        )
    options: list[dict[str, object]] = [{}, {"group_ids": None}, {"group_ids": []}]
    for params in options:
        result = call("knowledge_get_entities_by_source", source="notes.md", **params)
        assert result["source"] == "notes.md"
        assert {node["group_id"] for node in result["nodes"]} == {"a", "b"}
    only_b = call("knowledge_get_entities_by_source", source="notes.md", group_ids=["b"])
    assert [node["group_id"] for node in only_b["nodes"]] == ["b"]
    assert call("knowledge_get_entities_by_source", source="notes")["count"] == 0


OMITTED_IS_ALL = {
    "knowledge_find_entities",
    "knowledge_find_relationships",
    "knowledge_search_passages",
    "knowledge_list_entities",
    "knowledge_list_relationships",
    "knowledge_get_entity_neighbors",
    "knowledge_get_entities_by_source",
    "knowledge_get_nodes_by_group",
    "knowledge_get_edges_by_group",
}


def test_k_gid_001_the_omitted_means_all_rule_covers_exactly_the_nine_read_tools() -> None:
    """Among the read tools of the one catalogue every adapter serves, exactly these nine take
    `group_ids`, each optional with null (all groups) as its default; the rest of this file
    proves what each does with it."""
    takes = {
        name: op.params.model_fields["group_ids"]
        for name, op in operations.BY_NAME.items()
        if op.read_only and "group_ids" in op.params.model_fields
    }
    assert set(takes) == OMITTED_IS_ALL
    for name, field in takes.items():
        assert not field.is_required(), name
        assert field.default is None, name
