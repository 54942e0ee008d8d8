"""Issue 10: parameters that used to leak: unknown keys, attributes nested past any use.

A key a tool does not define is refused, naming it; nothing is written.

With the seed's clear-on-omit contract (K-AST-009/010), ignoring a misspelt `summery` made
the call succeed and wipe the stored summary. `_`-prefixed keys still ride along (P-006).
"""

from __future__ import annotations

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call


def test_a_misspelt_key_is_refused_with_a_suggestion_and_the_summary_survives(
    call: Call, workspace: Workspace
) -> None:
    call("knowledge_assert_entity", name="Ada", summary="wrote programs", group_id="g")
    head = workspace.log.head("g")
    with pytest.raises(InvalidParams) as error:
        call("knowledge_assert_entity", name="Ada", summery="fixed", group_id="g")
    assert error.value.field == "summery"
    assert "is not a parameter of this tool" in str(error.value)
    assert "did you mean 'summary'?" in str(error.value)
    assert workspace.log.head("g") == head
    nodes = call("knowledge_get_nodes_by_group", group_ids=["g"])["nodes"]
    assert [n["summary"] for n in nodes] == ["wrote programs"]


def test_underscore_keys_ride_along_and_tools_without_parameters_refuse_others(
    call: Call,
) -> None:
    metadata = {"_progress_token": "t1", "_meta": {"x": 1}}
    assert call("knowledge_status", **metadata)["connected"] is True
    with pytest.raises(InvalidParams) as error:
        call("knowledge_status", verbose=True)
    assert error.value.field == "verbose"
    assert "it takes: none" in str(error.value)


def test_issue_10_attributes_nested_990_deep_are_refused_naming_the_field(
    call: Call, workspace: Workspace
) -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(990):
        child: dict[str, object] = {}
        node["k"] = child
        node = child
    with pytest.raises(InvalidParams) as error:
        call("knowledge_assert_entity", name="Ada", attributes=deep, group_id="g")
    assert error.value.field == "attributes"
    assert workspace.log.groups() == []
