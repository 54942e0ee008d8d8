"""Domain events: frozen, versioned facts with stable wire names, and their JSON codec.

Events never carry their group or position: the stream they are appended to is the group,
and the stream position is the `seq`. Times are UTC and passed in by the handler.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, TypeAlias, get_args, get_type_hints

from lcg.domain.ids import EdgeUuid, EntityUuid, EpisodeUuid
from lcg.domain.memory.records import (
    CanonHop,
    Collected,
    MemoryRequest,
    Record,
    SweepFigures,
    WriteOutcome,
)

JsonDict: TypeAlias = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DomainEvent:
    """Base of every event. Subclasses set `wire_name` (never renamed) and `version`."""

    wire_name: ClassVar[str] = ""
    version: ClassVar[int] = 1

    occurred_at: datetime

    def wire_version(self) -> int:
        """The version this event is written at: `version`, unless the event says it can be
        written at an older one (a payload an older build still reads, ADR 0082)."""
        return self.version


@dataclass(frozen=True, slots=True)
class EntityCreated(DomainEvent):
    """An entity was asserted for the first time in its group."""

    wire_name: ClassVar[str] = "entity_created"

    entity_uuid: EntityUuid
    name: str
    labels: tuple[str, ...]
    summary: str
    attributes: str


@dataclass(frozen=True, slots=True)
class EntityRevised(DomainEvent):
    """An existing entity was re-asserted; every field is replaced, embeddings are kept."""

    wire_name: ClassVar[str] = "entity_revised"

    entity_uuid: EntityUuid
    name: str
    labels: tuple[str, ...]
    summary: str
    attributes: str


@dataclass(frozen=True, slots=True)
class RelationshipCreated(DomainEvent):
    """A directed edge between two entities of the group was asserted for the first time."""

    wire_name: ClassVar[str] = "relationship_created"

    edge_uuid: EdgeUuid
    source_uuid: EntityUuid
    target_uuid: EntityUuid
    predicate: str
    fact: str
    relation_type: str | None
    attributes: str
    valid_at: datetime | None


@dataclass(frozen=True, slots=True)
class RelationshipRevised(DomainEvent):
    """An active edge was re-asserted; fact, type, attributes and valid_at are replaced."""

    wire_name: ClassVar[str] = "relationship_revised"

    edge_uuid: EdgeUuid
    fact: str
    relation_type: str | None
    attributes: str
    valid_at: datetime | None


@dataclass(frozen=True, slots=True)
class EpisodeAdded(DomainEvent):
    """A piece of source content (text, message or JSON) was stored as an episode."""

    wire_name: ClassVar[str] = "episode_added"

    episode_uuid: EpisodeUuid
    name: str
    body: str
    source: str
    source_description: str
    reference_time: datetime
    chunk_id: str | None
    source_file: str | None


@dataclass(frozen=True, slots=True)
class EpisodeDeleted(DomainEvent):
    """An episode and its mentions were removed; entities it mentioned stay (orphaned)."""

    wire_name: ClassVar[str] = "episode_deleted"

    episode_uuid: EpisodeUuid


@dataclass(frozen=True, slots=True)
class GroupPurged(DomainEvent):
    """Every entity, edge and episode of the group was deleted (knowledge_delete_by_group)."""

    wire_name: ClassVar[str] = "group_purged"


@dataclass(frozen=True, slots=True)
class SummaryEmbedded(DomainEvent):
    """The entity's summary, as it reads now, was (re-)embedded (summary backfill, K-SEM)."""

    wire_name: ClassVar[str] = "summary_embedded"

    entity_uuid: EntityUuid
    summary: str


@dataclass(frozen=True, slots=True)
class MemoryWriteAccepted(DomainEvent):
    """An agent's lambo_derive or lambo_record_action, validated and with every id reference
    resolved: the durable intent its receipt is acknowledged on (ADR 0026). Nothing of the
    graph changes yet; the intent processor appends the outcome."""

    wire_name: ClassVar[str] = "memory_write_accepted"
    # 2: the request may carry `repo_scope` (ADR 0082). An unscoped intent is still written
    # at version 1, byte for byte as before; a scoped one at 2, which an older build refuses
    # to read rather than replay as unscoped paths.
    # 3: the request may be a lambo_derive_image's (ADR 0095), written at 3 so that an older
    # build refuses it rather than misread it; every other intent is written as before.
    version: ClassVar[int] = 3

    receipt: str
    agent_id: str
    tool: str  # lambo_derive | lambo_record_action | lambo_derive_image
    request: MemoryRequest  # the call as validated, references fixed to node ids
    event_time: datetime | None

    def wire_version(self) -> int:
        if self.tool == "lambo_derive_image":
            return 3
        return 1 if self.request.scope() is None else 2


