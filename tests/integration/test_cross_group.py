"""Cross-group pointers (seed 000 §Cross-group pointers, K-XG-001..028, K-STA-007/008, P-131,
P-132): knowledge_add_cross_group_edge and knowledge_rebind_pointers on real workspaces."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.events import EntityCreated
from lcg.domain.extraction import ExtractedEdge, ExtractedEntity, Extraction
from lcg.domain.ids import EntityUuid, GroupId
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.graph import state
from tests.conftest import Call, make_call, make_workspace

REBIND_KEYS = {
    "checked",
    "bound",
    "unbound",
    "ambiguous",
    "invalidated_self_loop",
    "invalidated_duplicate",
    "staleness_skipped",
}


def entity(call: Call, name: str, group: str) -> str:
    uuid: str = call("knowledge_assert_entity", name=name, group_id=group)["entity_uuid"]
    return uuid


def foreign(group: str, name: str) -> dict[str, str]:
    return {"source_group_id": group, "endpoint_name": name}


def add_edge(
    call: Call,
    source: dict[str, str],
    target: dict[str, str],
    group: str = "hub",
    name: str = "CITES",
    fact: str = "the hub cites a person",
) -> dict[str, Any]:
    return call(
        "knowledge_add_cross_group_edge",
        name=name,
        source=source,
        target=target,
        fact=fact,
        group_id=group,
    )


def rebind(call: Call, group: str = "people") -> dict[str, int]:
    result: dict[str, int] = call("knowledge_rebind_pointers", source_group_id=group)
    return result


def visible(call: Call, edge_uuid: str, hub_entity: str) -> dict[str, bool]:
    """Whether the edge shows in each normal read (K-XG-012)."""

    def has(edges: list[dict[str, Any]]) -> bool:
        return any(e["uuid"] == edge_uuid for e in edges)

    return {
        "neighbors": has(call("knowledge_get_entity_neighbors", entity_uuid=hub_entity)["edges"]),
        "find_relationships": has(
            call("knowledge_find_relationships", query="zanzibar manuscript")["edges"]
        ),
        "list_relationships": has(call("knowledge_list_relationships")["edges"]),
        "get_edges_by_group": has(call("knowledge_get_edges_by_group", group_ids=["hub"])["edges"]),
        "get_edges_by_uuids": has(call("knowledge_get_edges_by_uuids", uuids=[edge_uuid])["edges"]),
    }


def pointers(call: Call) -> dict[str, int]:
    counts: dict[str, int] = call("knowledge_status")["cross_group_pointers"]
    return counts


def test_k_xg_001_005_006_008_011_a_foreign_name_binds_case_insensitively(call: Call) -> None:
    paper = entity(call, "Notes on the Engine", "hub")
    ada = entity(call, "Ada Lovelace", "people")
    head = call("knowledge_status")["wal_groups"]["people"]["applied_seq"]
    result = add_edge(call, {"uuid": paper}, foreign("people", "ada lovelace"))
    assert result == {
        "uuid": result["uuid"],
        "name": "CITES",
        "group_id": "hub",
        "source_node_uuid": paper,
        "target_node_uuid": ada,
        "fact": "the hub cites a person",
        "cross_group_pointers": {
            "src": None,
            "dst": {
                "source_group_id": "people",
                "endpoint_name": "ada lovelace",
                "resolved_uuid": ada,
                "bound_at_seq": head,
                "binding_state": "bound",
            },
        },
    }
    [edge] = call("knowledge_get_edges_by_uuids", uuids=[result["uuid"]])["edges"]
    assert edge["cross_group_pointers"] == result["cross_group_pointers"]
    assert (edge["source_node_uuid"], edge["target_node_uuid"]) == (paper, ada)
    neighbours = call("knowledge_get_entity_neighbors", entity_uuid=ada)
    assert [n["uuid"] for n in neighbours["nodes"]] == [paper]


def test_k_xg_002_other_write_paths_never_create_pointers(call: Call) -> None:
    entity(call, "Ada", "hub")
    entity(call, "Babbage", "hub")
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        predicate="KNEW",
        target_name="Babbage",
        group_id="hub",
    )
    call("knowledge_add_episode", name="ep", episode_body="Ada met Babbage.", group_id="hub")
    [edge] = call("knowledge_list_relationships")["edges"]
    assert "cross_group_pointers" not in edge
    assert pointers(call) == {"bound": 0, "unbound": 0, "ambiguous": 0}


def test_k_xg_003_a_uuid_endpoint_records_no_pointer(call: Call) -> None:
    a, b = entity(call, "A", "hub"), entity(call, "B", "hub")
    result = add_edge(call, {"uuid": a}, {"uuid": b})
    assert result["cross_group_pointers"] == {"src": None, "dst": None}
    assert (result["source_node_uuid"], result["target_node_uuid"]) == (a, b)
    assert pointers(call) == {"bound": 0, "unbound": 0, "ambiguous": 0}


def test_k_xg_004_a_uuid_endpoint_of_another_group_is_refused_before_any_write(
    call: Call, workspace: Workspace
) -> None:
    paper = entity(call, "Paper", "hub")
    ada = entity(call, "Ada", "people")
    head = workspace.log.head(GroupId("hub"))
    with pytest.raises(Conflict) as error:
        add_edge(call, {"uuid": paper}, {"uuid": ada})
    assert error.value.field == "target.uuid"
    assert "source_group_id" in str(error.value)
    with pytest.raises(NotFound) as missing:
        add_edge(call, {"uuid": "no-such-entity"}, foreign("people", "Ada"))
    assert missing.value.field == "source.uuid"
    assert workspace.log.head(GroupId("hub")) == head
    assert call("knowledge_get_edges_by_group", group_ids=["hub"])["count"] == 0


def test_p_131_an_endpoint_is_exactly_one_of_the_two_shapes(call: Call) -> None:
    paper = entity(call, "Paper", "hub")
    for bad in (
        {"uuid": paper, "endpoint_name": "Ada"},
        {"source_group_id": "people"},
        {},
    ):
        with pytest.raises(InvalidParams) as error:
            add_edge(call, bad, foreign("people", "Ada"))
        assert error.value.field == "source"
        assert 'exactly {"uuid"}' in str(error.value)
    with pytest.raises(InvalidParams) as extra:
        add_edge(call, {"uuid": paper, "group": "x"}, foreign("people", "Ada"))
    assert extra.value.field == "source.group"


class FixedExtractor:
    """An extractor that always answers the same extraction (the path under test is the
    name resolution after it, not a model)."""

    name = "fixed"
    model = "fixed-1"

    def __init__(self, extraction: Extraction) -> None:
        self.extraction = extraction

    def extract(self, text: str, reference_time: datetime) -> Extraction:
        return self.extraction


def test_k_xg_007_a_name_resolves_to_the_same_entity_as_extraction_does(
    tmp_path: Path, embedder: Embedder
) -> None:
    extraction = Extraction(
        entities=(ExtractedEntity("ADA  lovelace"), ExtractedEntity("Engine")),
        edges=(ExtractedEdge("ADA  lovelace", "Engine", "DESIGNED", "Ada designed it"),),
    )
    settings = Settings(workspace=tmp_path)
    with make_workspace(settings, embedder, extractor=FixedExtractor(extraction)) as workspace:
        call = make_call(App(workspace))
        ada = entity(call, "Ada Lovelace", "people")
        call(
            "knowledge_process_chunk",
            chunk_text="Ada designed the engine.",
            chunk_id="c1",
            source_file="notes.md",
            group_id="people",
        )
        [extracted] = call("knowledge_get_edges_by_group", group_ids=["people"])["edges"]
        pointer = add_edge(call, foreign("people", "ADA  lovelace"), foreign("people", "engine"))
        assert extracted["source_node_uuid"] == ada
        assert pointer["source_node_uuid"] == ada
        assert pointer["target_node_uuid"] == extracted["target_node_uuid"]


def test_k_xg_009_012_an_unbound_edge_is_kept_but_no_read_shows_it(call: Call) -> None:
    paper = entity(call, "Paper", "hub")
    result = add_edge(
        call, {"uuid": paper}, foreign("people", "Ada"), fact="zanzibar manuscript cited"
    )
    assert result["target_node_uuid"] is None
    assert result["cross_group_pointers"]["dst"] == {
        "source_group_id": "people",
        "endpoint_name": "Ada",
        "resolved_uuid": None,
        "bound_at_seq": None,
        "binding_state": "unbound",
    }
    assert visible(call, result["uuid"], paper) == dict.fromkeys(
        (
            "neighbors",
            "find_relationships",
            "list_relationships",
            "get_edges_by_group",
            "get_edges_by_uuids",
        ),
        False,
    )
    assert pointers(call) == {"bound": 0, "unbound": 1, "ambiguous": 0}


def test_k_xg_010_several_matches_are_ambiguous_and_no_winner_is_guessed(
    call: Call, workspace: Workspace
) -> None:
    paper = entity(call, "Paper", "hub")
    twins = [EntityUuid(f"ada-{i}") for i in range(2)]
    workspace.writer.execute(
        lambda ctx: ctx.append(
            GroupId("people"),
            [EntityCreated(workspace.clock(), t, "Ada", ("Entity",), "", "{}") for t in twins],
        )
    )
    result = add_edge(call, {"uuid": paper}, foreign("people", "ada"))
    assert result["target_node_uuid"] is None
    dst = result["cross_group_pointers"]["dst"]
    assert (dst["binding_state"], dst["resolved_uuid"], dst["bound_at_seq"]) == (
        "ambiguous",
        None,
        None,
    )
    assert call("knowledge_get_edges_by_uuids", uuids=[result["uuid"]])["edges"] == []
    assert pointers(call) == {"bound": 0, "unbound": 0, "ambiguous": 1}
    # K-XG-022: an ambiguous pointer is re-resolved on every call, never skipped
    for _ in range(2):
        assert rebind(call)["ambiguous"] == 1
        assert rebind(call)["staleness_skipped"] == 0


def test_k_xg_013_014_k_sta_007_008_rebind_makes_the_edge_visible_and_counts_move(
    call: Call,
) -> None:
    paper = entity(call, "Paper", "hub")
    assert pointers(call) == {"bound": 0, "unbound": 0, "ambiguous": 0}
    result = add_edge(
        call, {"uuid": paper}, foreign("people", "Ada"), fact="zanzibar manuscript cited"
    )
    assert pointers(call) == {"bound": 0, "unbound": 1, "ambiguous": 0}
    assert rebind(call)["unbound"] == 1  # still nothing to bind to
    ada = entity(call, "Ada", "people")
    assert rebind(call) == {
        "checked": 1,
        "bound": 1,
        "unbound": 0,
        "ambiguous": 0,
        "invalidated_self_loop": 0,
        "invalidated_duplicate": 0,
        "staleness_skipped": 0,
    }
    assert pointers(call) == {"bound": 1, "unbound": 0, "ambiguous": 0}
    assert all(visible(call, result["uuid"], paper).values())
    [edge] = call("knowledge_get_edges_by_uuids", uuids=[result["uuid"]])["edges"]
    assert edge["target_node_uuid"] == ada
    assert edge["cross_group_pointers"]["dst"]["resolved_uuid"] == ada


def test_k_xg_015_source_group_id_is_required(call: Call) -> None:
    for params in ({}, {"source_group_id": ""}, {"source_group_id": None}):
        with pytest.raises(InvalidParams) as error:
            call("knowledge_rebind_pointers", **params)
        assert error.value.field == "source_group_id"


def test_k_xg_016_only_pointers_of_the_named_group_are_examined(call: Call) -> None:
    paper = entity(call, "Paper", "hub")
    add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    add_edge(call, {"uuid": paper}, foreign("places", "Paris"))
    entity(call, "Ada", "people")
    entity(call, "Paris", "places")
    assert rebind(call, "people")["checked"] == 1
    assert pointers(call) == {"bound": 1, "unbound": 1, "ambiguous": 0}
    assert rebind(call, "nobody") == dict.fromkeys(REBIND_KEYS, 0)


def test_k_xg_018_020_027_028_a_second_call_is_a_no_op_skipped_by_the_gate(
    call: Call, workspace: Workspace
) -> None:
    paper = entity(call, "Paper", "hub")
    for name in ("Ada", "Babbage", "Mary"):
        add_edge(call, {"uuid": paper}, foreign("people", name))
        entity(call, name, "people")
    first = rebind(call)
    assert set(first) == REBIND_KEYS
    assert all(type(value) is int for value in first.values())
    assert (first["checked"], first["bound"], first["staleness_skipped"]) == (3, 3, 0)
    heads = {g: workspace.log.head(GroupId(g)) for g in ("hub", "people")}
    second = rebind(call)
    assert second == {**dict.fromkeys(REBIND_KEYS, 0), "staleness_skipped": 3}
    assert {g: workspace.log.head(GroupId(g)) for g in ("hub", "people")} == heads
    # P-132's invariant
    for result in (first, second):
        assert result["checked"] == sum(
            result[k]
            for k in (
                "bound",
                "unbound",
                "ambiguous",
                "invalidated_self_loop",
                "invalidated_duplicate",
            )
        )


def test_k_xg_019_the_gate_reads_only_the_source_groups_position(call: Call) -> None:
    """The edge lives in a third group: writes there (or anywhere but the source group) do
    not reopen the gate; a write to the source group does."""
    entity(call, "Ada", "people")
    entity(call, "Babbage", "people")
    add_edge(call, foreign("people", "Ada"), foreign("people", "Babbage"), group="third")
    assert rebind(call)["staleness_skipped"] == 2
    for name in ("X", "Y", "Z"):
        entity(call, name, "third")
        entity(call, name, "elsewhere")
    assert rebind(call)["staleness_skipped"] == 2
    entity(call, "Mary", "people")
    again = rebind(call)
    assert (again["checked"], again["bound"], again["staleness_skipped"]) == (2, 2, 0)
    assert rebind(call)["staleness_skipped"] == 2


def test_k_xg_021_an_unbound_pointer_is_always_re_resolved(call: Call) -> None:
    paper = entity(call, "Paper", "hub")
    add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    for _ in range(3):
        result = rebind(call)
        assert (result["checked"], result["unbound"], result["staleness_skipped"]) == (1, 1, 0)


def test_k_xg_017_rebind_repairs_after_a_rebuild_from_wal_of_the_source_group(
    call: Call,
) -> None:
    paper = entity(call, "Paper", "hub")
    bound = add_edge(call, {"uuid": paper}, foreign("people", "Babbage"))
    entity(call, "Babbage", "people")
    edge = add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    ada = entity(call, "Ada", "people")
    rebuilt = call("knowledge_rebuild_from_wal", group_id="people", force_clear=True)
    assert rebuilt["success"] is True
    result = rebind(call)
    assert (result["checked"], result["bound"]) == (2, 2)
    uuids = [bound["uuid"], edge["uuid"]]
    edges = call("knowledge_get_edges_by_uuids", uuids=uuids)["edges"]
    assert [e["target_node_uuid"] for e in edges][1] == ada


def test_k_xg_023_after_purge_and_restore_to_the_bound_position_broken_pointers_repair(
    call: Call,
) -> None:
    paper = entity(call, "Paper", "hub")
    ada = entity(call, "Ada", "people")
    entity(call, "Babbage", "people")
    kept = add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    position = call("knowledge_status")["wal_groups"]["people"]["applied_seq"]
    assert kept["cross_group_pointers"]["dst"]["bound_at_seq"] == position
    call("knowledge_delete_by_group", group_ids=["people"], confirm=True)
    purged = rebind(call)
    assert (purged["checked"], purged["unbound"]) == (1, 1)  # its entity is gone
    assert call("knowledge_get_edges_by_uuids", uuids=[kept["uuid"]])["edges"] == []
    # restore the source group to the very position the pointer was first bound at
    call("knowledge_rebuild_from_wal", group_id="people", to_seq=position, force_clear=True)
    assert call("knowledge_status")["wal_groups"]["people"]["applied_seq"] == position
    repaired = rebind(call)
    assert (repaired["checked"], repaired["bound"], repaired["staleness_skipped"]) == (1, 1, 0)
    [edge] = call("knowledge_get_edges_by_uuids", uuids=[kept["uuid"]])["edges"]
    assert edge["target_node_uuid"] == ada


def test_k_xg_024_026_a_binding_that_makes_a_self_loop_invalidates_the_edge(
    call: Call,
) -> None:
    loop = add_edge(call, foreign("people", "Ada"), foreign("people", "ADA"))
    entity(call, "Ada", "people")
    result = rebind(call)
    assert result == {
        **dict.fromkeys(REBIND_KEYS, 0),
        "checked": 2,
        "invalidated_self_loop": 2,
    }
    [edge] = call("knowledge_get_edges_by_uuids", uuids=[loop["uuid"]])["edges"]
    assert edge["invalid_at"] is not None  # readable by uuid, as any invalidated edge
    assert call("knowledge_list_relationships")["edges"] == []
    assert pointers(call) == {"bound": 0, "unbound": 0, "ambiguous": 0}
    assert rebind(call) == dict.fromkeys(REBIND_KEYS, 0)  # an invalidated edge is not rebound


def test_k_xg_025_026_a_binding_that_duplicates_an_active_edge_invalidates_it(
    call: Call,
) -> None:
    """The kept edge is the older active one, as knowledge_merge_entities keeps it."""
    babbage = entity(call, "Babbage", "people")
    late = add_edge(call, {"uuid": babbage}, foreign("people", "Ada"), group="people", name="KNEW")
    entity(call, "Ada", "people")
    asserted = call(
        "knowledge_assert_relationship",
        source_name="Babbage",
        predicate="KNEW",
        target_name="Ada",
        group_id="people",
    )["edge_uuid"]
    result = rebind(call)
    assert (result["checked"], result["invalidated_duplicate"], result["bound"]) == (1, 1, 0)
    live = call("knowledge_get_edges_by_group", group_ids=["people"])["edges"]
    assert [e["uuid"] for e in live] == [asserted]
    [edge] = call("knowledge_get_edges_by_uuids", uuids=[late["uuid"]])["edges"]
    assert edge["invalid_at"] is not None


def test_k_xg_024_026_an_added_edge_that_binds_as_a_self_loop_is_refused(
    call: Call, workspace: Workspace
) -> None:
    """The rebind's rule on the add path: an edge whose ends bind to one entity now is not
    written (a rebind would invalidate it), naming the field and the rule."""
    ada = entity(call, "Ada", "people")
    heads = {g: workspace.log.head(GroupId(g)) for g in ("hub", "people")}
    with pytest.raises(Conflict) as twice:
        add_edge(call, foreign("people", "Ada"), foreign("people", "ADA"))
    assert twice.value.field == "target"
    assert "self-loop" in str(twice.value)
    assert ada in str(twice.value)
    with pytest.raises(Conflict) as by_uuid:
        add_edge(call, {"uuid": ada}, foreign("people", "ada"), group="people")
    assert by_uuid.value.field == "target"
    assert {g: workspace.log.head(GroupId(g)) for g in heads} == heads
    assert call("knowledge_list_relationships")["edges"] == []
    assert pointers(call) == {"bound": 0, "unbound": 0, "ambiguous": 0}


def test_k_xg_025_026_an_added_edge_that_binds_as_a_duplicate_is_refused(
    call: Call, workspace: Workspace
) -> None:
    """An edge whose bound ends and name repeat an active edge of its group is not written;
    the refusal names the edge it would duplicate (the one a rebind would keep)."""
    babbage, ada = entity(call, "Babbage", "people"), entity(call, "Ada", "people")
    asserted = call(
        "knowledge_assert_relationship",
        source_name="Babbage",
        predicate="KNEW",
        target_name="Ada",
        group_id="people",
    )["edge_uuid"]
    paper = entity(call, "Paper", "hub")
    cites = add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    heads = {g: workspace.log.head(GroupId(g)) for g in ("hub", "people")}
    with pytest.raises(Conflict) as in_people:
        add_edge(call, {"uuid": babbage}, foreign("people", "ada"), "people", "KNEW")
    with pytest.raises(Conflict) as in_hub:
        add_edge(call, {"uuid": paper}, foreign("people", "ADA"))
    for error, kept in ((in_people, asserted), (in_hub, cites["uuid"])):
        assert error.value.field == "target"
        assert "duplicate" in str(error.value)
        assert kept in str(error.value)
    assert {g: workspace.log.head(GroupId(g)) for g in heads} == heads
    other = add_edge(call, {"uuid": paper}, foreign("people", "Ada"), name="QUOTES")
    assert other["target_node_uuid"] == ada  # another name is another edge


def test_rebound_edges_survive_a_rebuild_of_the_edge_group_without_re_resolving(
    call: Call,
) -> None:
    """Bindings are in the events: a replay of the edge's group reproduces them even when the
    source group changed since (ADR 0041)."""
    paper = entity(call, "Paper", "hub")
    edge = add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    ada = entity(call, "Ada", "people")
    rebind(call)
    before = call("knowledge_get_edges_by_uuids", uuids=[edge["uuid"]])["edges"]
    entity(call, "Ada Twin", "people")  # a source-group change no replay may look at
    call("knowledge_rebuild_from_wal", group_id="hub", force_clear=True)
    after = call("knowledge_get_edges_by_uuids", uuids=[edge["uuid"]])["edges"]
    assert after == before
    assert after[0]["target_node_uuid"] == ada
    assert pointers(call) == {"bound": 1, "unbound": 0, "ambiguous": 0}


def test_p_122_a_purged_source_group_leaves_foreign_pointers_unbound(
    call: Call, workspace: Workspace
) -> None:
    paper = entity(call, "Paper", "hub")
    entity(call, "Ada", "people")
    edge = add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    add_edge(call, {"uuid": paper}, foreign("places", "Paris"))  # another source: untouched
    head = workspace.log.head(GroupId("hub"))
    preview = call("knowledge_delete_by_group", group_ids=["people"], dry_run=True)
    assert preview["unbound_impacts"] == [{"group_id": "hub", "pointer_count": 1}]
    assert workspace.log.head(GroupId("hub")) == head
    assert pointers(call) == {"bound": 1, "unbound": 1, "ambiguous": 0}
    result = call("knowledge_delete_by_group", group_ids=["people"], confirm=True)
    assert result["unbound_impacts"] == [{"group_id": "hub", "pointer_count": 1}]
    assert workspace.log.head(GroupId("hub")) == head + 1  # recorded in the edge's stream
    assert pointers(call) == {"bound": 0, "unbound": 2, "ambiguous": 0}
    assert call("knowledge_get_edges_by_uuids", uuids=[edge["uuid"]])["edges"] == []
    again = call("knowledge_delete_by_group", group_ids=["people"], confirm=True)
    assert again["unbound_impacts"] == []


def test_adr_0041_cypher_mirrors_a_cross_group_edge_once_bound(call: Call) -> None:
    """The Cypher projection (ADR 0039) copies the edge row: absent while unbound, a RELATES
    rel between the two groups' entities once bound, gone again when a purge unbinds it."""
    query = (
        "MATCH (a:Entity)-[r:RELATES]->(b:Entity) WHERE r.name = 'CITES'"
        " RETURN a.group_id AS a, b.name AS b, r.group_id AS g"
    )
    paper = entity(call, "Paper", "hub")
    add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    assert call("knowledge_query_cypher", query=query)["rows"] == []
    entity(call, "Ada", "people")
    rebind(call)
    assert call("knowledge_query_cypher", query=query)["rows"] == [
        {"a": "hub", "b": "Ada", "g": "hub"}
    ]
    call("knowledge_delete_by_group", group_ids=["people"], confirm=True)
    assert call("knowledge_query_cypher", query=query)["rows"] == []


