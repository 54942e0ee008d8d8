"""Pure deciders: given a command and the state it touches, the events to append or an error."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from lcg.domain import rules
from lcg.domain.commands import (
    AddEpisode,
    AssertEntity,
    AssertRelationship,
    BackfillSummaries,
    DeleteEpisode,
    DeleteEpisodes,
    ProcessChunk,
    PurgeGroup,
)
from lcg.domain.errors import Conflict, NotFound
from lcg.domain.events import (
    ChunkExtracted,
    DomainEvent,
    EntityCreated,
    EntityRevised,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    RelationshipCreated,
    RelationshipRevised,
    SummaryEmbedded,
)
from lcg.domain.extraction import DroppedEdge, Resolved
from lcg.domain.ids import EdgeUuid, EntityUuid, EpisodeUuid, GroupId

CROSS_GROUP_HINT = (
    "endpoints resolve only inside the call's group_id; use knowledge_add_cross_group_edge "
    "to connect entities across groups (or assert the entity in this group first)"
)


@dataclass(frozen=True, slots=True)
class EntityState:
    """What a decider needs to know about one stored entity."""

    uuid: EntityUuid
    name: str
    group_id: GroupId
    # What an assertion replaces; None where the reader did not load it (then never a no-op).
    labels: tuple[str, ...] | None = None
    summary: str | None = None
    attributes: str | None = None
    merged_into: EntityUuid | None = None  # a `Merged` tombstone's canonical (P-124)


@dataclass(frozen=True, slots=True)
class EntityLookup:
    """The entities an AssertEntity command can touch, as read from the group's state."""

    by_uuid: EntityState | None
    by_name: EntityState | None


@dataclass(frozen=True, slots=True)
class AssertEntityDecision:
    """The events plus what the caller is told."""

    events: tuple[DomainEvent, ...]
    entity_uuid: EntityUuid
    created: bool


def decide_assert_entity(command: AssertEntity, lookup: EntityLookup) -> AssertEntityDecision:
    """Create or fully revise an entity (K-AST-004..012, P-108).

    Shapes and bounds were checked by the parameter model; this decides identity only.
    """
    if command.entity_uuid is not None:
        target = lookup.by_uuid
        if target is None or target.group_id != command.group_id:
            raise NotFound(
                f"entity_uuid: no entity {command.entity_uuid} in group "
                f"{command.group_id!r} (a uuid is looked up, never minted)",
                field="entity_uuid",
                rule="must name an existing entity of group_id",
            )
        if target.merged_into is not None:
            raise Conflict(
                f"entity_uuid: entity {command.entity_uuid} was merged into "
                f"{target.merged_into}; assert that entity instead",
                field="entity_uuid",
                rule="must not name a merged entity",
            )
        clash = lookup.by_name
        if clash is not None and clash.uuid != target.uuid:
            raise Conflict(
                f"name: {command.name!r} already names entity {clash.uuid} in group "
                f"{command.group_id!r}; merge the two instead of renaming onto it",
                field="name",
                rule="must not rename onto another entity's name",
            )
    else:
        target = lookup.by_name
    name = command.name.strip()
    if target is None:
        created = EntityCreated(
            command.now,
            command.new_uuid,
            name,
            command.labels,
            command.summary,
            command.attributes,
        )
        return AssertEntityDecision((created,), command.new_uuid, created=True)
    if (target.name, target.labels, target.summary, target.attributes) == (
        name,
        command.labels,
        command.summary,
        command.attributes,
    ):
        return AssertEntityDecision((), target.uuid, created=False)  # ADR 0021: no-op
    revised = EntityRevised(
        command.now, target.uuid, name, command.labels, command.summary, command.attributes
    )
    return AssertEntityDecision((revised,), target.uuid, created=False)


@dataclass(frozen=True, slots=True)
class EdgeState:
    """What an assertion of an existing edge replaces."""

    fact: str
    relation_type: str | None
    attributes: str
    valid_at: datetime | None


@dataclass(frozen=True, slots=True)
class RelationshipLookup:
    """Endpoints resolved inside the group and the active edge between them, if any."""

    source: EntityState | None
    target: EntityState | None
    active_edge: EdgeUuid | None
    active: EdgeState | None = None  # the active edge's content, when the reader loaded it


@dataclass(frozen=True, slots=True)
class AssertRelationshipDecision:
    """The events plus what the caller is told."""

    events: tuple[DomainEvent, ...]
    edge_uuid: EdgeUuid
    created: bool


def decide_assert_relationship(
    command: AssertRelationship, lookup: RelationshipLookup
) -> AssertRelationshipDecision:
    """Create or revise the group's active edge (source, predicate, target) (K-AST-021..038)."""
    for field, entity, name in (
        ("source_name", lookup.source, command.source_name),
        ("target_name", lookup.target, command.target_name),
    ):
        if entity is None:
            raise NotFound(
                f"{field}: no entity named {name!r} in group {command.group_id!r}; "
                + CROSS_GROUP_HINT,
                field=field,
                rule="must name an entity of group_id",
            )
    source, target = lookup.source, lookup.target
    if source is None or target is None:  # unreachable after the loop; narrows the types
        raise AssertionError
    fact = command.stored_fact
    if lookup.active_edge is None:
        created = RelationshipCreated(
            occurred_at=command.now,
            edge_uuid=command.new_uuid,
            source_uuid=source.uuid,
            target_uuid=target.uuid,
            predicate=command.predicate,
            fact=fact,
            relation_type=command.relation_type,
            attributes=command.attributes,
            valid_at=command.valid_at,
        )
        return AssertRelationshipDecision((created,), command.new_uuid, created=True)
    if lookup.active == EdgeState(
        fact, command.relation_type, command.attributes, command.valid_at
    ):  # ADR 0021: an identical re-assertion changes nothing and appends nothing
        return AssertRelationshipDecision((), lookup.active_edge, created=False)
    revised = RelationshipRevised(
        occurred_at=command.now,
        edge_uuid=lookup.active_edge,
        fact=fact,
        relation_type=command.relation_type,
        attributes=command.attributes,
        valid_at=command.valid_at,
    )
    return AssertRelationshipDecision((revised,), lookup.active_edge, created=False)


