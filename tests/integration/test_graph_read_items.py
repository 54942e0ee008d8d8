"""The graph reads' parameters and result shapes (P-115, P-117, P-118; A-08, A-19, A-22)."""

from __future__ import annotations

import json

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call, make_call


@pytest.fixture
def ada_knows(call: Call) -> dict[str, str]:
    """Ada -KNEW-> Bob and Ada -KNEW-> Cy in group g, mentioned by one episode."""
    ids = {
        name: call("knowledge_assert_entity", name=name, group_id="g", attributes={"k": name})[
            "entity_uuid"
        ]
        for name in ("Ada", "Bob", "Cy")
    }
    for other in ("Bob", "Cy"):
        call(
            "knowledge_assert_relationship",
            source_name="Ada",
            predicate="KNEW",
            target_name=other,
            group_id="g",
        )
    return ids


def test_p_115_by_group_reads_answer_nodes_or_edges_and_count(
    call: Call, ada_knows: dict[str, str]
) -> None:
    nodes = call("knowledge_get_nodes_by_group", group_ids=["g"])
    assert set(nodes) == {"nodes", "count"}
    assert nodes["count"] == len(nodes["nodes"]) == 3
    assert {node["uuid"] for node in nodes["nodes"]} == set(ada_knows.values())
    edges = call("knowledge_get_edges_by_group", group_ids=["g"])
    assert set(edges) == {"edges", "count"}
    assert edges["count"] == len(edges["edges"]) == 2


def test_p_117_list_entities_carries_episode_provenance_and_limits(
    call: Call, workspace: Workspace
) -> None:
    ada = call("knowledge_assert_entity", name="Ada")["entity_uuid"]
    episode = call(
        "knowledge_add_episode", name="c1", episode_body="Ada", source_description="notes.md:c1"
    )["episode_uuid"]
    # mentions are written by extraction; link them directly, as test_group_ids does
    workspace.runner.conn.execute(
        "INSERT INTO mentions VALUES (?, ?, ?)", (episode, ada, "liminis")
    )
    call("knowledge_assert_entity", name="Bob")
    listed = call("knowledge_list_entities")
    assert set(listed) == {"nodes", "count"}
    [row] = [node for node in listed["nodes"] if node["uuid"] == ada]
    assert row["episode_uuids"] == [episode]
    assert row["source_descriptions"] == ["notes.md:c1"]
    assert call("knowledge_list_entities", num_results=1)["count"] == 1
    for bad in (0, -1):
        with pytest.raises(InvalidParams) as refused:
            call("knowledge_list_entities", num_results=bad)
        assert refused.value.field == "num_results"
    relationships = call("knowledge_list_relationships")
    assert set(relationships) == {"edges", "count"}


def test_p_117_list_defaults_are_500_entities_and_1000_edges(app: App) -> None:
    call = make_call(app, settle=False)  # no search here: the vector indexes need not keep up
    for index in range(501):
        call("knowledge_assert_entity", name=f"e{index}")
    assert call("knowledge_list_entities")["count"] == 500
    assert call("knowledge_list_entities", num_results=501)["count"] == 501
    for index in range(1, 501):
        for predicate in ("A", "B"):
            call(
                "knowledge_assert_relationship",
                source_name="e0",
                predicate=predicate,
                target_name=f"e{index}",
            )
    call("knowledge_assert_relationship", source_name="e1", predicate="A", target_name="e2")
    assert call("knowledge_list_relationships")["count"] == 1000
    assert call("knowledge_list_relationships", num_results=1001)["count"] == 1001


def test_p_118_neighbors_result_fields_default_limit_and_required_uuid(call: Call) -> None:
    center = call("knowledge_assert_entity", name="hub")["entity_uuid"]
    for index in range(51):
        call("knowledge_assert_entity", name=f"n{index}")
        call(
            "knowledge_assert_relationship",
            source_name="hub",
            predicate="R",
            target_name=f"n{index}",
        )
    result = call("knowledge_get_entity_neighbors", entity_uuid=center)
    assert set(result) == {"center_uuid", "nodes", "edges", "count", "node_count", "edge_count"}
    assert result["center_uuid"] == center
    assert result["edge_count"] == len(result["edges"]) == 50  # num_results defaults to 50
    assert result["node_count"] == len(result["nodes"])
    assert result["count"] == result["node_count"] + result["edge_count"]
    small = call("knowledge_get_entity_neighbors", entity_uuid=center, num_results=2)
    assert small["edge_count"] == 2
    with pytest.raises(InvalidParams) as refused:
        call("knowledge_get_entity_neighbors")
    assert refused.value.field == "entity_uuid"


def test_a_08_reads_outside_the_group_ids_rule(call: Call, ada_knows: dict[str, str]) -> None:
    """get_episodes takes one group_id (default liminis); edges_by_uuids, status,
    rebuild_status and validate_corrections take no group filter at all."""
    fields = {name: set(op.params.model_fields) for name, op in operations.BY_NAME.items()}
    assert operations.BY_NAME["knowledge_get_episodes"].params.model_fields["group_id"].default == (
        "liminis"
    )
    assert "group_ids" not in fields["knowledge_get_episodes"]
    for name in (
        "knowledge_get_edges_by_uuids",
        "knowledge_status",
        "knowledge_rebuild_status",
        "knowledge_validate_corrections",
    ):
        assert not fields[name] & {"group_id", "group_ids"}, name
    call("knowledge_add_episode", name="here", episode_body="x")
    call("knowledge_add_episode", name="there", episode_body="y", group_id="g")
    assert [e["name"] for e in call("knowledge_get_episodes")["episodes"]] == ["here"]
    call("knowledge_assert_entity", name="Ada", group_id="h")
    call("knowledge_assert_entity", name="Dan", group_id="h")
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        predicate="KNEW",
        target_name="Dan",
        group_id="h",
    )
    uuids = [edge["uuid"] for edge in call("knowledge_list_relationships")["edges"]]
    found = call("knowledge_get_edges_by_uuids", uuids=uuids)["edges"]
    assert {edge["group_id"] for edge in found} == {"g", "h"}


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("knowledge_find_relationships", {"query": "Ada KNEW Bob"}),
        ("knowledge_list_relationships", {}),
        ("knowledge_get_edges_by_group", {}),
        ("knowledge_get_edges_by_uuids", {"uuids": []}),
    ],
)
def test_a_22_relationship_reads_answer_edges_never_facts(
    call: Call, ada_knows: dict[str, str], tool: str, params: dict[str, object]
) -> None:
    result = call(tool, **params)
    assert "edges" in result
    assert "facts" not in result


def test_a_19_rows_carry_attributes_as_data_that_never_matches(
    call: Call, ada_knows: dict[str, str]
) -> None:
    [ada] = [n for n in call("knowledge_list_entities")["nodes"] if n["name"] == "Ada"]
    assert json.loads(ada["attributes"]) == {"k": "Ada"}
    call("knowledge_assert_entity", name="Eve", attributes={"secret": "quokka"})
    found = call("knowledge_find_entities", query="quokka")["nodes"]
    assert all("text" not in node["ranks"] for node in found)
    [eve] = [n for n in call("knowledge_find_entities", query="Eve")["nodes"] if n["name"] == "Eve"]
    assert json.loads(eve["attributes"]) == {"secret": "quokka"}
