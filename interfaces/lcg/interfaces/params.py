"""The base of every parameter model, the field types tools share, and the one parser.

Shapes and bounds live in the parameter models; the limits and patterns they use are
defined once in `lcg.domain.rules`. Names and defaults follow seed 000 and the checklist's
P-items. Unknown keys are ignored (P-006: `_progress_token` and other `_` keys ride along);
wrong types are never coerced.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lcg.domain import rules
from lcg.domain.errors import InvalidParams
from lcg.domain.ids import DEFAULT_GROUP


class Params(BaseModel):
    """Base of every parameter model."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


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
Timestamp = Annotated[str, Field(max_length=64, description="RFC 3339 timestamp")]


def parse(model: type[P], raw: dict[str, Any] | None) -> P:
    """Validate raw JSON params; the first broken rule becomes an InvalidParams naming it."""
    try:
        return model.model_validate(raw or {})
    except ValidationError as error:
        problems = error.errors(include_url=False)
        first = problems[0]
        field = ".".join(str(part) for part in first["loc"]) or "params"
        rule = first["msg"]
        if first["type"] == "missing":
            rule = "is required"
        elif first["type"] == "string_pattern_mismatch":
            rule = rules.PATTERN_RULES.get(str(first.get("ctx", {}).get("pattern")), rule)
        detail = None
        if len(problems) > 1:
            others = ", ".join(".".join(str(p) for p in problem["loc"]) for problem in problems[1:])
            detail = f"also invalid: {others}"
        raise InvalidParams(field, rule, detail) from None
