"""A tool's JSON schema as text people read: each parameter's type and bounds, and the fields
of the objects it takes, one row each (`concepts[].concept_type`), with an example value from
the tool's example call where it has one (lcg describe, the tool pages; issue 26 item 3)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lcg.domain import rules

_BOUNDS = (
    ("minLength", "min length"),
    ("maxLength", "max length"),
    ("minimum", ">="),
    ("maximum", "<="),
    ("minItems", "min items"),
    ("maxItems", "max items"),
)
Spec = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Field:
    """One parameter, or one field of an object a parameter takes, as a row of text."""

    name: str  # `concepts[].content`: the field `content` of each item of `concepts`
    depth: int  # 0 for a parameter, 1 for a field of its object, ...
    type: str
    required: bool
    default: str  # JSON, or "" when there is none
    bounds: str
    description: str
    example: str  # JSON, or "" when the example call does not give this field


def fields(schema: Spec, example: Any = None) -> list[Field]:
    """The schema's parameters and, after each that takes objects, those objects' fields;
    `example`: the tool's example call's parameters, whose values are shown beside them."""
    return _fields(schema, schema.get("$defs", {}), example, prefix="", depth=0)


def _fields(schema: Spec, defs: Spec, example: Any, *, prefix: str, depth: int) -> list[Field]:
    required = set(schema.get("required", []))
    given = example if isinstance(example, dict) else {}
    rows: list[Field] = []
    for name, raw in schema.get("properties", {}).items():
        spec = _resolved(raw, defs)
        value = given.get(name)
        rows.append(
            Field(
                name=f"{prefix}{name}",
                depth=depth,
                type=type_text(spec, defs),
                required=name in required,
                default=json.dumps(spec["default"]) if "default" in spec else "",
                bounds=bounds_text(spec, defs),
                description=str(spec.get("description", "")),
                example="" if value is None else json.dumps(value, ensure_ascii=False),
            )
        )
        inner, many = _object_of(spec, defs)
        if inner is not None:
            rows += _fields(
                inner,
                defs,
                _first(value) if many else value,
                prefix=f"{prefix}{name}{'[].' if many else '.'}",
                depth=depth + 1,
            )
    return rows


def _first(value: Any) -> Any:
    """The first item of an example's list: the one whose fields are shown."""
    return value[0] if isinstance(value, list) and value else None


def _resolved(spec: Spec, defs: Spec) -> Spec:
    """`{"$ref": "#/$defs/X"}` as the definition it names (with the referring description)."""
    ref = spec.get("$ref")
    if not isinstance(ref, str):
        return spec
    named = dict(defs.get(ref.rsplit("/", 1)[-1], {}))
    named.update({key: value for key, value in spec.items() if key != "$ref"})
    named["title"] = ref.rsplit("/", 1)[-1]
    return named


def _object_of(spec: Spec, defs: Spec) -> tuple[Spec | None, bool]:
    """The object schema a parameter takes, and whether it takes a list of them."""
    for option in (_resolved(one, defs) for one in [spec, *spec.get("anyOf", [])]):
        if "properties" in option:
            return option, False
        items = option.get("items")
        if isinstance(items, dict) and "properties" in _resolved(items, defs):
            return _resolved(items, defs), True
    return None, False


def type_text(spec: Spec, defs: Spec | None = None) -> str:
    """`string`, `integer`, `array of string`, `"text" | "json"`, `array of concept`, ..."""
    defs = defs or {}
    spec = _resolved(spec, defs)
    if "anyOf" in spec:
        return " or ".join(type_text(option, defs) for option in spec["anyOf"])
    if "enum" in spec:
        return " | ".join(json.dumps(value) for value in spec["enum"])
    kind = str(spec.get("type", "any"))
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {type_text(spec['items'], defs)}"
    if "properties" in spec:  # a named definition reads as its name: ConceptParams, concept
        title = str(spec.get("title", ""))
        return title.removesuffix("Params").lower() if title.endswith("Params") else "object"
    return kind


def bounds_text(spec: Spec, defs: Spec | None = None) -> str:
    """The limits a value must keep (lengths, ranges, item counts, a pattern as the rule it
    reads as), the items' own included; "" when there are none."""
    defs = defs or {}
    parts = [f"{word} {spec[key]}" for key, word in _BOUNDS if key in spec]
    for option in spec.get("anyOf", []):
        parts.extend(part for part in [bounds_text(option, defs)] if part)
    if "pattern" in spec:  # the domain's words for it where it has them
        parts.append(rules.PATTERN_RULES.get(spec["pattern"], f"pattern {spec['pattern']}"))
    items = spec.get("items")
    if isinstance(items, dict) and "$ref" not in items and bounds_text(items, defs):
        parts.append(f"each item: {bounds_text(items, defs)}")
    return "; ".join(parts)