@dataclass(frozen=True, slots=True)
class MemoryWriteApplied(DomainEvent):
    """The outcome of an intent: every decision the processor took (matches by key and by
    similarity, created nodes, edges, counts, the receipt's text), so that a replay applies it
    without calling the model (ADR 0026)."""

    wire_name: ClassVar[str] = "memory_write_applied"

    receipt: str
    intent_seq: int
    outcome: WriteOutcome
    after_restart: bool


@dataclass(frozen=True, slots=True)
class MemoryWriteFailed(DomainEvent):
    """An intent the processor refused on apply (a reference removed or shadowed, a cycle a
    write in between closed, the embedder down); nothing of it was written."""

    wire_name: ClassVar[str] = "memory_write_failed"
    # 2: `replay_owed` (ADR 0108). A failure for good is still written at version 1, as
    # before; one owed a replay at 2, which an older build refuses to read rather than take
    # for a failure for good and then meet the replay's outcome.
    version: ClassVar[int] = 2

    receipt: str
    intent_seq: int
    reason: str
    after_restart: bool
    # The cause was transient (the embedder did not answer) at the write's first attempt:
    # the next server on the session replays it once (ADR 0108). False: failed for good.
    replay_owed: bool = False

    def wire_version(self) -> int:
        return 2 if self.replay_owed else 1


@dataclass(frozen=True, slots=True)
class MemoryAccessed(DomainEvent):
    """Recalls returned these concepts this many times since the last such event: access
    counts, batched off the read path (ADR 0027)."""

    wire_name: ClassVar[str] = "memory_accessed"

    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class ChunkExtracted(DomainEvent):
    """knowledge_process_chunk's extraction of an episode's chunk (issue 14): which extractor
    and model, and the entities the chunk mentions (new or resolved to stored ones), so a
    replay rebuilds the mentions without calling a model. The entities and edges themselves
    are the EntityCreated / RelationshipCreated events beside it; dropped edges are never
    stored (K-ING-013)."""

    wire_name: ClassVar[str] = "chunk_extracted"

    episode_uuid: EpisodeUuid
    extractor: str
    model: str
    mentioned: tuple[EntityUuid, ...]
    edges: tuple[EdgeUuid, ...]  # the edges the chunk states, new or already stored


@dataclass(frozen=True, slots=True)
class ConceptsCanonized(DomainEvent):
    """One canonization cycle's transitions, in the order they apply (ADR 0031): each a
    `CanonHop` (node_id, from_status, to_status, blast_radius, cause, last_demotion_time,
    superseded_by). One event per cycle that moved anything, so a killed cycle leaves all of
    it or none; a replay sets every status from these, never running the policy again."""

    wire_name: ClassVar[str] = "concepts_canonized"

    transitions: tuple[CanonHop, ...]


@dataclass(frozen=True, slots=True)
class GcClockStarted(DomainEvent):
    """The session's GC clock (`last_gc_at`) started, or was re-anchored from the future, at
    `occurred_at` (canonization.md §8 "Clock start")."""

    wire_name: ClassVar[str] = "gc_clock_started"


@dataclass(frozen=True, slots=True)
class GcSwept(DomainEvent):
    """One garbage-collection sweep: the concepts it collected (`Collected`), the ones
    it deferred, the survivors whose gc_survived it bumped now (the rest drain by GcBumped),
    its lambo_stats figures, and `epoch`, the session's mutation count it swept at (the new
    `last_gc_epoch`; `last_gc_at` is `occurred_at`)."""

    wire_name: ClassVar[str] = "gc_swept"

    trigger: str
    collected: tuple[Collected, ...]
    deferred: list[str]
    bumped: list[str]
    figures: SweepFigures
    epoch: int


@dataclass(frozen=True, slots=True)
class GcBumped(DomainEvent):
    """A daemon tick drained these survivors' pending gc_survived bumps."""

    wire_name: ClassVar[str] = "gc_bumped"

    bumped: list[str]


