"""The tool catalogue `lcg tools` and `lcg describe` read is the operation table's (ADR 0053)."""

from __future__ import annotations

from lcg.domain import rules
from lcg.interfaces import operations, tool_catalogue


def test_the_catalogue_file_is_what_the_operation_table_renders() -> None:
    written = tool_catalogue.CATALOGUE_FILE.read_text(encoding="utf-8")
    assert written == tool_catalogue.render(), (
        "regenerate it: python -m lcg.interfaces.tool_catalogue"
    )


def test_the_catalogue_names_every_operation_in_the_tables_order_with_its_scope_and_schema() -> (
    None
):
    tools = tool_catalogue.tools()
    assert [tool.name for tool in tools] == list(operations.BY_NAME)
    advertised = [tool.name for tool in tools if tool.advertised]
    assert advertised == [op.name for op in operations.OPERATIONS]
    for tool in tools:
        operation = operations.BY_NAME[tool.name]
        assert tool.scope == operation.scope.value
        assert tool.description == operation.description
        assert tool.read_only == operation.read_only
        assert tool.input_schema == operation.input_schema()


def test_the_committed_catalogue_publishes_the_domains_text_limits() -> None:
    schemas = {tool.name: tool.input_schema for tool in tool_catalogue.tools()}
    fact = schemas["knowledge_assert_relationship"]["properties"]["fact"]
    source = schemas["knowledge_add_episode"]["properties"]["source_description"]
    assert (fact["maxLength"], source["maxLength"]) == (16_384, 1_024)
    assert (rules.MAX_FACT, rules.MAX_SOURCE_DESCRIPTION) == (16_384, 1_024)
