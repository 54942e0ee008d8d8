"""Command messages: what a caller asks for, already parsed, with the ids and time it needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from lcg.domain import rules
from lcg.domain.extraction import Extraction, SimilarName
from lcg.domain.ids import EdgeUuid, EntityUuid, EpisodeUuid, GroupId
from lcg.domain.rules import EpisodeSource


@dataclass(frozen=True, slots=True)
class AssertEntity:
    """knowledge_assert_entity: upsert by (name, group_id) or strictly by entity_uuid."""

    group_id: GroupId
    name: str
    entity_uuid: EntityUuid | None
    labels: tuple[str, ...]
    summary: str
    attributes: str
    new_uuid: EntityUuid
    now: datetime


@dataclass(frozen=True, slots=True)
class AssertRelationship:
    """knowledge_assert_relationship: upsert by (source, predicate, target, group_id)."""

    group_id: GroupId
    source_name: str
    target_name: str
    predicate: str
    fact: str | None
    relation_type: str | None
    attributes: str
    valid_at: datetime | None
    new_uuid: EdgeUuid
    now: datetime

    @property
    def stored_fact(self) -> str:
        """The fact the edge will state: the given one, or 'SOURCE PREDICATE TARGET'."""
        return rules.edge_fact(self.fact, self.source_name, self.predicate, self.target_name)


@dataclass(frozen=True, slots=True)
class AddEpisode:
    """knowledge_add_episode: store a piece of content as an episode (no extraction)."""

    group_id: GroupId
    name: str
    body: str
    source: EpisodeSource
    source_description: str
    reference_time: datetime
    new_uuid: EpisodeUuid
    now: datetime
    chunk_id: str | None = None
    source_file: str | None = None


@dataclass(frozen=True, slots=True)
class ProcessChunk:
    """knowledge_process_chunk: an episode for the chunk, and what its extraction found."""

    episode: AddEpisode
    extraction: Extraction
    extractor: str
    model: str
    new_id: Callable[[], str]
    similar: Mapping[str, SimilarName] = field(default_factory=dict)  # by name key


@dataclass(frozen=True, slots=True)
class DeleteEpisodes:
    """knowledge_delete_by_source / knowledge_delete_chunk_episode: the episodes of a source
    file or of a chunk id, in the listed groups only (K-DEL-010)."""

    group_ids: tuple[GroupId, ...]
    source_file: str | None
    chunk_id: str | None
    now: datetime


@dataclass(frozen=True, slots=True)
class DeleteEpisode:
    """knowledge_delete_episode: remove one episode from its own group."""

    episode_uuid: EpisodeUuid
    now: datetime


@dataclass(frozen=True, slots=True)
class PurgeGroup:
    """knowledge_delete_by_group for one group: delete every row the group owns."""

    group_id: GroupId
    now: datetime


@dataclass(frozen=True, slots=True)
class BackfillSummaries:
    """knowledge_backfill_summary_embeddings: re-embed the non-blank summaries of one group."""

    group_id: GroupId
    now: datetime


@dataclass(frozen=True, slots=True)
class MergeEntities:
    """knowledge_merge_entities (P-124): fold aliases into one canonical entity of a group.
    Exactly one of canonical_uuid / canonical_name is set (the parameter model checks it)."""

    group_id: GroupId
    canonical_uuid: EntityUuid | None
    canonical_name: str | None
    alias_uuids: tuple[EntityUuid, ...]
    alias_names: tuple[str, ...]
    merge_all_by_name: bool
    dry_run: bool
    now: datetime


@dataclass(frozen=True, slots=True)
class UuidEndpoint:
    """`{"uuid": ...}`: an entity of the edge's own group; no resolution, no pointer."""

    uuid: EntityUuid


@dataclass(frozen=True, slots=True)
class NameEndpoint:
    """`{"source_group_id", "endpoint_name"}`: a foreign endpoint, resolved by name."""

    source_group_id: GroupId
    endpoint_name: str


CrossGroupEndpoint = UuidEndpoint | NameEndpoint


@dataclass(frozen=True, slots=True)
class AddCrossGroupEdge:
    """knowledge_add_cross_group_edge (P-131): an edge of `group_id` whose ends may be
    entities of other groups, named by a pointer."""

    group_id: GroupId
    predicate: str
    source: CrossGroupEndpoint
    target: CrossGroupEndpoint
    fact: str
    relation_type: str | None
    valid_at: datetime | None
    new_uuid: EdgeUuid
    now: datetime


@dataclass(frozen=True, slots=True)
class RebindPointers:
    """knowledge_rebind_pointers (P-132): re-resolve the pointers naming `source_group_id`."""

    source_group_id: GroupId
    now: datetime
