"""Parameter models of the operations: JSON schemas with real bounds, strict validation.

Names and defaults follow seed 000 and the checklist's P-items. Unknown keys are ignored
(P-006: `_progress_token` and other `_` keys ride along); wrong types are never coerced.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lcg.domain import rules
from lcg.domain.errors import InvalidParams
from lcg.domain.ids import DEFAULT_GROUP

GroupIdField = Annotated[
    str,
    Field(
        min_length=1,
        max_length=rules.MAX_GROUP_ID,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$",
        description="Group (namespace) of the graph; default 'liminis'.",
    ),
]
GroupIdsField = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=rules.MAX_GROUP_ID)]] | None,
    Field(max_length=1024, description="Groups to read. Omitted or null: all groups."),
]
NumResults = Annotated[int, Field(ge=1, le=rules.MAX_NUM_RESULTS)]


class Params(BaseModel):
    """Base of every parameter model."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class NoParams(Params):
    pass


class AssertEntityParams(Params):
    name: str = Field(min_length=1, max_length=rules.MAX_NAME)
    entity_uuid: str | None = Field(None, min_length=1, max_length=64)
    labels: list[Annotated[str, Field(min_length=1, max_length=rules.MAX_LABEL)]] | None = Field(
        None, max_length=rules.MAX_LABELS
    )
    summary: str | None = Field(None, max_length=rules.MAX_SUMMARY)
    attributes: Any = Field(None, description="JSON object; anything else is stored as {}")
    group_id: GroupIdField = DEFAULT_GROUP


class AssertRelationshipParams(Params):
    source_name: str = Field(min_length=1, max_length=rules.MAX_NAME)
    target_name: str = Field(min_length=1, max_length=rules.MAX_NAME)
    predicate: str = Field(min_length=1, max_length=rules.MAX_PREDICATE)
    fact: str | None = Field(None, max_length=rules.MAX_FACT)
    attributes: Any = None
    relation_type: str | None = Field(None, max_length=rules.MAX_RELATION_TYPE)
    valid_at: str | None = Field(None, max_length=64, description="RFC 3339 timestamp")
    group_id: GroupIdField = DEFAULT_GROUP


class AddEpisodeParams(Params):
    name: str = Field(min_length=1, max_length=rules.MAX_EPISODE_NAME)
    episode_body: str = Field(min_length=1, max_length=rules.MAX_EPISODE_BODY)
    source: str = Field("text", pattern=r"^(text|message|json)$")
    source_description: str = Field("", max_length=rules.MAX_SOURCE_DESCRIPTION)
    reference_time: str | None = Field(None, max_length=64, description="RFC 3339; default now")
    group_id: GroupIdField = DEFAULT_GROUP


class GetEpisodesParams(Params):
    group_id: GroupIdField = DEFAULT_GROUP
    last_n: NumResults = 50


class ListEntitiesParams(Params):
    num_results: NumResults = 500
    group_ids: GroupIdsField = None


class ListRelationshipsParams(Params):
    num_results: NumResults = 1000
    group_ids: GroupIdsField = None


class ByGroupParams(Params):
    group_ids: GroupIdsField = None


class EdgesByUuidsParams(Params):
    uuids: list[Annotated[str, Field(max_length=64)]] = Field(max_length=rules.MAX_NUM_RESULTS)


class NeighborsParams(Params):
    entity_uuid: str = Field(min_length=1, max_length=64)
    num_results: NumResults = 50
    group_ids: GroupIdsField = None


class DeleteEpisodeParams(Params):
    episode_uuid: str = Field(min_length=1, max_length=64)


class DeleteByGroupParams(Params):
    group_ids: list[Annotated[str, Field(min_length=1, max_length=rules.MAX_GROUP_ID)]] = Field(
        min_length=1, max_length=1024
    )
    confirm: bool = False
    dry_run: bool = False


class ClearAllParams(Params):
    confirm: bool
    preserve_wal: bool = False


class RebuildFromWalParams(Params):
    group_id: GroupIdField = DEFAULT_GROUP
    from_seq: int = Field(0, ge=0)
    to_seq: int | None = Field(None, ge=0)
    dry_run: bool = False
    force_clear: bool = False


QueryText = Annotated[
    str, Field(min_length=1, max_length=rules.MAX_FACT, description="What to look for, in words.")
]


class FindParams(Params):
    query: QueryText
    group_ids: GroupIdsField = None
    num_results: NumResults = 10


class SearchPassagesParams(Params):
    query: QueryText
    num_results: int = Field(10, description="Clamped to 1-100.")
    min_score: float = Field(0.5, description="Clamped to 0.0-1.0; floor on the best leg score.")
    group_ids: GroupIdsField = None


class EntitiesBySourceParams(Params):
    source: str = Field(min_length=1, max_length=rules.MAX_SOURCE_DESCRIPTION)
    num_results: NumResults = 100
    group_ids: GroupIdsField = None


class BackfillSummaryParams(Params):
    group_id: str | None = Field(
        None, max_length=rules.MAX_GROUP_ID, description="Required: the one group to backfill."
    )
    dry_run: bool = False


def parse(model: type[Params], raw: dict[str, Any] | None) -> Params:
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
        detail = None
        if len(problems) > 1:
            others = ", ".join(".".join(str(p) for p in problem["loc"]) for problem in problems[1:])
            detail = f"also invalid: {others}"
        raise InvalidParams(field, rule, detail) from None
