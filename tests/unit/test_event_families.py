"""Event families: what each projection folds is declared by family, and folds what it did."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest

from lcg.domain.events import (
    EVENT_FAMILIES,
    EVENT_TYPES,
    GROUP_FAMILY,
    KNOWLEDGE_FAMILY,
    MEMORY_FAMILY,
    DomainEvent,
    EventFamily,
    GroupPurged,
    MemoryAccessed,
    MemoryWriteAccepted,
    MemoryWriteApplied,
    MemoryWriteFailed,
)
from lcg.domain.ids import GroupId, Seq
from lcg.projections import registry
from lcg.projections.cypher import store as cypher_store
from lcg.projections.dispatch import EventTable, Subscription, UnhandledEvent
from lcg.projections.wal.store import RecordedEvent

# What each projection folded of the 24 event types there were when the families came (issue 25
# item 2), dumped from the per-projection lists of handled and ignored events they replaced.
FOLDED_BEFORE_FAMILIES: dict[str, str] = {
    "graph": "entity_created entity_revised relationship_created relationship_revised"
    " episode_added episode_deleted group_purged chunk_extracted entities_merged"
    " relationship_invalidated corrections_applied cross_group_edge_added pointers_rebound"
    " relation_types_assigned entity_types_assigned",
    "text": "entity_created entity_revised relationship_created relationship_revised"
    " episode_added episode_deleted group_purged memory_write_applied gc_swept entities_merged"
    " relationship_invalidated cross_group_edge_added pointers_rebound",
    "vectors": "entity_created entity_revised relationship_created episode_added episode_deleted"
    " group_purged summary_embedded memory_write_applied gc_swept entities_merged"
    " relationship_invalidated cross_group_edge_added pointers_rebound",
    "memory": "group_purged memory_write_accepted memory_write_applied memory_write_failed"
    " memory_accessed gc_swept",
    "canonization": "group_purged memory_write_applied concepts_canonized gc_clock_started"
    " gc_swept gc_bumped",
    "cypher": "entity_created entity_revised relationship_created relationship_revised"
    " group_purged entities_merged relationship_invalidated cross_group_edge_added"
    " pointers_rebound relation_types_assigned entity_types_assigned",
}
# Each of the 24 was folded by some projection; an event type added since is not pinned here.
EVENTS_BEFORE_FAMILIES = frozenset(" ".join(FOLDED_BEFORE_FAMILIES.values()).split())
SUBSCRIPTIONS = [p.subscription for p in registry.projections()] + [cypher_store.SUBSCRIPTION]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def folded() -> dict[str, frozenset[type[DomainEvent]]]:
    """The events each projection handles, the Cypher mirror included."""
    return {s.name: s.handles for s in SUBSCRIPTIONS}


@pytest.mark.parametrize("name", FOLDED_BEFORE_FAMILIES)
def test_each_projection_folds_the_events_it_folded_before_the_families(name: str) -> None:
    now = {cls.wire_name for cls in folded()[name] if cls.wire_name in EVENTS_BEFORE_FAMILIES}
    assert now == set(FOLDED_BEFORE_FAMILIES[name].split())


def test_every_event_type_is_in_exactly_one_family() -> None:
    members = [cls for family in EVENT_FAMILIES for cls in family.events]
    assert sorted(cls.__name__ for cls in members) == sorted(cls.__name__ for cls in EVENT_TYPES)
    assert len({family.name for family in EVENT_FAMILIES}) == len(EVENT_FAMILIES)


def test_every_family_is_read_by_some_projection() -> None:
    """A new family is a decision about who reads it, not a way to be ignored by everyone."""
    read = {family for s in SUBSCRIPTIONS for family in s.reads}
    assert [f.name for f in EVENT_FAMILIES if f not in read] == []


@dataclass(frozen=True, slots=True)
class ConceptPinned(DomainEvent):
    """An event type added to a family after the projections were declared."""

    wire_name: ClassVar[str] = "concept_pinned"


def test_a_new_event_of_a_family_a_projection_reads_is_unclaimed_until_it_is_declared() -> None:
    grown = EventFamily(MEMORY_FAMILY.name, (*MEMORY_FAMILY.events, ConceptPinned))
    handles = (MemoryWriteApplied,)
    ignores = (MemoryWriteAccepted, MemoryWriteFailed, MemoryAccessed)
    before = Subscription("p", reads=(grown,), handles=handles, ignores=ignores)
    assert before.unclaimed == {ConceptPinned}
    handled = Subscription("p", reads=(grown,), handles=(*handles, ConceptPinned), ignores=ignores)
    assert handled.unclaimed == frozenset()
    ignored = Subscription("p", reads=(grown,), handles=handles, ignores=(*ignores, ConceptPinned))
    assert ignored.unclaimed == frozenset()


def test_the_events_of_a_family_a_projection_does_not_read_are_ignored_without_naming() -> None:
    table = EventTable("knowledge only", reads=(GROUP_FAMILY, KNOWLEDGE_FAMILY))
    assert set(MEMORY_FAMILY.events) <= table.ignores
    assert table.named_ignores == frozenset()
    met: list[str] = []

    @table.on(GroupPurged)
    def _purged(conn: sqlite3.Connection, group: GroupId, run: Any) -> None:
        met.append("purged")

    events = [
        RecordedEvent(GroupId("g"), Seq(1), MemoryAccessed(T0, {"c": 1})),
        RecordedEvent(GroupId("g"), Seq(2), GroupPurged(T0)),
    ]
    table.apply(sqlite3.connect(":memory:"), events)
    assert met == ["purged"]


def test_naming_an_event_of_a_family_a_projection_does_not_read_is_refused() -> None:
    with pytest.raises(ValueError, match="MemoryAccessed is of the memory family, which p does"):
        Subscription("p", reads=(KNOWLEDGE_FAMILY,), ignores=(MemoryAccessed,))
    table = EventTable("p", reads=(KNOWLEDGE_FAMILY,))
    with pytest.raises(ValueError, match="GroupPurged is of the group family, which p does not"):
        table.on(GroupPurged)(lambda conn, group, run: None)


def test_an_event_in_no_family_is_refused_and_is_an_error_when_met() -> None:
    with pytest.raises(ValueError, match="ConceptPinned is in no event family"):
        Subscription("p", reads=EVENT_FAMILIES, ignores=(ConceptPinned,))
    table = EventTable("p", reads=(GROUP_FAMILY,))
    event = RecordedEvent(GroupId("g"), Seq(1), ConceptPinned(T0))
    with pytest.raises(UnhandledEvent, match="neither handles nor ignores ConceptPinned"):
        table.apply(sqlite3.connect(":memory:"), [event])
