"""The sweep's cap and order (canonization.md §8): `collect_fraction` never collects more than
every unprotected concept, and the score cut takes the concept furthest under its type's bar
first (score / bar, not score x bar: bars differ by type)."""

from __future__ import annotations

from datetime import timedelta

from lcg.domain.memory.gc import CollectReason, EdgeKind, GcKnobs
from lcg.domain.memory.gc.sweep import collection_cap
from lcg.domain.memory.text import ConceptType
from tests.unit.test_memory_gc import NOW, OLD, cid, concept, derived, edge, session, sweep


def test_the_cap_is_at_most_every_unprotected_concept_whatever_the_fraction() -> None:
    assert collection_cap(100, GcKnobs(collect_fraction=1.5, collect_floor=0)) == 100
    assert collection_cap(100, GcKnobs(collect_fraction=0.0, collect_floor=3)) == 3
    assert collection_cap(1000, GcKnobs()) == 50  # 5 % over the floor of 32
    assert collection_cap(1000, GcKnobs(collect_floor=0)) == 50
    assert collection_cap(10, GcKnobs()) == 32


def test_the_score_cut_collects_by_how_far_under_its_bar_a_concept_is() -> None:
    # one derives edge each; the Entity is older than the recency window, the Resource 300 days
    # old: Entity 0.0634 / 0.10 = 0.63, Resource 0.0691 / 0.12 = 0.58 (the Resource is further
    # under its bar, though 0.0691 x 0.12 > 0.0634 x 0.10)
    entity = concept(1, ConceptType.ENTITY, created=OLD)
    resource = concept(2, ConceptType.RESOURCE, created=NOW - timedelta(days=300))
    facts = session([entity, resource], [derived(1), derived(2)])
    assert {c.node_id: c.reason for c in sweep(facts).collected} == {
        cid(1): CollectReason.UNDER_BAR,
        cid(2): CollectReason.UNDER_BAR,
    }
    one = sweep(facts, knobs=GcKnobs(collect_floor=1, collect_fraction=0.01))
    assert [c.node_id for c in one.collected] == [cid(2)]
    assert one.deferred == (cid(1),)


def test_a_cascade_takes_only_the_room_the_cap_leaves() -> None:
    # B (Logic: no bar) hangs only on A, which the score cut collects: B is cut off after it
    a = concept(1, ConceptType.ENTITY, created=OLD)
    b = concept(2, ConceptType.LOGIC, created=OLD)
    facts = session([a, b], [derived(1), edge(EdgeKind.DEPENDS_ON, 2, 1)])
    assert {c.node_id: c.reason for c in sweep(facts).collected} == {
        cid(1): CollectReason.UNDER_BAR,
        cid(2): CollectReason.CASCADE,
    }
    capped = sweep(facts, knobs=GcKnobs(collect_floor=1, collect_fraction=0.01))
    assert [c.node_id for c in capped.collected] == [cid(1)]
    assert capped.deferred == (cid(2),)