def test_name_and_edge_lookups_read_their_indexes_not_the_whole_group(
    workspace: Workspace,
) -> None:
    """Without statistics SQLite answered `ORDER BY seq` through the (group_id, seq) index and
    scanned the group for every name (and every edge) lookup: a 10k-pointer rebind took 49 s.
    The statements a rebind runs per pointer must search by name key and by the edge's ends."""
    conn = workspace.reader()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        state.live_entities_named(conn, "g", "Ada")
        state.active_edge(conn, "g", "a", "KNEW", "b")
    finally:
        conn.set_trace_callback(None)
    indexes = (
        "idx_entities_group_id_name_key",
        "idx_relationships_group_id_source_uuid_name_target_uuid",
    )
    assert len(statements) == len(indexes)
    for statement, index in zip(statements, indexes, strict=True):
        plan = " ".join(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
        assert f"USING INDEX {index} " in plan, plan


def test_adr_0041_cypher_keeps_a_bound_edge_when_the_source_group_is_copied_again(
    call: Call,
) -> None:
    """A rebuild of the source group copies its entities into the Cypher mirror again (a
    DETACH DELETE first): the other groups' bound edges to them are copied back too."""
    query = "MATCH (a:Entity)-[r:RELATES]->(b:Entity) WHERE r.name = 'CITES' RETURN b.name AS b"
    paper = entity(call, "Paper", "hub")
    entity(call, "Ada", "people")
    add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    assert call("knowledge_query_cypher", query=query)["rows"] == [{"b": "Ada"}]
    call("knowledge_rebuild_from_wal", group_id="people", force_clear=True)
    assert call("knowledge_query_cypher", query=query)["rows"] == [{"b": "Ada"}]
