"""Events: stable wire names, JSON round-trips, upcasting of old versions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from lcg.domain.events import (
    EVENT_TYPES,
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    DomainEvent,
    EntitiesMerged,
    EntityCreated,
    EntityTypesAssigned,
    EpisodeAdded,
    EventCodec,
    JsonDict,
    MemoryWriteFailed,
    PointersRebound,
    RelationshipCreated,
    RelationshipInvalidated,
    RelationTypesAssigned,
    UnknownEventType,
)
from lcg.domain.ids import EdgeUuid, EntityUuid, EpisodeUuid

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_wire_names_are_stable() -> None:
    """Renaming a wire name orphans every stored event of that type: this list only grows."""
    assert [cls.wire_name for cls in EVENT_TYPES] == [
        "entity_created",
        "entity_revised",
        "relationship_created",
        "relationship_revised",
        "episode_added",
        "episode_deleted",
        "group_purged",
        "summary_embedded",
        "memory_write_accepted",
        "memory_write_applied",
        "memory_write_failed",
        "memory_accessed",
        "concepts_canonized",
        "gc_clock_started",
        "gc_swept",
        "gc_bumped",
        "chunk_extracted",
        "entities_merged",
        "relationship_invalidated",
        "corrections_applied",
        "cross_group_edge_added",
        "pointers_rebound",
        "relation_types_assigned",
        "entity_types_assigned",
    ]


def test_events_are_frozen() -> None:
    event = EntityCreated(NOW, EntityUuid("u"), "Ada", ("Person",), "", "{}")
    with pytest.raises(AttributeError):
        event.name = "Bob"  # type: ignore[misc]


@pytest.mark.parametrize(
    "event",
    [
        EntityCreated(NOW, EntityUuid("u"), "Ada", ("Person", "X"), "s", '{"a":1}'),
        RelationshipCreated(
            NOW, EdgeUuid("e"), EntityUuid("a"), EntityUuid("b"), "P", "f", None, "{}", None
        ),
        RelationshipCreated(
            NOW,
            EdgeUuid("e"),
            EntityUuid("a"),
            EntityUuid("b"),
            "P",
            "f",
            "T",
            "{}",
            datetime(1843, 9, 1, tzinfo=UTC),
        ),
        EpisodeAdded(NOW, EpisodeUuid("p"), "n", "body", "text", "", NOW, "c1", "notes.md"),
        EntitiesMerged(
            NOW,
            EntityUuid("c"),
            (EntityUuid("a1"), EntityUuid("a2")),
            (EdgeUuid("e1"),),
            (EdgeUuid("e2"),),
            (EdgeUuid("e3"),),
            (EdgeUuid("e1"),),
            (),
        ),
        RelationshipInvalidated(NOW, EdgeUuid("e"), "correction drop-1"),
        CorrectionsApplied(NOW, ("merge-bob", "fix-ada")),
        CrossGroupEdgeAdded(
            NOW,
            EdgeUuid("x"),
            EntityUuid("a"),
            None,
            "KNOWS",
            "a knows b",
            None,
            datetime(1843, 9, 1, tzinfo=UTC),
            None,
            {
                "source_group_id": "people",
                "endpoint_name": "B",
                "resolved_uuid": None,
                "bound_at_seq": None,
                "binding_state": "unbound",
            },
        ),
        PointersRebound(
            NOW,
            "people",
            [
                {
                    "edge_uuid": "x",
                    "side": "dst",
                    "source_group_id": "people",
                    "endpoint_name": "B",
                    "resolved_uuid": "b",
                    "bound_at_seq": 4,
                    "binding_state": "bound",
                }
            ],
            (EdgeUuid("y"),),
            (EdgeUuid("z"),),
            (EdgeUuid("w"),),
        ),
        RelationTypesAssigned(
            NOW,
            "knowledge_canonicalize_relations",
            (EdgeUuid("e1"), EdgeUuid("e2")),
            ("HOLDS", "UNCLASSIFIED"),
            ("lexical", "residual"),
            {"embedding_threshold": 0.7},
        ),
        EntityTypesAssigned(
            NOW, "knowledge_reprocess_entity_types", (EntityUuid("a"),), [["Person"]], {}
        ),
    ],
)
def test_codec_round_trips_every_field(event: DomainEvent) -> None:
    codec = EventCodec()
    payload = codec.encode(event)
    assert payload["_v"] == 1
    assert codec.decode(event.wire_name, dict(payload)) == event


def test_unknown_wire_name_is_an_error() -> None:
    with pytest.raises(UnknownEventType):
        EventCodec().decode("no_such_event", {"_v": 1})


@dataclass(frozen=True, slots=True)
class NoteTaken(DomainEvent):
    """Version 2 split `text` into `title` and `body`."""

    wire_name: ClassVar[str] = "note_taken"
    version: ClassVar[int] = 2

    title: str
    body: str


def upcast_note_v1(payload: JsonDict) -> JsonDict:
    title, _, body = payload.pop("text").partition("\n")
    return {**payload, "title": title, "body": body}


def test_old_versions_are_upcast_on_read() -> None:
    codec = EventCodec((NoteTaken,), {("note_taken", 1): upcast_note_v1})
    stored_v1 = {"_v": 1, "occurred_at": NOW.isoformat(), "text": "Title\nBody"}
    assert codec.decode("note_taken", stored_v1) == NoteTaken(NOW, "Title", "Body")
    current = NoteTaken(NOW, "T", "B")
    assert codec.decode("note_taken", codec.encode(current)) == current


def test_missing_upcaster_and_newer_versions_are_clear_errors() -> None:
    codec = EventCodec((NoteTaken,), {})
    with pytest.raises(UnknownEventType, match="no upcaster"):
        codec.decode("note_taken", {"_v": 1, "occurred_at": NOW.isoformat(), "text": "x"})
    with pytest.raises(UnknownEventType, match="upgrade lcg"):
        codec.decode("note_taken", {"_v": 3, "occurred_at": NOW.isoformat()})


def test_m_sta_105_106_a_failure_logged_before_replays_existed_reads_as_failed_for_good() -> None:
    """ADR 0108 on ADR 0003: a failure owed a replay is written at version 2 (an older build
    refuses it rather than take it for a failure for good); any other failure is still
    written at version 1, and a stored version-1 failure (no `replay_owed`) reads as one for
    good, so an old log replays unchanged."""
    codec = EventCodec()
    stored_v1 = {
        "_v": 1,
        "occurred_at": NOW.isoformat(),
        "receipt": "r",
        "intent_seq": 3,
        "reason": "the embedder failed",
        "after_restart": False,
    }
    old = codec.decode("memory_write_failed", dict(stored_v1))
    assert old == MemoryWriteFailed(NOW, "r", 3, "the embedder failed", False)
    assert isinstance(old, MemoryWriteFailed)
    assert old.replay_owed is False
    owed = MemoryWriteFailed(NOW, "r", 3, "the embedder failed", False, replay_owed=True)
    assert codec.encode(owed)["_v"] == 2
    assert codec.decode("memory_write_failed", codec.encode(owed)) == owed
    assert codec.encode(old)["_v"] == 1
    assert codec.decode("memory_write_failed", codec.encode(old)) == old