def decide_add_episode(command: AddEpisode) -> tuple[DomainEvent, ...]:
    """Store an episode as given (P-107); a body declared as JSON must be JSON."""
    if command.source == "json":
        rules.json_body(command.body)
    return (
        EpisodeAdded(
            occurred_at=command.now,
            episode_uuid=command.new_uuid,
            name=command.name,
            body=command.body,
            source=command.source,
            source_description=command.source_description,
            reference_time=command.reference_time,
            chunk_id=command.chunk_id,
            source_file=command.source_file,
        ),
    )


def decide_delete_episode(
    command: DeleteEpisode, group_id: GroupId | None
) -> tuple[GroupId, tuple[DomainEvent, ...]] | None:
    """Delete an episode in its own group (`group_id`: where it lives, None if unknown).

    An unknown episode decides nothing: deleting it is a no-op success (P-120).
    """
    if group_id is None:
        return None
    return group_id, (EpisodeDeleted(occurred_at=command.now, episode_uuid=command.episode_uuid),)


def decide_backfill_summaries(
    command: BackfillSummaries, summaries: Sequence[tuple[EntityUuid, str]]
) -> tuple[DomainEvent, ...]:
    """One SummaryEmbedded per entity whose summary is not blank (K-SEM, P-130)."""
    return tuple(
        SummaryEmbedded(command.now, uuid, summary)
        for uuid, summary in summaries
        if summary.strip()
    )


def decide_purge_group(command: PurgeGroup, row_count: int) -> tuple[DomainEvent, ...]:
    """Purge a group; purging a group that holds nothing appends nothing (P-122)."""
    if row_count == 0:
        return ()
    return (GroupPurged(occurred_at=command.now),)


@dataclass(frozen=True, slots=True)
class ChunkDecision:
    """process_chunk's events and what its result reports."""

    events: tuple[DomainEvent, ...]
    nodes_extracted: int
    edges_extracted: int
    dropped: tuple[DroppedEdge, ...]


def decide_process_chunk(
    command: ProcessChunk,
    resolved: Resolved,
    active_edge: Callable[[str, str, str], EdgeUuid | None],
) -> ChunkDecision:
    """The episode, the entities the chunk introduces, its edges (an edge already stated with
    the same endpoints and predicate is not repeated: the chunk is added to its episodes), and
    the mentions (K-ING-002..013: dropped edges are reported, never stored)."""
    events: list[DomainEvent] = list(decide_add_episode(command.episode))
    now = command.episode.now
    uuids = dict(resolved.existing)
    for entity in resolved.new:
        uuid = EntityUuid(command.new_id())
        uuids[rules.name_key(entity.name)] = uuid
        events.append(
            EntityCreated(now, uuid, entity.name.strip(), entity.labels, entity.summary, "{}")
        )
    edges: list[EdgeUuid] = []
    for source_key, target_key, edge in resolved.edges:
        source, target = EntityUuid(uuids[source_key]), EntityUuid(uuids[target_key])
        known = active_edge(source, edge.predicate, target)
        if known is None:
            known = next(
                (
                    e.edge_uuid
                    for e in events
                    if isinstance(e, RelationshipCreated)
                    and (e.source_uuid, e.predicate, e.target_uuid)
                    == (source, edge.predicate, target)
                ),
                None,
            )
        if known is None:
            known = EdgeUuid(command.new_id())
            events.append(
                RelationshipCreated(
                    now,
                    known,
                    source,
                    target,
                    edge.predicate,
                    edge.fact,
                    edge.relation_type,
                    "{}",
                    edge.valid_at,
                )
            )
        if known not in edges:
            edges.append(known)
    mentioned = tuple(dict.fromkeys(EntityUuid(u) for u in uuids.values()))
    events.append(
        ChunkExtracted(
            now,
            command.episode.new_uuid,
            command.extractor,
            command.model,
            mentioned,
            tuple(edges),
        )
    )
    return ChunkDecision(
        tuple(events),
        nodes_extracted=len(command.extraction.entities),
        edges_extracted=len(command.extraction.edges),
        dropped=resolved.dropped,
    )


def decide_delete_episodes(
    command: DeleteEpisodes, found: Sequence[tuple[GroupId, EpisodeUuid]]
) -> list[tuple[GroupId, tuple[DomainEvent, ...]]]:
    """One EpisodeDeleted per matching episode, in its own group (entities stay: P-121)."""
    return [
        (group, (EpisodeDeleted(occurred_at=command.now, episode_uuid=uuid),))
        for group, uuid in found
    ]
