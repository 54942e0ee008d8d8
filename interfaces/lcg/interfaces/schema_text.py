"""A parameter's JSON schema as short text, its type and its bounds (lcg describe, tool pages)."""

from __future__ import annotations

import json
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


def type_text(spec: dict[str, Any]) -> str:
    """`string`, `integer`, `array of string`, `"text" | "json"`, ..."""
    if "anyOf" in spec:
        return " or ".join(type_text(option) for option in spec["anyOf"])
    if "enum" in spec:
        return " | ".join(json.dumps(value) for value in spec["enum"])
    kind = str(spec.get("type", "any"))
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {type_text(spec['items'])}"
    return kind


def bounds_text(spec: dict[str, Any]) -> str:
    """The limits a value must keep (lengths, ranges, item counts, a pattern as the rule it
    reads as), the items' own included; "" when there are none."""
    parts = [f"{word} {spec[key]}" for key, word in _BOUNDS if key in spec]
    for option in spec.get("anyOf", []):
        parts.extend(part for part in [bounds_text(option)] if part)
    if "pattern" in spec:  # the domain's words for it where it has them
        parts.append(rules.PATTERN_RULES.get(spec["pattern"], f"pattern {spec['pattern']}"))
    items = spec.get("items")
    if isinstance(items, dict) and bounds_text(items):
        parts.append(f"each item: {bounds_text(items)}")
    return "; ".join(parts)
