"""Cross-group pointers (seed 000, P-131, P-132): edges whose ends live in other groups."""

from __future__ import annotations

from pydantic import Field, model_validator

from lcg.commands import cross_group
from lcg.domain import rules
from lcg.domain.commands import (
    AddCrossGroupEdge,
    CrossGroupEndpoint,
    NameEndpoint,
    RebindPointers,
    UuidEndpoint,
)
from lcg.domain.cross_group import CrossGroupEdgeResult, RebindResult
from lcg.domain.ids import DEFAULT_GROUP, EdgeUuid, EntityUuid, GroupId
from lcg.interfaces.app import App
from lcg.interfaces.params import GroupIdField, Params, Timestamp, UuidField, required_text

ENDPOINT_RULE = (
    'must be exactly {"uuid"} (an entity of group_id) or exactly'
    ' {"source_group_id", "endpoint_name"} (a foreign endpoint, bound by name)'
)


ENDPOINT_SHAPE = '{"uuid"} or {"source_group_id", "endpoint_name"}.'


class EndpointParams(Params):
    """One end of a cross-group edge: exactly {"uuid"} or exactly {"source_group_id",
    "endpoint_name"} (P-131). Published as one object (forms cannot fill anyOf: issue 10)."""

    uuid: UuidField | None = Field(None, description="An entity of the edge's group_id.")
    source_group_id: GroupIdField | None = Field(
        None, description="The group a foreign endpoint lives in."
    )
    endpoint_name: str | None = Field(
        None,
        min_length=1,
        max_length=rules.MAX_NAME,
        pattern=rules.NOT_BLANK_PATTERN,
        description="The foreign endpoint's entity name in source_group_id.",
    )

    @model_validator(mode="after")
    def _one_shape(self) -> EndpointParams:
        by_uuid = self.uuid is not None
        by_name = self.source_group_id is not None or self.endpoint_name is not None
        complete = self.source_group_id is not None and self.endpoint_name is not None
        if by_uuid == by_name or (by_name and not complete):
            raise ValueError(ENDPOINT_RULE)
        return self


class AddCrossGroupEdgeParams(Params):
    name: str = required_text(rules.MAX_PREDICATE, "The predicate: what source does to target.")
    source: EndpointParams = Field(
        description="The source end: " + ENDPOINT_SHAPE, json_schema_extra={"type": "object"}
    )
    target: EndpointParams = Field(
        description="The target end: " + ENDPOINT_SHAPE, json_schema_extra={"type": "object"}
    )
    fact: str = required_text(rules.MAX_FACT, "The sentence the edge states.")
    group_id: GroupIdField = DEFAULT_GROUP
    valid_at: Timestamp | None = Field(
        None, description="When the fact became true: RFC 3339, or a date (midnight UTC)."
    )
    relation_type: str | None = Field(
        None, max_length=rules.MAX_RELATION_TYPE, description="A type name; omitted: none."
    )


class RebindPointersParams(Params):
    source_group_id: GroupIdField = Field(
        description="Re-resolve every pointer whose source_group_id is this group."
    )


def _endpoint(endpoint: EndpointParams) -> CrossGroupEndpoint:
    if endpoint.uuid is not None:
        return UuidEndpoint(EntityUuid(endpoint.uuid))
    return NameEndpoint(GroupId(endpoint.source_group_id or ""), endpoint.endpoint_name or "")


def add_cross_group_edge(app: App, q: AddCrossGroupEdgeParams) -> CrossGroupEdgeResult:
    """Create an edge of group_id whose endpoints may live in other groups: {"uuid"} (an
    entity of group_id) or {"source_group_id", "endpoint_name"}, bound by case-insensitive
    name there (cross_group_pointers.{src,dst}). An unbound or ambiguous pointer keeps the
    edge, but no read shows it until knowledge_rebind_pointers binds it. Bound ends making a
    self-loop or a duplicate edge are refused."""
    command = AddCrossGroupEdge(
        group_id=GroupId(q.group_id),
        predicate=q.name,
        source=_endpoint(q.source),
        target=_endpoint(q.target),
        fact=q.fact,
        relation_type=q.relation_type,
        valid_at=None if q.valid_at is None else rules.timestamp(q.valid_at, "valid_at"),
        new_uuid=EdgeUuid(app.new_id()),
        now=app.now(),
    )
    return app.writes.writer.execute(lambda ctx: cross_group.add_cross_group_edge(ctx, command))


def rebind_pointers(app: App, q: RebindPointersParams) -> RebindResult:
    """Re-resolve every pointer naming source_group_id (after its replay, rebuild or
    restore). A bound pointer with bound_at_seq at or past that group's applied seq is
    skipped (staleness_skipped); unbound and ambiguous ones are always re-resolved. A
    self-loop or duplicate invalidates the edge, as knowledge_merge_entities does."""
    command = RebindPointers(GroupId(q.source_group_id), app.now())
    return app.writes.writer.execute(lambda ctx: cross_group.rebind_pointers(ctx, command))
