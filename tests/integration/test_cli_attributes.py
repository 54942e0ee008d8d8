"""`--attributes` on the CLI must be a JSON object: anything else is refused, naming the flag.

The seed's contract (K-AST-011) stores a non-object `attributes` as `{}` when a tool call
sends one; a person typing `--attributes '[1,2]'` meant something, so the CLI refuses it
(issue 10) instead of silently storing `{}`, and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lcg.interfaces.cli_app import cli

NOT_OBJECTS = ["[1,2]", '"x"', "3", "true", "null", "{bad", ""]
ENV = {"COLUMNS": "200"}


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env=ENV)
    return result.exit_code, result.output


@pytest.mark.parametrize("value", NOT_OBJECTS)
def test_k_ast_011_cli_refuses_non_object_attributes_before_opening_a_workspace(
    tmp_path: Path, value: str
) -> None:
    """Exit 2, one line naming `--attributes` and the rule; no workspace is created."""
    for command in (
        ["assert-entity", "Ada"],
        ["assert-relationship", "Ada", "KNOWS", "Bob"],
    ):
        code, output = _invoke(*command, "--attributes", value, "--workspace", str(tmp_path))
        assert code == 2, output
        assert output.startswith("error: --attributes: must be a JSON object"), output
        assert output.count("\n") == 1, output
        assert not (tmp_path / ".lcg").exists()


@pytest.mark.parametrize("value", NOT_OBJECTS)
def test_k_ast_011_cli_refusal_leaves_stored_attributes_and_the_wal_unchanged(
    tmp_path: Path, value: str
) -> None:
    workspace = ["--workspace", str(tmp_path)]
    for name in ("Ada", "Bob"):
        code, output = _invoke("assert-entity", name, "--attributes", '{"k": 1}', *workspace)
        assert code == 0, output
    code, output = _invoke(
        "assert-relationship", "Ada", "KNOWS", "Bob", "--attributes", '{"k": 1}', *workspace
    )
    assert code == 0, output
    before = _invoke("call", "knowledge_get_edges_by_group", "{}", *workspace)[1]
    entities_before = _invoke("list-entities", "--json", *workspace)[1]

    assert _invoke("assert-entity", "Ada", "--attributes", value, *workspace)[0] == 2
    assert (
        _invoke("assert-relationship", "Ada", "KNOWS", "Bob", "--attributes", value, *workspace)[0]
        == 2
    )

    assert _invoke("call", "knowledge_get_edges_by_group", "{}", *workspace)[1] == before
    entities = json.loads(_invoke("list-entities", "--json", *workspace)[1])
    assert entities == json.loads(entities_before)
    assert [node["attributes"] for node in entities["nodes"]] == [{"k": 1}, {"k": 1}]
    log = json.loads(_invoke("log", "--group", "liminis", "--json", *workspace)[1])
    assert log["max_seq"] == 3


def test_k_ast_011_cli_accepts_an_object_and_the_tool_path_keeps_the_seed_contract(
    tmp_path: Path,
) -> None:
    """An object is stored as given; `lcg call` sends the params as a tool call does, so a
    non-object there follows K-AST-011 (stored as {}), as over MCP and the socket."""
    workspace = ["--workspace", str(tmp_path)]
    code, output = _invoke("assert-entity", "Ada", "--attributes", '{"role": "lead"}', *workspace)
    assert code == 0, output
    code, output = _invoke(
        "call", "knowledge_assert_entity", '{"name": "Bob", "attributes": [1, 2]}', *workspace
    )
    assert code == 0, output
    nodes = json.loads(_invoke("list-entities", "--json", *workspace)[1])["nodes"]
    assert {node["name"]: node["attributes"] for node in nodes} == {
        "Ada": {"role": "lead"},
        "Bob": {},
    }


def test_p_110_k_ast_016_a_tool_row_keeps_attributes_as_json_text_the_clis_json_the_object(
    tmp_path: Path,
) -> None:
    """Issue 26 item 6, ADR 0092: a tool's entity and edge rows carry `attributes` as JSON
    text (P-110), and `lcg call` prints the tool's result as it is; `lcg list-entities --json`
    and `lcg search --what entities|facts --json` give the object that went in."""
    workspace = ["--workspace", str(tmp_path)]
    written = {"role": "lead", "since": 2024, "tags": ["a", "b"], "nested": {"k": None}}
    for name in ("Ada", "Bob"):
        code, output = _invoke(
            "assert-entity", name, "--attributes", json.dumps(written), *workspace
        )
        assert code == 0, output
    code, output = _invoke(
        "assert-relationship", "Ada", "KNOWS", "Bob", "--attributes", '{"pages": 65}', *workspace
    )
    assert code == 0, output

    wire = json.loads(_invoke("call", "knowledge_list_entities", "{}", *workspace)[1])
    text = json.dumps(written, separators=(",", ":"))
    assert [node["attributes"] for node in wire["nodes"]] == [text, text]
    edges = json.loads(_invoke("call", "knowledge_get_edges_by_group", "{}", *workspace)[1])
    assert [edge["attributes"] for edge in edges["edges"]] == ['{"pages":65}']

    listed = json.loads(_invoke("list-entities", "--json", *workspace)[1])
    assert [node["attributes"] for node in listed["nodes"]] == [written, written]
    assert [{k: v for k, v in n.items() if k != "attributes"} for n in listed["nodes"]] == [
        {k: v for k, v in n.items() if k != "attributes"} for n in wire["nodes"]
    ]
    found = json.loads(_invoke("search", "Ada", "--what", "entities", "--json", *workspace)[1])
    assert [node["attributes"] for node in found["nodes"]][:1] == [written]
    facts = json.loads(
        _invoke("search", "Ada knows Bob", "--what", "facts", "--weak", "--json", *workspace)[1]
    )
    assert [edge["attributes"] for edge in facts["edges"]] == [{"pages": 65}]