@dataclass(frozen=True, slots=True)
class EntitiesMerged(DomainEvent):
    """knowledge_merge_entities (P-124), as decided from the state it ran against: the aliases
    became `Merged` tombstones whose `merged_into` is the canonical; `rewritten` edges had each
    alias endpoint replaced by the canonical; `self_loops` and `duplicates` (each a duplicate of
    the kept edge at the same index of `duplicate_of`) were invalidated; `foreign_edges` (of
    another group) were left as they are. A replay applies these lists, never re-deciding."""

    wire_name: ClassVar[str] = "entities_merged"

    canonical_uuid: EntityUuid
    alias_uuids: tuple[EntityUuid, ...]
    rewritten: tuple[EdgeUuid, ...]
    self_loops: tuple[EdgeUuid, ...]
    duplicates: tuple[EdgeUuid, ...]
    duplicate_of: tuple[EdgeUuid, ...]
    foreign_edges: tuple[EdgeUuid, ...]


@dataclass(frozen=True, slots=True)
class RelationshipInvalidated(DomainEvent):
    """An active edge was invalidated (`invalid_at` = `occurred_at`) by a correction's
    delete_edge; it stays readable by uuid, and leaves the active reads and the search indexes."""

    wire_name: ClassVar[str] = "relationship_invalidated"

    edge_uuid: EdgeUuid
    reason: str


@dataclass(frozen=True, slots=True)
class CorrectionsApplied(DomainEvent):
    """These corrections of knowledge-corrections.yaml were applied to this group (their
    events precede this one in the same commit); validate and apply skip them from now on."""

    wire_name: ClassVar[str] = "corrections_applied"

    correction_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CrossGroupEdgeAdded(DomainEvent):
    """knowledge_add_cross_group_edge (P-131): an edge of this group whose endpoints may live
    in other groups. `src` / `dst` are the pointers of the sides named by a foreign endpoint
    ({source_group_id, endpoint_name, resolved_uuid, bound_at_seq, binding_state}), None for a
    side given by uuid; `source_uuid` / `target_uuid` are the entities the sides resolve to
    now (None while a pointer is unbound or ambiguous). The binding is recorded, so a replay
    never resolves a name again."""

    wire_name: ClassVar[str] = "cross_group_edge_added"

    edge_uuid: EdgeUuid
    source_uuid: EntityUuid | None
    target_uuid: EntityUuid | None
    predicate: str
    fact: str
    relation_type: str | None
    valid_at: datetime | None
    src: dict[str, Any] | None
    dst: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class PointersRebound(DomainEvent):
    """knowledge_rebind_pointers (P-132) for this group's edges whose pointers name
    `source_group_id`: each changed pointer's new binding ({edge_uuid, side, resolved_uuid,
    bound_at_seq, binding_state}), and the edges a binding would have turned into a self-loop
    or a duplicate of an active edge (`duplicate_of`, index by index), which are invalidated
    instead (the merge policy: ADR 0034, 0041)."""

    wire_name: ClassVar[str] = "pointers_rebound"

    source_group_id: str
    bindings: list[dict[str, Any]]
    self_loops: tuple[EdgeUuid, ...]
    duplicates: tuple[EdgeUuid, ...]
    duplicate_of: tuple[EdgeUuid, ...]


@dataclass(frozen=True, slots=True)
class RelationTypesAssigned(DomainEvent):
    """A typing run (canonicalize, backfill or reprocess: `tool`) set the relation_type of
    these edges, at the same index of `relation_types`, for the reason at that index of
    `reasons` (lexical, embedding_fallback, noise, residual, fact_prefix, llm, abstained).
    `run` is the run's settings and summary (threshold, scope, model). A replay applies these
    lists, never calling a model or the embedder (ADR 0042)."""

    wire_name: ClassVar[str] = "relation_types_assigned"

    tool: str
    edge_uuids: tuple[EdgeUuid, ...]
    relation_types: tuple[str, ...]
    reasons: tuple[str, ...]
    run: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EntityTypesAssigned(DomainEvent):
    """knowledge_reprocess_entity_types set these entities' labels (each the list at the same
    index of `labels`, the new type first); `run` is the run's scope, model and summary."""

    wire_name: ClassVar[str] = "entity_types_assigned"

    tool: str
    entity_uuids: tuple[EntityUuid, ...]
    labels: list[list[str]]
    run: dict[str, Any]


