"""An entity's or an edge's `attributes` as the object it was written as (ADR 0092).

A tool's rows carry `attributes` as JSON text (`'{"role":"lead"}'`: P-110, K-AST-010), and
every tool call (MCP, the socket, `lcg call`) keeps that wire form. The faces people read
(`lcg list-entities --json`, `lcg search --json`, the Python API's `Entity` and `Fact`) give
it back as the object it went in as.
"""

from __future__ import annotations

from typing import Any

import orjson

ROW_LISTS = ("nodes", "edges")  # the keys of a result that hold entity and edge rows


def attributes_object(value: Any) -> dict[str, Any]:
    """The object `value` holds: JSON text read, an object kept. What is neither (empty text,
    text that is not an object) is the empty object, as the seed stores it (K-AST-011)."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str | bytes) or not value:
        return {}
    try:
        loaded = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def with_attribute_objects(result: dict[str, Any]) -> dict[str, Any]:
    """`result` with each row of its `nodes` and `edges` lists holding `attributes` as an
    object; everything else as it was (a new dict: `result` is not changed)."""
    out = dict(result)
    for key in ROW_LISTS:
        rows = out.get(key)
        if isinstance(rows, list):
            out[key] = [
                {**row, "attributes": attributes_object(row["attributes"])}
                if isinstance(row, dict) and "attributes" in row
                else row
                for row in rows
            ]
    return out
