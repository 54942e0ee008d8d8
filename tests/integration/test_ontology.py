"""The ontology files (P-018) and knowledge_status's ontology block (P-102; ADR 0042)."""

from __future__ import annotations

import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces import ontology_file
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call
from tests.integration.test_relation_typing import ONTOLOGY, edge, write_ontology


def block(call: Call) -> dict[str, object]:
    found: dict[str, object] = call("knowledge_status")["ontology"]
    return found


def test_p_102_no_ontology_file_reads_absent(call: Call) -> None:
    assert block(call) == {
        "present": False,
        "loaded": False,
        "mode": None,
        "entity_type_count": 0,
        "relation_type_count": 0,
        "drifted": False,
        "drift_summary": None,
    }


def test_p_102_a_loaded_ontology_counts_its_types_and_reports_drift(
    call: Call, workspace: Workspace
) -> None:
    write_ontology(workspace)
    edge(call, "works_for", "Ada works for Acme.", relation_type="WORKS_FOR")
    assert block(call) == {
        "present": True,
        "loaded": True,
        "mode": "workspace",
        "entity_type_count": 1,
        "relation_type_count": 3,
        "drifted": False,
        "drift_summary": None,
    }
    call("knowledge_backfill_relation_types", group_id="g1")  # nothing untyped: no drift
    edge(call, "SAYS", "The notes say so.", target="Notes")
    call("knowledge_backfill_relation_types", group_id="g1")
    call("knowledge_assert_entity", name="Grace", labels=["Admiral"], group_id="g1")
    drifted = block(call)
    assert drifted["drifted"] is True
    assert drifted["drift_summary"] == (
        "1 edge(s) in 1 undeclared type(s) (THE_NOTES_SAY_SO); "
        "1 entity(ies) in 1 undeclared type(s) (Admiral)"
    )
    call("knowledge_canonicalize_relations", group_id="g1", embedding_threshold=1.0)
    assert "edge(s)" not in str(block(call)["drift_summary"])  # UNCLASSIFIED is not drift


def test_p_102_p_018_group_files_and_an_invalid_file_show_in_the_block(
    call: Call, workspace: Workspace
) -> None:
    write_ontology(workspace, "relation_types:\n  - {name: KNOWS, description: d}\n", group="g:1")
    assert ontology_file.group_file(workspace.settings.state_dir, "g:1").name == "g%3A1.yaml"
    assert block(call)["mode"] == "per_group"
    write_ontology(workspace)
    found = block(call)
    assert (found["mode"], found["loaded"], found["relation_type_count"]) == (
        "workspace+per_group",
        True,
        3,  # the default group resolves to the workspace file
    )
    write_ontology(workspace, ONTOLOGY + "colour: blue\n")
    assert block(call)["loaded"] is False


def test_p_018_an_invalid_file_refuses_the_tools_naming_file_entry_and_rule(
    call: Call, workspace: Workspace
) -> None:
    write_ontology(workspace, "relation_types:\n  - {name: HOLDS, description: d, alias: [x]}\n")
    with pytest.raises(DomainError) as refused:
        call("knowledge_canonicalize_relations", group_id="g1")
    assert refused.value.field == "ontology"
    assert refused.value.message == (
        "ontology: .lcg/ontology.yaml: relation_types[0] (HOLDS): unknown key(s) alias;"
        " allowed: aliases, description, keywords, name"
    )
    write_ontology(workspace, "relation_types: [\n")
    with pytest.raises(DomainError, match=r"\.lcg/ontology\.yaml: \(file\): must be YAML"):
        call("knowledge_canonicalize_relations", group_id="g1")
