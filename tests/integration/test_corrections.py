"""knowledge_validate_corrections and knowledge_apply_corrections (P-125, K-INV-039/040, A-08):
the workspace's knowledge-corrections.yaml, checked without writing, applied all or nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lcg.domain.ids import GroupId
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call
from tests.helpers.projection_state import dump

STORY = """
corrections:
  - id: merge-countess
    action: merge
    canonical: Ada Lovelace
    aliases: [Countess of Lovelace]
  - id: engine-name
    action: rename
    entity: Engine
    name: Analytical Engine
  - id: engine-summary          # names the entity by the name the correction before gave it
    action: set_summary
    entity: Analytical Engine
    summary: Babbage's general-purpose design.
  - id: ada-person
    action: retype
    entity: Ada Lovelace
    labels: [Person, Mathematician]
  - id: drop-met
    action: delete_edge
    edge: {source: Ada Lovelace, predicate: MET, target: Analytical Engine}
"""


def write_file(workspace: Workspace, text: str) -> Path:
    path = workspace.settings.workspace / "knowledge-corrections.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def story(call: Call) -> dict[str, str]:
    ids = {
        name: call("knowledge_assert_entity", name=name)["entity_uuid"]
        for name in ("Ada Lovelace", "Countess of Lovelace", "Engine")
    }
    for source, predicate in (("Countess of Lovelace", "WROTE_ON"), ("Ada Lovelace", "MET")):
        ids[predicate] = call(
            "knowledge_assert_relationship",
            source_name=source,
            predicate=predicate,
            target_name="Engine",
        )["edge_uuid"]
    return ids


def heads(workspace: Workspace) -> dict[str, int]:
    return {group: workspace.log.head(group) for group in workspace.log.groups()}


def test_p_125_without_a_file_there_is_nothing_to_validate_or_apply(call: Call) -> None:
    validated = call("knowledge_validate_corrections")
    assert validated == {
        "valid": True,
        "message": "no knowledge-corrections.yaml in the workspace: nothing to correct",
        "total_corrections": 0,
        "unapplied_corrections": 0,
        "issues": [],
        "warnings": [],
    }
    applied = call("knowledge_apply_corrections")
    assert (applied["success"], applied["applied"], applied["details"]) == (True, 0, [])
    assert "nothing to correct" in applied["message"]


def test_p_125_validate_checks_the_file_against_the_graph_and_writes_nothing(
    call: Call, workspace: Workspace, story: dict[str, str]
) -> None:
    write_file(workspace, STORY)
    before = heads(workspace)
    validated = call("knowledge_validate_corrections")
    assert validated["issues"] == [], validated
    assert validated["valid"] is True
    assert (validated["total_corrections"], validated["unapplied_corrections"]) == (5, 5)
    assert heads(workspace) == before
    names = [n["name"] for n in call("knowledge_list_entities")["nodes"]]
    assert names == ["Ada Lovelace", "Countess of Lovelace", "Engine"]


def test_p_125_issues_name_the_correction_and_the_field(
    call: Call, workspace: Workspace, story: dict[str, str]
) -> None:
    write_file(
        workspace,
        """
        corrections:
          - {id: ok, action: rename, entity: Engine, name: Machine}
          - {id: fly, action: fly}
          - {action: rename, entity: Engine, name: X}
          - {id: ok, action: retype, entity: Engine, labels: [Thing]}
          - {id: extra, action: rename, entity: Engine, name: Y, colour: red}
          - {id: nobody, action: set_summary, entity: Nobody, summary: s}
          - {id: gone, action: delete_edge, edge: {uuid: no-such-edge}}
          - {id: alias, action: merge, canonical: Ada Lovelace,
             aliases: [Countess of Lovelace, Zed]}
          - {id: same, action: rename, entity: Ada Lovelace, name: Ada Lovelace}
        """,
    )
    before = heads(workspace)
    validated = call("knowledge_validate_corrections")
    assert validated["valid"] is False
    found = {(i["correction"], i["field"]) for i in validated["issues"]}
    assert found == {
        ("fly", "action"),
        ("corrections[2]", "id"),
        ("ok", "id"),
        ("extra", "colour"),
        ("nobody", "entity"),
        ("gone", "edge"),
        ("alias", "aliases[1]"),
    }
    assert [(w["correction"], w["field"]) for w in validated["warnings"]] == [("same", "action")]
    assert validated["total_corrections"] == 9
    assert heads(workspace) == before
    applied = call("knowledge_apply_corrections")
    assert (applied["success"], applied["applied"]) == (False, 0)
    assert "fly: action: must be one of merge" in applied["errors"][0]
    assert heads(workspace) == before


def test_p_125_apply_writes_every_correction_in_order(
    call: Call, workspace: Workspace, story: dict[str, str]
) -> None:
    write_file(workspace, STORY)
    result = call("knowledge_apply_corrections")
    assert (result["success"], result["applied"], result["skipped"]) == (True, 5, 0)
    assert "message" not in result
    assert [d["status"] for d in result["details"]] == ["applied"] * 5
    nodes = {n["name"]: n for n in call("knowledge_list_entities")["nodes"]}
    assert set(nodes) == {"Ada Lovelace", "Analytical Engine"}
    assert nodes["Analytical Engine"]["summary"] == "Babbage's general-purpose design."
    assert nodes["Ada Lovelace"]["labels"] == ["Person", "Mathematician"]
    [edge] = call("knowledge_list_relationships")["edges"]
    assert (edge["uuid"], edge["source_node_uuid"]) == (story["WROTE_ON"], story["Ada Lovelace"])
    [met] = call("knowledge_get_edges_by_uuids", uuids=[story["MET"]])["edges"]
    assert met["invalid_at"] is not None


def test_p_125_apply_is_atomic_a_failing_correction_in_the_middle_writes_nothing(
    call: Call, workspace: Workspace, story: dict[str, str]
) -> None:
    call("knowledge_assert_entity", name="Elsewhere", group_id="other")
    write_file(
        workspace,
        """
        corrections:
          - {id: first, action: rename, entity: Engine, name: Analytical Engine}
          - {id: there, action: set_summary, group_id: other, entity: Elsewhere, summary: s}
          - {id: broken, action: set_summary, entity: Engine, summary: the old name is gone}
          - {id: last, action: merge, canonical: Ada Lovelace, aliases: [Countess of Lovelace]}
        """,
    )
    before, rows = heads(workspace), dump(workspace.reader())
    result = call("knowledge_apply_corrections")
    assert (result["success"], result["applied"]) == (False, 0)
    assert result["errors"] == ["broken: entity: no entity 'Engine' in group 'liminis'"]
    statuses = {d["id"]: d["status"] for d in result["details"]}
    assert statuses == {
        "first": "rolled_back",
        "there": "rolled_back",
        "broken": "error",
        "last": "rolled_back",
    }
    assert result["message"] == "1 correction(s) failed: nothing was written"
    assert heads(workspace) == before
    assert dump(workspace.reader()) == rows
    assert call("knowledge_validate_corrections")["unapplied_corrections"] == 4


def test_p_125_applied_corrections_are_recorded_and_skipped_afterwards(
    call: Call, workspace: Workspace, story: dict[str, str]
) -> None:
    path = write_file(workspace, STORY)
    call("knowledge_apply_corrections")
    head = workspace.log.head("liminis")
    again = call("knowledge_apply_corrections")
    assert (again["success"], again["applied"], again["skipped"]) == (True, 0, 5)
    assert workspace.log.head("liminis") == head
    validated = call("knowledge_validate_corrections")
    assert (validated["valid"], validated["unapplied_corrections"]) == (True, 0)
    path.write_text(
        path.read_text() + "  - {id: later, action: set_summary, entity: Ada Lovelace,"
        " summary: Wrote note G.}\n"
    )
    assert call("knowledge_validate_corrections")["unapplied_corrections"] == 1
    assert call("knowledge_apply_corrections")["applied"] == 1


def test_p_125_dry_run_simulates_and_writes_nothing(
    call: Call, workspace: Workspace, story: dict[str, str]
) -> None:
    write_file(workspace, STORY)
    before, rows = heads(workspace), dump(workspace.reader())
    result = call("knowledge_apply_corrections", dry_run=True)
    assert (result["success"], result["applied"]) == (True, 0)
    assert [d["status"] for d in result["details"]] == ["would_apply"] * 5
    assert result["message"] == "dry run: 5 correction(s) would apply; nothing was written"
    assert heads(workspace) == before
    assert dump(workspace.reader()) == rows


def test_p_125_a_file_that_is_not_yaml_is_an_issue_of_the_file(
    call: Call, workspace: Workspace
) -> None:
    write_file(workspace, "corrections: [\n")
    validated = call("knowledge_validate_corrections")
    assert validated["valid"] is False
    [issue] = validated["issues"]
    assert (issue["correction"], issue["field"]) == (None, "knowledge-corrections.yaml")
    write_file(workspace, "- just a list\n")
    [issue] = call("knowledge_validate_corrections")["issues"]
    assert issue["field"] == "corrections"


def test_p_125_a_rebuild_after_corrections_equals_the_incremental_state(
    call: Call, workspace: Workspace, story: dict[str, str]
) -> None:
    write_file(workspace, STORY)
    call("knowledge_apply_corrections")
    live = dump(workspace.reader())
    applied = workspace.reader().execute("SELECT * FROM applied_corrections ORDER BY 2").fetchall()
    workspace.runner.rebuild(GroupId("liminis"))
    workspace.writer.notify_rebuilt([GroupId("liminis")])
    assert dump(workspace.reader()) == live
    again = workspace.reader().execute("SELECT * FROM applied_corrections ORDER BY 2").fetchall()
    assert [tuple(r) for r in again] == [tuple(r) for r in applied]
    assert len(applied) == 5
