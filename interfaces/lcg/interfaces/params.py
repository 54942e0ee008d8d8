"""The base of every parameter model, the field types tools share, and the one parser.

Shapes and bounds live in the parameter models; the limits and patterns they use are
defined once in `lcg.domain.rules`. Names and defaults follow seed 000 and the checklist's
P-items. Unknown keys are refused, naming the key (`_`-prefixed keys ride along: P-006's
`_progress_token`); wrong types are never coerced.
"""

from __future__ import annotations

import difflib
import json
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lcg.domain import rules
from lcg.domain.errors import InvalidParams
from lcg.domain.ids import DEFAULT_GROUP


class Params(BaseModel):
    """Base of every parameter model: strict types, and no key the tool does not define.

    An unknown key is refused rather than dropped: with the seed's clear-on-omit contract a
    misspelt `summery` would otherwise succeed and wipe the stored summary (issue 10).
    `_`-prefixed keys (`_progress_token`, P-006) are transport metadata and ride along.
    """

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        json_schema_extra={"patternProperties": {"^_": {}}},  # additionalProperties: false
    )

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema clients fill: an optional parameter is published with its plain type
        ("array", "string", ...), not "array or null", which forms such as the MCP
        Inspector's cannot fill (they sent a list as a string). Null is still accepted, and
        omitting the parameter means the same."""
        schema = super().model_json_schema(*args, **kwargs)
        defs = schema.get("$defs", {})
        for spec in schema.get("properties", {}).values():
            ref = spec.pop("$ref", None)  # a nested object (an endpoint): inlined, type object
            if isinstance(ref, str):
                nested = defs[ref.rsplit("/", 1)[-1]]
                spec.update({k: v for k, v in nested.items() if k not in spec and k != "title"})
            options = spec.get("anyOf")
            if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
                spec.pop("anyOf")
                spec.update(next(option for option in options if option != {"type": "null"}))
            if "default" in spec and spec["default"] is None:
                spec.pop("default")
        if defs and '"$ref"' not in json.dumps(schema.get("properties", {})):
            schema.pop("$defs")  # every reference was inlined; nested lists still use them
        return schema

    @model_validator(mode="before")
    @classmethod
    def _drop_metadata(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if not str(key).startswith("_")}
        return data


class NoParams(Params):
    """An operation that takes no parameters."""


P = TypeVar("P", bound=Params)


def required_text(max_length: int, description: str | None = None) -> Any:
    """A field that must hold 1..max_length characters, not all of them blank."""
    return Field(
        min_length=1,
        max_length=max_length,
        pattern=rules.NOT_BLANK_PATTERN,
        description=description,
    )


GroupIdField = Annotated[
    str,
    Field(
        min_length=1,
        max_length=rules.MAX_GROUP_ID,
        pattern=rules.GROUP_ID_PATTERN,
        description=f"Group (namespace) of the graph; default {DEFAULT_GROUP!r}.",
    ),
]
GroupIdsField = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=rules.MAX_GROUP_ID)]] | None,
    Field(max_length=rules.MAX_GROUP_IDS, description="Groups to read. Omitted or null: all."),
]
NumResults = Annotated[int, Field(ge=1, le=rules.MAX_NUM_RESULTS)]
UuidField = Annotated[str, Field(min_length=1, max_length=rules.MAX_UUID)]
Timestamp = Annotated[str, Field(max_length=64)]


def _unknown_key_rule(model: type[Params], key: str) -> str:
    known = sorted(model.model_fields)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"is not a parameter of this tool (it takes: {', '.join(known) or 'none'}){hint}"


# Pydantic's words for these name the parameter model's class ("instance of ConceptParams"),
# which means nothing to a caller.
_OBJECT_EXPECTED = frozenset({"model_type", "model_attributes_type", "dataclass_type"})


def field_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as the domain names the field: `concepts[0].content`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def parse(model: type[P], raw: dict[str, Any] | None) -> P:
    """Validate raw JSON params; the first broken rule becomes an InvalidParams naming it."""
    try:
        return model.model_validate(raw or {})
    except ValidationError as error:
        problems = error.errors(include_url=False)
        first = problems[0]
        field = field_path(first["loc"]) or "params"
        rule = first["msg"]
        if first["type"] in _OBJECT_EXPECTED:
            rule = "must be an object"
        elif first["type"] == "missing":
            rule = "is required"
        elif first["type"] == "extra_forbidden" and len(first["loc"]) > 1:
            rule = "is not a key of this object"
        elif first["type"] == "extra_forbidden":
            rule = _unknown_key_rule(model, field)
        elif first["type"] == "value_error":  # a model validator's rule, as it reads
            rule = str(first.get("ctx", {}).get("error", rule))
        elif first["type"] == "string_pattern_mismatch":
            rule = rules.PATTERN_RULES.get(str(first.get("ctx", {}).get("pattern")), rule)
        detail = None
        if len(problems) > 1:
            others = ", ".join(field_path(problem["loc"]) for problem in problems[1:])
            detail = f"also invalid: {others}"
        raise InvalidParams(field, rule, detail) from None
