"""Entities and relationships: direct assertion (K-AST) and the group-scoped reads (K-GID)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from lcg.commands import handlers
from lcg.domain import rules
from lcg.domain.commands import AssertEntity, AssertRelationship
from lcg.domain.ids import DEFAULT_GROUP, EdgeUuid, EntityUuid, GroupId
from lcg.interfaces.app import App
from lcg.interfaces.params import (
    GroupIdField,
    GroupIdsField,
    NumResults,
    Params,
    Timestamp,
    UuidField,
    required_text,
)
from lcg.interfaces.read_after import ReadAfterParams
from lcg.queries import graph_reads

Label = Annotated[
    str, Field(min_length=1, max_length=rules.MAX_LABEL, pattern=rules.NOT_BLANK_PATTERN)
]


class AssertEntityParams(Params):
    name: str = required_text(
        rules.MAX_NAME, "The entity's name; with group_id, its identity unless entity_uuid."
    )
    entity_uuid: UuidField | None = Field(
        None, description="Update this entity of group_id (strict: it must exist there)."
    )
    labels: list[Label] | None = Field(
        None, max_length=rules.MAX_LABELS, description='Replace the labels; omitted: ["Entity"].'
    )
    summary: str | None = Field(
        None, max_length=rules.MAX_SUMMARY, description='Replace the summary; omitted: "".'
    )
    attributes: Any = Field(
        None,
        description="JSON object; anything else is stored as {} (K-AST-011)",
        json_schema_extra={"type": "object"},
    )
    group_id: GroupIdField = DEFAULT_GROUP


class AssertRelationshipParams(Params):
    source_name: str = required_text(rules.MAX_NAME, "Name of an entity already in group_id.")
    target_name: str = required_text(rules.MAX_NAME, "Name of an entity already in group_id.")
    predicate: str = required_text(rules.MAX_PREDICATE, "What the source does to the target.")
    fact: str | None = Field(
        None,
        max_length=rules.MAX_FACT,
        description="The sentence the edge states; omitted: 'SOURCE PREDICATE TARGET'.",
    )
    attributes: Any = Field(
        None,
        description="JSON object; anything else is stored as {} (K-AST-011)",
        json_schema_extra={"type": "object"},
    )
    relation_type: str | None = Field(
        None, max_length=rules.MAX_RELATION_TYPE, description="A type name; omitted: none."
    )
    valid_at: Timestamp | None = Field(
        None, description="When the fact became true: RFC 3339, or a date (midnight UTC)."
    )
    group_id: GroupIdField = DEFAULT_GROUP


class ListEntitiesParams(ReadAfterParams):
    num_results: NumResults = Field(500, description="How many entities at most.")
    group_ids: GroupIdsField = None


class ListRelationshipsParams(ReadAfterParams):
    num_results: NumResults = Field(1000, description="How many edges at most.")
    group_ids: GroupIdsField = None


class ByGroupParams(ReadAfterParams):
    group_ids: GroupIdsField = None


class EdgesByUuidsParams(ReadAfterParams):
    uuids: list[Annotated[str, Field(max_length=rules.MAX_UUID)]] = Field(
        max_length=rules.MAX_NUM_RESULTS, description="Edge uuids; unknown ones are skipped."
    )


class NeighborsParams(ReadAfterParams):
    entity_uuid: UuidField = Field(description="The entity whose edges and neighbours to read.")
    num_results: NumResults = Field(50, description="How many edges at most.")
    group_ids: GroupIdsField = None


def assert_entity(app: App, q: AssertEntityParams) -> handlers.AssertEntityResult:
    """Create or fully replace an entity; identity is (name, group_id) unless entity_uuid is
    given (strict, group-scoped). Omitted summary/attributes are cleared."""
    command = AssertEntity(
        group_id=GroupId(q.group_id),
        name=q.name,
        entity_uuid=None if q.entity_uuid is None else EntityUuid(q.entity_uuid),
        labels=rules.labels(q.labels),
        summary=q.summary or "",
        attributes=rules.attributes(q.attributes),
        new_uuid=EntityUuid(app.new_id()),
        now=app.now(),
    )
    return app.writes.writer.execute(lambda ctx: handlers.assert_entity(ctx, command))


def assert_relationship(app: App, q: AssertRelationshipParams) -> handlers.AssertRelationshipResult:
    """Create or replace the active edge (source, predicate, target) of a group. Endpoints
    resolve only inside group_id; knowledge_add_cross_group_edge links groups. Omitted
    fact/attributes/relation_type/valid_at are reset."""
    command = AssertRelationship(
        group_id=GroupId(q.group_id),
        source_name=q.source_name,
        target_name=q.target_name,
        predicate=q.predicate,
        fact=q.fact,
        relation_type=q.relation_type,
        attributes=rules.attributes(q.attributes),
        valid_at=None if q.valid_at is None else rules.timestamp(q.valid_at, "valid_at"),
        new_uuid=EdgeUuid(app.new_id()),
        now=app.now(),
    )
    return app.writes.writer.execute(lambda ctx: handlers.assert_relationship(ctx, command))


def list_entities(app: App, q: ListEntitiesParams) -> graph_reads.NodesResult:
    """Entities with episode provenance (not merged aliases). Omitted, null or [] group_ids:
    all groups."""
    return graph_reads.list_entities(app.reads.reader(), q.group_ids, q.num_results)


def list_relationships(app: App, q: ListRelationshipsParams) -> graph_reads.EdgesResult:
    """Active edges. Omitted, null or [] group_ids: all groups."""
    return graph_reads.list_relationships(app.reads.reader(), q.group_ids, q.num_results)


def get_nodes_by_group(app: App, q: ByGroupParams) -> graph_reads.NodesResult:
    """Entities of the groups. Omitted/null group_ids: all groups; [] matches nothing."""
    return graph_reads.get_nodes_by_group(app.reads.reader(), q.group_ids)


def get_edges_by_group(app: App, q: ByGroupParams) -> graph_reads.EdgesResult:
    """Active edges of the groups. Omitted/null group_ids: all groups; [] matches nothing."""
    return graph_reads.get_edges_by_group(app.reads.reader(), q.group_ids)


def get_edges_by_uuids(app: App, q: EdgesByUuidsParams) -> graph_reads.EdgesResult:
    """Edges by uuid, in the order asked; unknown uuids are skipped."""
    return graph_reads.get_edges_by_uuids(app.reads.reader(), q.uuids)


def get_entity_neighbors(app: App, q: NeighborsParams) -> graph_reads.NeighborsResult:
    """Edges touching an entity and the entities at their other ends. A merged alias's uuid
    answers with no edges and merged_into, the canonical it was merged into."""
    return graph_reads.get_entity_neighbors(
        app.reads.reader(), q.entity_uuid, q.group_ids, q.num_results
    )
