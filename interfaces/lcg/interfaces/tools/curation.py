"""Curation: merging entities (P-124) and the workspace's corrections file (P-125)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from lcg.commands import curation
from lcg.domain import rules
from lcg.domain.commands import MergeEntities
from lcg.domain.errors import InvalidParams
from lcg.domain.ids import DEFAULT_GROUP, EntityUuid, GroupId
from lcg.interfaces.app import App
from lcg.interfaces.params import GroupIdField, Params, UuidField

AliasName = Annotated[
    str, Field(min_length=1, max_length=rules.MAX_NAME, pattern=rules.NOT_BLANK_PATTERN)
]
MAX_ALIASES = 1_000  # one merge call: bounded like a read's num_results


class MergeEntitiesParams(Params):
    canonical_uuid: UuidField | None = Field(
        None, description="The entity the aliases fold into (or give canonical_name)."
    )
    canonical_name: str | None = Field(
        None,
        min_length=1,
        max_length=rules.MAX_NAME,
        pattern=rules.NOT_BLANK_PATTERN,
        description="The canonical entity by name in group_id (or give canonical_uuid).",
    )
    alias_uuids: list[UuidField] = Field(
        default_factory=list, max_length=MAX_ALIASES, description="Entities to merge away."
    )
    alias_names: list[AliasName] = Field(
        default_factory=list,
        max_length=MAX_ALIASES,
        description="Entities to merge away, by name in group_id (the oldest of that name).",
    )
    merge_all_by_name: bool = Field(
        False,
        description="Also merge every other entity of group_id sharing the canonical's name"
        " (and every entity of each alias name).",
    )
    group_id: GroupIdField = DEFAULT_GROUP
    dry_run: bool = Field(False, description="Return the plan; write nothing.")


def _merge_command(app: App, q: MergeEntitiesParams) -> MergeEntities:
    if (q.canonical_uuid is None) == (q.canonical_name is None):
        raise InvalidParams(
            "canonical_uuid",
            "give exactly one of canonical_uuid and canonical_name",
            "both given" if q.canonical_uuid is not None else "neither given",
        )
    if not (q.alias_uuids or q.alias_names or q.merge_all_by_name):
        raise InvalidParams(
            "alias_uuids", "name at least one alias (alias_uuids, alias_names) or merge_all_by_name"
        )
    return MergeEntities(
        group_id=GroupId(q.group_id),
        canonical_uuid=None if q.canonical_uuid is None else EntityUuid(q.canonical_uuid),
        canonical_name=q.canonical_name,
        alias_uuids=tuple(dict.fromkeys(EntityUuid(u) for u in q.alias_uuids)),
        alias_names=tuple(q.alias_names),
        merge_all_by_name=q.merge_all_by_name,
        dry_run=q.dry_run,
        now=app.now(),
    )


def merge_entities(app: App, q: MergeEntitiesParams) -> curation.MergeResult:
    """Merge alias entities into a canonical one of group_id: aliases become Merged tombstones
    (merged_into: the canonical), their edges move to it; edges becoming self-loops or
    duplicates are invalidated; other groups' edges are never rewritten. dry_run returns the
    plan and writes nothing."""
    command = _merge_command(app, q)
    return app.workspace.writer.execute(lambda ctx: curation.merge_entities(ctx, command))
