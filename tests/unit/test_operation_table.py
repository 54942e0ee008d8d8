"""The operation table keeps the "Adding a tool" checklist (docs/architecture.md) true.

Every row names a typed tool function of a per-feature module whose docstring describes it,
a scope, and a params model; every pattern a params model uses is defined in the domain,
once; every tool is listed in the README. K-MCP-006 (one registry).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.domain import deciders, rules
from lcg.domain.errors import InvalidParams
from lcg.domain.ids import DEFAULT_GROUP
from lcg.interfaces.app import App
from lcg.interfaces.operations import (
    BY_NAME,
    OPERATIONS,
    OPERATOR_OPERATIONS,
    AnyOperation,
    Scope,
)
from lcg.interfaces.params import Params, parse
from lcg.interfaces.tools import episodes, graph

ROOT = Path(__file__).resolve().parents[2]
IDS = [operation.name for operation in OPERATIONS]


@pytest.mark.parametrize("operation", OPERATIONS, ids=IDS)
def test_every_row_names_a_typed_tool_function_of_a_feature_module(
    operation: AnyOperation,
) -> None:
    assert operation.name.startswith(("knowledge_", "lambo_"))
    assert isinstance(operation.scope, Scope)
    assert issubclass(operation.params, Params)
    module = operation.run.__module__
    assert module.startswith("lcg.interfaces.tools."), f"{operation.name} lives in {module}"
    hints = typing.get_type_hints(operation.run)
    first, second = list(inspect.signature(operation.run).parameters)
    assert hints[first] is App
    assert hints[second] is operation.params, "the row's params model is the function's"
    assert "return" in hints


@pytest.mark.parametrize("operation", OPERATIONS, ids=IDS)
def test_every_row_is_described_by_its_function_docstring(operation: AnyOperation) -> None:
    assert operation.description
    assert operation.description == " ".join((operation.run.__doc__ or "").split())
    assert len(operation.description) <= 400, "keep tool descriptions to a few sentences"


def test_names_are_unique_and_every_tool_is_listed_in_the_readme() -> None:
    assert len(BY_NAME) == len(OPERATIONS) + len(OPERATOR_OPERATIONS)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [op.name for op in OPERATIONS if f"`{op.name}`" not in readme]
    assert missing == []


def _patterns(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _patterns(item)


@pytest.mark.parametrize("operation", OPERATIONS, ids=IDS)
def test_params_use_only_patterns_defined_in_the_domain(operation: AnyOperation) -> None:
    schema = operation.input_schema()
    for pattern in _patterns(schema):
        assert pattern in rules.PATTERN_RULES, f"{operation.name}: pattern {pattern!r}"
    group_id = schema.get("properties", {}).get("group_id")
    if group_id is not None:
        assert rules.GROUP_ID_PATTERN in set(_patterns(group_id))


def test_a_pattern_mismatch_reads_as_the_domain_rule() -> None:
    with pytest.raises(InvalidParams) as error:
        parse(graph.AssertEntityParams, {"name": "Ada", "group_id": "bad group"})
    assert (error.value.field, error.value.rule) == ("group_id", rules.GROUP_ID_RULE)
    assert str(error.value) == (
        "group_id: must start with a letter or digit and contain only letters, digits and _.:@-"
    )
    with pytest.raises(InvalidParams) as error:
        parse(episodes.AddEpisodeParams, {"name": "  ", "episode_body": "b"})
    assert (error.value.field, error.value.rule) == ("name", rules.NOT_BLANK_RULE)
    assert str(error.value) == "name: is required and must not be blank"


def test_the_domain_rule_and_the_params_agree_on_group_ids() -> None:
    for value in ("liminis", "a.b:c@d-e_f", "9", "x" * rules.MAX_GROUP_ID):
        assert rules.group_id(value) == value
        parse(graph.AssertEntityParams, {"name": "n", "group_id": value})
    for value in ("", "-lead", "has space", "x" * (rules.MAX_GROUP_ID + 1), "ü"):
        with pytest.raises(InvalidParams):
            rules.group_id(value)
        with pytest.raises(InvalidParams) as error:
            parse(graph.AssertEntityParams, {"name": "n", "group_id": value})
        assert error.value.field == "group_id"


def test_episode_sources_are_one_literal() -> None:
    schema = episodes.AddEpisodeParams.model_json_schema()["properties"]["source"]
    assert tuple(schema["enum"]) == rules.EPISODE_SOURCES
    with pytest.raises(InvalidParams) as error:
        parse(episodes.AddEpisodeParams, {"name": "n", "episode_body": "b", "source": "xml"})
    assert error.value.field == "source"


@pytest.mark.parametrize("operation", OPERATIONS, ids=IDS)
def test_issue_10_every_parameter_is_published_with_a_plain_type(operation: AnyOperation) -> None:
    """Forms (the MCP Inspector) cannot fill "array or null": optional parameters are
    published with their plain type, and attributes as an object."""
    for name, spec in operation.input_schema().get("properties", {}).items():
        assert "anyOf" not in spec, f"{operation.name}.{name}"
        assert spec.get("type") in {"string", "integer", "number", "boolean", "array", "object"}
        assert spec.get("default", "") is not None, f"{operation.name}.{name}: default null"


def test_issue_10_null_is_still_accepted_where_the_schema_shows_a_plain_type() -> None:
    parsed = parse(graph.AssertEntityParams, {"name": "Ada", "labels": None, "summary": None})
    assert parsed.labels is None
    schema = graph.AssertEntityParams.model_json_schema()["properties"]
    assert schema["labels"]["type"] == "array"
    assert schema["attributes"]["type"] == "object"


@pytest.mark.parametrize("operation", OPERATIONS, ids=IDS)
def test_issue_10_every_parameter_has_a_description(operation: AnyOperation) -> None:
    """`lcg describe`, the MCP Inspector and the tool pages show each parameter's meaning."""
    for name, spec in operation.input_schema().get("properties", {}).items():
        assert str(spec.get("description", "")).strip(), f"{operation.name}.{name}"