# Every event type, in the order they came (their wire names only grow); each is also in one
# of the EVENT_FAMILIES below.
EVENT_TYPES: tuple[type[DomainEvent], ...] = (
    EntityCreated,
    EntityRevised,
    RelationshipCreated,
    RelationshipRevised,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    SummaryEmbedded,
    MemoryWriteAccepted,
    MemoryWriteApplied,
    MemoryWriteFailed,
    MemoryAccessed,
    ConceptsCanonized,
    GcClockStarted,
    GcSwept,
    GcBumped,
    ChunkExtracted,
    EntitiesMerged,
    RelationshipInvalidated,
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    PointersRebound,
    RelationTypesAssigned,
    EntityTypesAssigned,
)


@dataclass(frozen=True, slots=True)
class EventFamily:
    """Event types about one subject, declared together: a projection reads whole families and
    names, of each, the events it handles and the ones it ignores; it ignores the events of the
    families it does not read without naming them (lcg.projections.dispatch). Every event
    type is in exactly one family, so a new one is declared by each projection that reads its
    family, and by no other (docs/adr/0057-event-families.md)."""

    name: str
    events: tuple[type[DomainEvent], ...]


# A group as a whole (knowledge_delete_by_group): every projection reads it.
GROUP_FAMILY = EventFamily("group", (GroupPurged,))
# The knowledge graph's entities, edges, episodes and what was extracted or embedded of them.
KNOWLEDGE_FAMILY = EventFamily(
    "knowledge",
    (
        EntityCreated,
        EntityRevised,
        RelationshipCreated,
        RelationshipRevised,
        EpisodeAdded,
        EpisodeDeleted,
        SummaryEmbedded,
        ChunkExtracted,
    ),
)
# Curation of the graph: merges and corrections (P-124, P-125).
CURATION_FAMILY = EventFamily(
    "curation", (EntitiesMerged, RelationshipInvalidated, CorrectionsApplied)
)
# Edges whose endpoints live in other groups, and their pointers (P-131, P-132).
CROSS_GROUP_FAMILY = EventFamily("cross_group", (CrossGroupEdgeAdded, PointersRebound))
# Relation and entity types set by a typing run (ADR 0042).
TYPING_FAMILY = EventFamily("typing", (RelationTypesAssigned, EntityTypesAssigned))
# Lambo memory writes (intents and their outcomes) and the access counts of recalls.
MEMORY_FAMILY = EventFamily(
    "memory", (MemoryWriteAccepted, MemoryWriteApplied, MemoryWriteFailed, MemoryAccessed)
)
# The memory's upkeep: canonization cycles and garbage collection (canonization.md).
CANONIZATION_FAMILY = EventFamily(
    "canonization", (ConceptsCanonized, GcClockStarted, GcSwept, GcBumped)
)
EVENT_FAMILIES: tuple[EventFamily, ...] = (
    GROUP_FAMILY,
    KNOWLEDGE_FAMILY,
    CURATION_FAMILY,
    CROSS_GROUP_FAMILY,
    TYPING_FAMILY,
    MEMORY_FAMILY,
    CANONIZATION_FAMILY,
)

Upcaster: TypeAlias = Callable[[JsonDict], JsonDict]
# (wire_name, from_version) -> function turning a v`from_version` payload into the next one.
UPCASTERS: dict[tuple[str, int], Upcaster] = {
    # A version-1 intent is an unscoped one: its payload reads as version 2 unchanged.
    ("memory_write_accepted", 1): lambda payload: payload,
    # A version-2 intent (a derive or an action) reads as version 3 unchanged (ADR 0095).
    ("memory_write_accepted", 2): lambda payload: payload,
    # A version-1 failure is a failure for good: no replay is owed (ADR 0108).
    ("memory_write_failed", 1): lambda payload: {"replay_owed": False, **payload},
}


class UnknownEventType(Exception):
    """A stored event names a wire type or version this build cannot read."""


_DATETIME = "datetime"
_OPTIONAL_DATETIME = "datetime?"
_TUPLE = "tuple"
_PLAIN = "plain"
_RECORD = "record"  # a lcg.domain.memory.records value: its to_wire / from_wire
_RECORDS = "records"  # a tuple of them: a JSON list


