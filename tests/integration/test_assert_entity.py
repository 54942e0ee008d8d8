"""knowledge_assert_entity: upsert identity, strict entity_uuid, clear-on-omit (K-AST-001..012)."""

from __future__ import annotations

import json

import pytest

from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.ids import GroupId
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call


def entity(call: Call, uuid: str) -> dict[str, object]:
    nodes = call("knowledge_list_entities", num_results=10_000)["nodes"]
    return next(node for node in nodes if node["uuid"] == uuid)


def test_k_ast_001_002_accepts_all_fields_and_defaults_group_to_liminis(call: Call) -> None:
    result = call(
        "knowledge_assert_entity",
        name="Ada",
        labels=["Person"],
        summary="s",
        attributes={"born": 1815},
    )
    row = entity(call, result["entity_uuid"])
    assert row["group_id"] == "liminis"
    assert row["labels"] == ["Person"]
    assert row["summary"] == "s"
    assert json.loads(str(row["attributes"])) == {"born": 1815}
    assert result["created"] is True
    assert result["embedding_warning"] is None


def test_k_ast_003_missing_name_fails_and_writes_nothing(call: Call, workspace: Workspace) -> None:
    with pytest.raises(InvalidParams) as error:
        call("knowledge_assert_entity", summary="no name")
    assert error.value.field == "name"
    assert "required" in str(error.value)
    assert workspace.log.head("liminis") == 0


def test_k_ast_004_same_name_twice_is_one_entity_with_one_uuid(call: Call) -> None:
    first = call("knowledge_assert_entity", name="Ada Lovelace")
    second = call("knowledge_assert_entity", name="Ada Lovelace", summary="again")
    assert first["entity_uuid"] == second["entity_uuid"]
    assert second["created"] is False
    assert call("knowledge_list_entities")["count"] == 1


def test_p_108_name_identity_ignores_case_and_whitespace(call: Call) -> None:
    first = call("knowledge_assert_entity", name="Ada  Lovelace")
    second = call("knowledge_assert_entity", name=" ada lovelace ")
    assert first["entity_uuid"] == second["entity_uuid"]


def test_k_ast_005_same_name_in_two_groups_is_two_entities(call: Call) -> None:
    a = call("knowledge_assert_entity", name="Ada", group_id="a")
    b = call("knowledge_assert_entity", name="Ada", group_id="b")
    assert a["entity_uuid"] != b["entity_uuid"]
    assert call("knowledge_list_entities")["count"] == 2


def test_k_ast_006_008_unknown_entity_uuid_fails_and_mints_nothing(
    call: Call, workspace: Workspace
) -> None:
    chosen = "00000000-0000-4000-8000-000000000001"
    with pytest.raises(NotFound) as error:
        call("knowledge_assert_entity", name="Ada", entity_uuid=chosen)
    assert error.value.field == "entity_uuid"
    assert call("knowledge_list_entities")["count"] == 0
    assert workspace.log.head("liminis") == 0


def test_k_ast_007_entity_uuid_of_another_group_fails(call: Call) -> None:
    other = call("knowledge_assert_entity", name="Ada", group_id="other")
    with pytest.raises(NotFound):
        call("knowledge_assert_entity", name="Ada", entity_uuid=other["entity_uuid"])
    assert call("knowledge_list_entities", group_ids=["liminis"])["count"] == 0


def test_k_ast_018_entity_uuid_renames_the_entity(call: Call) -> None:
    created = call("knowledge_assert_entity", name="Ada")
    renamed = call(
        "knowledge_assert_entity", name="Ada Lovelace", entity_uuid=created["entity_uuid"]
    )
    assert renamed["entity_uuid"] == created["entity_uuid"]
    assert renamed["created"] is False
    # The stored name changes; name_embedding keeps the old name and the result says so.
    assert renamed["embedding_stale"] == ["name_embedding"]
    assert "delete and recreate of the entity" in renamed["embedding_warning"]
    assert entity(call, created["entity_uuid"])["name"] == "Ada Lovelace"


def test_k_ast_019_no_tool_refreshes_name_embedding_in_place(
    call: Call, workspace: Workspace
) -> None:
    """The re-embedding tool (summaries) and a full rebuild leave the created name's text."""
    created = call("knowledge_assert_entity", name="Ada", summary="mathematician")
    uuid = created["entity_uuid"]
    call("knowledge_assert_entity", name="Ada Lovelace", summary="poet", entity_uuid=uuid)
    call("knowledge_backfill_summary_embeddings", group_id="liminis")
    call("knowledge_rebuild_from_wal", group_id="liminis", force_clear=True)
    rows = workspace.reader().execute(
        "SELECT embedding, text FROM vector_catalog WHERE owner_uuid=? ORDER BY embedding", (uuid,)
    )
    assert [(row[0], row[1]) for row in rows] == [
        ("name_embedding", "Ada"),
        ("summary_embedding", "poet"),
    ]
    again = call("knowledge_assert_entity", name="Ada Lovelace", summary="poet", entity_uuid=uuid)
    assert again["embedding_stale"] == ["name_embedding"]


def test_p_108_rename_onto_another_entitys_name_is_refused(call: Call) -> None:
    call("knowledge_assert_entity", name="Ada")
    bob = call("knowledge_assert_entity", name="Bob")
    with pytest.raises(Conflict) as error:
        call("knowledge_assert_entity", name="ada", entity_uuid=bob["entity_uuid"])
    assert error.value.field == "name"
    assert entity(call, bob["entity_uuid"])["name"] == "Bob"


