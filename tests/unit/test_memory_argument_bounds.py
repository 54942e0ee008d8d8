"""The lambo tools' published bounds are the bounds they enforce, in the seed's words (issue 24
item 13): a string over its cap names the field, the cap and the size given (M-ARG-021,
M-ERR-014, M-LIM-001), agent_id the cap and the length given (M-ARG-053, M-ERR-018), a value
out of range the bound (`top_k must be in 1..=100`, M-REC-007, M-ERR-013), for every bound the
schema publishes (M-ARG-010); no parameter model's class name reaches a user."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from lcg.domain.errors import DomainError
from lcg.interfaces import operations
from lcg.interfaces.operations import Scope
from lcg.interfaces.params import parse

MEMORY_TOOLS = sorted(name for name, op in operations.BY_NAME.items() if op.scope is Scope.MEMORY)
BASE: dict[str, dict[str, Any]] = {  # the smallest arguments each tool's parser accepts
    "lambo_recall": {"agent_id": "a", "query": "q"},
    "lambo_derive": {"agent_id": "a", "concepts": [{"content": "c", "concept_type": "logic"}]},
    "lambo_record_action": {"agent_id": "a", "action": "ran it"},
    "lambo_reserve": {"agent_id": "a", "node_id": "n"},
    "lambo_stats": {"agent_id": "a"},
    "lambo_inspect": {"agent_id": "a", "focus": "f"},
    "lambo_stale": {"agent_id": "a"},
    "lambo_saints": {"agent_id": "a"},
    "lambo_derive_image": {"agent_id": "a", "caption": "c", "concept_type": "entity"},
}
ITEMS: dict[str, dict[str, Any]] = {  # a valid element of each list of objects
    "concepts": {"content": "c", "concept_type": "logic"},
    "parent_of": {"parent": "p", "child": "q"},
}


def _bounded(
    schema: dict[str, Any], defs: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """(path, property) of every string and integer property, nested ones included; a list
    step is "[]"."""
    for name, published in schema.get("properties", {}).items():
        here = (*path, name)
        spec = defs[published["$ref"].rsplit("/", 1)[-1]] if "$ref" in published else published
        options = [o for o in spec.get("anyOf", []) if o != {"type": "null"}]
        spec = options[0] if len(options) == 1 else spec  # an optional one nested in $defs
        if spec.get("type") == "array":
            items = spec.get("items", {})
            if "$ref" in items:
                nested = defs[items["$ref"].rsplit("/", 1)[-1]]
                yield from _bounded(nested, defs, (*here, "[]"))
            elif items.get("type") in ("string", "integer"):
                yield (*here, "[]"), items
        elif spec.get("type") in ("string", "integer"):
            yield here, spec


def _put(arguments: dict[str, Any], path: tuple[str, ...], value: object) -> None:
    key, *rest = path
    if not rest:
        arguments[key] = value
    elif rest == ["[]"]:
        arguments[key] = [value]
    else:
        item = copy.deepcopy(arguments.get(key, [ITEMS[key]])[0])
        _put(item, tuple(rest[1:]), value)
        arguments[key] = [item]


def _field(path: tuple[str, ...]) -> str:
    return ".".join(path).replace(".[]", "[0]")


def _with(tool: str, path: tuple[str, ...], value: object) -> dict[str, Any]:
    arguments = copy.deepcopy(BASE[tool])
    _put(arguments, path, value)
    return arguments


def _cases(kind: str) -> list[tuple[str, tuple[str, ...], dict[str, Any]]]:
    cases = []
    for tool in MEMORY_TOOLS:
        schema = operations.BY_NAME[tool].input_schema()
        for path, spec in _bounded(schema, schema.get("$defs", {})):
            if spec["type"] == kind and ("maxLength" in spec or "maximum" in spec):
                cases.append((tool, path, spec))
    return cases


STRINGS = _cases("string")
INTEGERS = _cases("integer")


def test_the_walk_reaches_every_bounded_argument() -> None:
    assert len(STRINGS) >= 25
    assert {_field(path) for _, path, _ in STRINGS} >= {
        "agent_id",
        "query",
        "focus",
        "node_id",
        "receipt",
        "event_time",
        "scope",
        "repo_scope",
        "action",
        "concepts[0].content",
        "concepts[0].depends_on[0]",
        "parent_of[0].child",
    }
    assert {_field(path) for _, path, _ in INTEGERS} == {
        "top_k",
        "max_tokens",
        "traversal_depth",
        "depth",
        "ttl_seconds",
        "wait_ms",
        "offset",
    }


@pytest.mark.parametrize(
    ("tool", "path", "spec"), STRINGS, ids=[f"{t}:{_field(p)}" for t, p, _ in STRINGS]
)
def test_m_arg_010_m_arg_021_m_err_014_m_lim_001_m_arg_053_m_err_018_a_string_at_its_published_cap_passes_and_one_over_names_field_cap_and_size(  # noqa: E501
    tool: str, path: tuple[str, ...], spec: dict[str, Any]
) -> None:
    cap = int(spec["maxLength"])
    model = operations.BY_NAME[tool].params
    parse(model, _with(tool, path, "x" * cap))
    with pytest.raises(DomainError) as refused:
        parse(model, _with(tool, path, "x" * (cap + 1)))
    field = _field(path)
    assert refused.value.field == field
    if field == "agent_id":  # characters, not bytes (seed: "at most 256 characters")
        assert refused.value.message == (
            "agent_id is too long: the cap is 256 characters and 257 were given"
        )
    else:
        unit = " (16 KB)" if cap == 16_384 else ""
        assert refused.value.message == (
            f"{field} is too long: the cap is {cap:,} bytes{unit} and {cap + 1:,} bytes were given"
        )


@pytest.mark.parametrize(
    ("tool", "path", "spec"), INTEGERS, ids=[f"{t}:{_field(p)}" for t, p, _ in INTEGERS]
)
def test_m_arg_010_m_rec_007_m_err_013_an_integer_at_its_published_bounds_passes_and_beyond_gives_the_bound(  # noqa: E501
    tool: str, path: tuple[str, ...], spec: dict[str, Any]
) -> None:
    low, high = int(spec["minimum"]), int(spec["maximum"])
    model = operations.BY_NAME[tool].params
    for inside in (low, high):
        parse(model, _with(tool, path, inside))
    field = _field(path)
    for outside in (low - 1, high + 1):
        with pytest.raises(DomainError) as refused:
            parse(model, _with(tool, path, outside))
        assert refused.value.field == field
        assert refused.value.message == f"{field} must be in {low}..={high}"


def test_m_rec_007_top_k_0_and_101_are_refused_in_the_seeds_words() -> None:
    model = operations.BY_NAME["lambo_recall"].params
    for top_k in (0, 101):
        with pytest.raises(DomainError, match=r"^top_k must be in 1\.\.=100$"):
            parse(model, {"agent_id": "a", "query": "q", "top_k": top_k})


def test_m_arg_021_a_non_ascii_string_is_measured_in_bytes() -> None:
    model = operations.BY_NAME["lambo_recall"].params
    parse(model, {"agent_id": "a", "query": "é" * 8_192})
    with pytest.raises(DomainError) as refused:
        parse(model, {"agent_id": "a", "query": "é" * 8_193})
    assert refused.value.message == (
        "query is too long: the cap is 16,384 bytes (16 KB) and 16,386 bytes were given"
    )


def test_m_arg_054_agent_id_is_measured_in_characters() -> None:
    model = operations.BY_NAME["lambo_stats"].params
    parse(model, {"agent_id": "é" * 256})
    with pytest.raises(DomainError, match="the cap is 256 characters and 257 were given"):
        parse(model, {"agent_id": "é" * 257})


def _models() -> set[str]:
    names: set[str] = set()
    stack: list[type[BaseModel]] = [BaseModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            names.add(sub.__name__)
            stack.append(sub)
    return names


def _objects() -> list[tuple[str, str, bool]]:
    """(tool, property, is a list) of every property holding an object or a list of them."""
    found = []
    for name, operation in sorted(operations.BY_NAME.items()):
        schema = operation.input_schema()
        for prop, spec in schema.get("properties", {}).items():
            items = spec.get("items", {}) if spec.get("type") == "array" else {}
            if "$ref" in items:
                found.append((name, prop, True))
            elif "$ref" in spec or (spec.get("type") == "object" and "properties" in spec):
                found.append((name, prop, False))
    return found


OBJECTS = _objects()


def test_the_object_arguments_are_found() -> None:
    assert {(tool, prop) for tool, prop, _ in OBJECTS} >= {
        ("lambo_derive", "concepts"),
        ("lambo_derive", "parent_of"),
        ("knowledge_add_cross_group_edge", "source"),
    }


@pytest.mark.parametrize(("tool", "prop", "is_list"), OBJECTS)
def test_no_parameter_model_name_reaches_a_user(tool: str, prop: str, is_list: bool) -> None:
    """A string where an object belongs is refused naming the field and the rule, in words;
    the parameter model's class (`ConceptParams`) is an implementation detail."""
    classes = _models()
    arguments = copy.deepcopy(BASE.get(tool, {"name": "n", "source": "x", "target": "x"}))
    arguments[prop] = ["x"] if is_list else "x"
    with pytest.raises(DomainError) as refused:
        parse(operations.BY_NAME[tool].params, arguments)
    words = set(re.findall(r"\w+", refused.value.message))
    assert not words & classes, refused.value.message


def test_a_string_for_a_concept_is_refused_as_not_an_object() -> None:
    with pytest.raises(DomainError) as refused:
        parse(operations.BY_NAME["lambo_derive"].params, {"agent_id": "a", "concepts": ["x"]})
    assert refused.value.field == "concepts[0]"
    assert refused.value.message == "concepts[0]: must be an object"


@pytest.mark.parametrize(
    ("agent", "found"),
    [("a\tb", "U+0009"), ("a\nb", "U+000A"), ("a\u2028b", "U+2028")],
)
def test_m_arg_059_an_agent_id_on_more_than_one_line_names_the_codepoint(
    agent: str, found: str
) -> None:
    with pytest.raises(DomainError) as refused:
        parse(operations.BY_NAME["lambo_stats"].params, {"agent_id": agent})
    assert refused.value.field == "agent_id"
    assert refused.value.message.startswith(
        "agent_id must be one line with no tabs, control or line-separator characters; found "
        + found
    )
    assert agent not in refused.value.message