def test_issue_10_descriptions_name_only_tools_that_exist_today() -> None:
    """Advice must name what works today: a tool a description names is in the table, or is
    said to be not in this version yet (`(not in this version ...)` right after its name)."""
    texts = [operation.description for operation in OPERATIONS]
    texts += [
        str(spec.get("description", ""))
        for operation in OPERATIONS
        for spec in operation.input_schema().get("properties", {}).values()
    ]
    texts.append(deciders.CROSS_GROUP_HINT)
    for text in texts:
        for match in re.finditer(r"\b(?:knowledge|lambo)_\w+", text):
            later = text[match.end() :].lstrip(" ,")
            assert match.group() in BY_NAME or later.startswith("(not in this version"), text


def test_every_published_schema_resolves_its_references() -> None:
    """An inlined endpoint object must not take `$defs` with it while a list of nested
    objects (lambo_derive's concepts) still points into them: a `$ref` with nothing to
    resolve it is a schema no client can fill."""
    import json
    import re

    from lcg.interfaces.operations import OPERATIONS

    checked: set[tuple[str, str]] = set()
    for operation in OPERATIONS:
        schema = operation.params.model_json_schema()
        text = json.dumps(schema)
        for ref in re.findall(r'"\$ref": "([^"]*)"', text):
            assert ref.startswith("#/$defs/"), (operation.name, ref)
            assert ref.removeprefix("#/$defs/") in schema.get("$defs", {}), (operation.name, ref)
            checked.add((operation.name, ref.removeprefix("#/$defs/")))
    # Not vacuous: lambo_derive's lists of concepts and of parent_of pairs are references.
    assert {("lambo_derive", "ConceptParams"), ("lambo_derive", "PairParams")} <= checked


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_attributes_may_nest_32_deep_and_no_deeper() -> None:
    assert rules.attributes(_nested(32)).count("{") == 32
    with pytest.raises(InvalidParams) as error:
        rules.attributes(_nested(33))
    assert str(error.value) == "attributes: must nest objects and arrays at most 32 deep"


def test_the_default_group_is_liminis() -> None:
    # P-107, P-114: group_id ("liminis")
    assert DEFAULT_GROUP == "liminis"
    assert parse(graph.AssertEntityParams, {"name": "Ada"}).group_id == "liminis"
    assert parse(episodes.GetEpisodesParams, {}).group_id == "liminis"