def test_k_ast_009_010_update_without_summary_or_attributes_clears_them(call: Call) -> None:
    created = call(
        "knowledge_assert_entity",
        name="Ada",
        summary="mathematician",
        attributes={"born": 1815},
        labels=["Person"],
    )
    call("knowledge_assert_entity", name="Ada")
    row = entity(call, created["entity_uuid"])
    assert row["summary"] == ""
    assert row["attributes"] == "{}"
    assert row["labels"] == ["Entity"]  # labels are replaced too, default ["Entity"]


def test_a_18_labels_default_to_entity_when_omitted_or_empty(call: Call) -> None:
    omitted = call("knowledge_assert_entity", name="Ada")["entity_uuid"]
    empty = call("knowledge_assert_entity", name="Bob", labels=[])["entity_uuid"]
    given = call("knowledge_assert_entity", name="Cy", labels=["Person"])["entity_uuid"]
    assert entity(call, omitted)["labels"] == entity(call, empty)["labels"] == ["Entity"]
    assert entity(call, given)["labels"] == ["Person"]


@pytest.mark.parametrize("attributes", [[1, 2], "text", 3, True, None])
def test_k_ast_011_non_object_attributes_are_stored_as_empty_object(
    call: Call, attributes: object
) -> None:
    created = call("knowledge_assert_entity", name="Ada", attributes=attributes)
    assert entity(call, created["entity_uuid"])["attributes"] == "{}"
    call("knowledge_assert_entity", name="Ada", attributes={"a": 1})
    call("knowledge_assert_entity", name="Ada", attributes=attributes)
    assert entity(call, created["entity_uuid"])["attributes"] == "{}"


def test_k_ast_012_fields_are_overwritten_never_merged(call: Call) -> None:
    created = call(
        "knowledge_assert_entity", name="Ada", labels=["A", "B"], attributes={"x": 1, "y": 2}
    )
    call("knowledge_assert_entity", name="Ada", labels=["C"], attributes={"z": 3})
    row = entity(call, created["entity_uuid"])
    assert row["labels"] == ["C"]
    assert json.loads(str(row["attributes"])) == {"z": 3}


def test_k_ast_016_attributes_read_back_by_uuid_lookup(call: Call) -> None:
    created = call("knowledge_assert_entity", name="Ada", attributes={"k": "v"})
    assert json.loads(str(entity(call, created["entity_uuid"])["attributes"])) == {"k": "v"}


def test_k_ast_020_assert_is_a_direct_write_of_one_event(call: Call, workspace: Workspace) -> None:
    call("knowledge_assert_entity", name="Ada")
    events = [r.event.wire_name for page in workspace.log.read(GroupId("liminis")) for r in page]
    assert events == ["entity_created"]
    call("knowledge_assert_entity", name="Ada", summary="x")
    events = [r.event.wire_name for page in workspace.log.read(GroupId("liminis")) for r in page]
    assert events == ["entity_created", "entity_revised"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 513}, "name"),
        ({"name": 5}, "name"),
        ({"name": "Ada", "group_id": ""}, "group_id"),
        ({"name": "Ada", "group_id": "bad group"}, "group_id"),
        ({"name": "Ada", "labels": "Person"}, "labels"),
        ({"name": "Ada", "summary": "x" * 70_000}, "summary"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(
    call: Call, workspace: Workspace, params: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidParams) as error:
        call("knowledge_assert_entity", **params)
    assert error.value.field == field
    assert str(error.value).startswith(field)
    assert workspace.log.groups() == []


def test_adr_0021_an_identical_re_assertion_does_not_grow_the_wal(
    call: Call, workspace: Workspace
) -> None:
    first = call("knowledge_assert_entity", name="Ada", summary="s", labels=["Person"])
    head = workspace.log.head(GroupId("liminis"))
    again = call("knowledge_assert_entity", name="Ada", summary="s", labels=["Person"])
    assert again["entity_uuid"] == first["entity_uuid"]
    assert again["created"] is False
    assert workspace.log.head(GroupId("liminis")) == head
    call("knowledge_assert_entity", name="Ada", summary="s2", labels=["Person"])
    assert workspace.log.head(GroupId("liminis")) == head + 1
    call("knowledge_assert_entity", name="Bob")
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        predicate="KNEW",
        target_name="Bob",
        valid_at="2025-03-03",
    )
    head = workspace.log.head(GroupId("liminis"))
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        predicate="KNEW",
        target_name="Bob",
        valid_at="2025-03-03T00:00:00Z",
    )
    assert workspace.log.head(GroupId("liminis")) == head


def test_a_01_a_summary_is_embedded_on_create_and_attributes_never_are(
    call: Call, workspace: Workspace
) -> None:
    """The #470 text is current: a non-empty summary gets a summary_embedding when the entity
    is created. An empty one gets none (lcg stores no vector where upstream stores a zero
    vector: neither ever matches); attributes are embedded in no case."""
    ada = call(
        "knowledge_assert_entity", name="Ada", summary="mathematician", attributes={"k": "v"}
    )["entity_uuid"]
    bob = call("knowledge_assert_entity", name="Bob", attributes={"k": "v"})["entity_uuid"]

    def embedded(owner: str) -> list[tuple[str, str]]:
        rows = workspace.reader().execute(
            "SELECT embedding, text FROM vector_catalog WHERE owner_uuid=? ORDER BY embedding",
            (owner,),
        )
        return [(row[0], row[1]) for row in rows]

    assert embedded(ada) == [("name_embedding", "Ada"), ("summary_embedding", "mathematician")]
    assert embedded(bob) == [("name_embedding", "Bob")]
    nodes = call("knowledge_find_entities", query="mathematician")["nodes"]
    assert "summary_vector" in next(n for n in nodes if n["uuid"] == ada)["ranks"]
