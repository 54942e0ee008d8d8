"""Event families: what each projection folds is declared by family, and folds what it did."""

from __future__ import annotations

import pytest

from lcg.domain.events import DomainEvent
from lcg.projections import registry
from lcg.projections.cypher import store as cypher_store

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


def folded() -> dict[str, frozenset[type[DomainEvent]]]:
    """The events each projection handles, the Cypher mirror included."""
    handles = {p.name: p.handles for p in registry.projections()}
    handles["cypher"] = cypher_store.HANDLES
    return handles


@pytest.mark.parametrize("name", FOLDED_BEFORE_FAMILIES)
def test_each_projection_folds_the_events_it_folded_before_the_families(name: str) -> None:
    now = {cls.wire_name for cls in folded()[name] if cls.wire_name in EVENTS_BEFORE_FAMILIES}
    assert now == set(FOLDED_BEFORE_FAMILIES[name].split())