def _record_type(hint: object) -> type[Record] | None:
    return hint if isinstance(hint, type) and issubclass(hint, Record) else None


def _field_kinds(cls: type[DomainEvent]) -> tuple[tuple[str, str, type[Record] | None], ...]:
    hints = get_type_hints(cls)
    kinds: list[tuple[str, str, type[Record] | None]] = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        text = str(hint)
        record = _record_type(hint)
        items = get_args(hint) if text.startswith("tuple") else ()
        element = _record_type(items[0]) if items else None
        if record is not None:
            kinds.append((field.name, _RECORD, record))
        elif element is not None:
            kinds.append((field.name, _RECORDS, element))
        elif hint is datetime:
            kinds.append((field.name, _DATETIME, None))
        elif "datetime" in text:
            kinds.append((field.name, _OPTIONAL_DATETIME, None))
        elif text.startswith("tuple"):
            kinds.append((field.name, _TUPLE, None))
        else:
            kinds.append((field.name, _PLAIN, None))
    return tuple(kinds)


class EventCodec:
    """Turns events into JSON-ready payloads and back, upcasting old versions."""

    def __init__(
        self,
        types: tuple[type[DomainEvent], ...] = EVENT_TYPES,
        upcasters: Mapping[tuple[str, int], Upcaster] | None = None,
    ) -> None:
        self._by_wire: dict[str, type[DomainEvent]] = {}
        self._kinds: dict[type[DomainEvent], tuple[tuple[str, str, type[Record] | None], ...]] = {}
        for cls in types:
            if not cls.wire_name or cls.wire_name in self._by_wire:
                raise ValueError(f"event {cls.__name__} needs a unique wire_name")
            self._by_wire[cls.wire_name] = cls
            self._kinds[cls] = _field_kinds(cls)
        self._upcasters = dict(UPCASTERS if upcasters is None else upcasters)

    def encode(self, event: DomainEvent) -> JsonDict:
        """The event's fields as JSON-ready values, plus `_v`, its version."""
        payload: JsonDict = {"_v": event.wire_version()}
        for name, kind, _ in self._kinds[type(event)]:
            value = getattr(event, name)
            if kind == _TUPLE:
                value = list(value)
            elif kind == _RECORD:
                value = value.to_wire()
            elif kind == _RECORDS:
                value = [item.to_wire() for item in value]
            elif value is not None and kind in (_DATETIME, _OPTIONAL_DATETIME):
                value = value.isoformat()
            payload[name] = value
        return payload

    def decode(self, wire_name: str, payload: JsonDict) -> DomainEvent:
        """Rebuild the event named `wire_name` from its stored payload."""
        cls = self._by_wire.get(wire_name)
        if cls is None:
            raise UnknownEventType(f"unknown event type {wire_name!r}")
        stored_version = payload.pop("_v", 1)
        if stored_version != cls.version:
            payload = self._upcast(cls, wire_name, stored_version, payload)
        # Positional arguments in field order; only tuples, records and datetimes need
        # converting (this runs once per event of every replay: ADR 0017).
        args: list[Any] = [
            payload[name]
            if kind == _PLAIN
            else tuple(payload[name])
            if kind == _TUPLE
            else _decode_record(kind, record, payload[name])
            if record is not None
            else None
            if payload[name] is None
            else datetime.fromisoformat(payload[name])
            for name, kind, record in self._kinds[cls]
        ]
        return cls(*args)

    def _upcast(
        self, cls: type[DomainEvent], wire_name: str, stored_version: int, payload: JsonDict
    ) -> JsonDict:
        while stored_version < cls.version:
            upcast = self._upcasters.get((wire_name, stored_version))
            if upcast is None:
                raise UnknownEventType(
                    f"no upcaster for {wire_name!r} from version {stored_version}"
                )
            payload = upcast(payload)
            stored_version += 1
        if stored_version > cls.version:
            raise UnknownEventType(
                f"{wire_name!r} version {stored_version} is newer than this build "
                f"(reads up to {cls.version}); upgrade lcg"
            )
        return payload


def _decode_record(kind: str, record: type[Record], value: Any) -> Any:
    if kind == _RECORD:
        return record.from_wire(value)
    return tuple(record.from_wire(item) for item in value)
