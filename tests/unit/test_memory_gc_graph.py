"""Indexing a session for a sweep (canonization.md §8): a long pass pauses before each chunk of
`PAUSE_EVERY` items, and an edge to a concept the session does not list, or from a concept to
itself, connects and scores nothing."""

from __future__ import annotations

import pytest

from lcg.domain.memory.gc import PAUSE_EVERY, EdgeKind, FactColumns, daemon_scores, no_pause
from lcg.domain.memory.gc.graph import bonus_sum, paced
from tests.unit.test_memory_gc import KNOBS, NOW, OLD, cid, concept, edge, session, sweep


def test_a_paced_pass_pauses_before_each_chunk_and_yields_every_item_once() -> None:
    assert PAUSE_EVERY == 512
    pauses: list[int] = []
    items = list(range(2 * PAUSE_EVERY + 1))
    assert list(paced(items, lambda: pauses.append(1))) == items
    assert len(pauses) == 3
    assert list(paced(items, no_pause)) == items


def test_an_edge_to_an_unlisted_concept_or_to_itself_changes_nothing() -> None:
    concepts = [concept(1), concept(2)]
    plain = session(concepts, [edge(EdgeKind.DEPENDS_ON, 1, 2)])
    noisy = session(
        concepts,
        [
            edge(EdgeKind.DEPENDS_ON, 1, 2),
            edge(EdgeKind.DEPENDS_ON, 1, 99),  # 99 is not in the session
            edge(EdgeKind.DEPENDS_ON, 99, 2),
            edge(EdgeKind.DEPENDS_ON, 2, 2),
        ],
    )
    span = (OLD, NOW)
    assert daemon_scores(FactColumns.of(noisy), span, KNOBS) == daemon_scores(
        FactColumns.of(plain), span, KNOBS
    )
    assert sweep(noisy) == sweep(plain)
    assert cid(99) not in daemon_scores(noisy, span, KNOBS)


def test_the_edge_bonus_adds_each_structural_edges_share() -> None:
    # canonization.md §3: Dependency and Causal 0.02, Hierarchical 0.015
    assert bonus_sum(1, 0, 0) == pytest.approx(0.02)
    assert bonus_sum(0, 1, 0) == pytest.approx(0.015)
    assert bonus_sum(0, 0, 1) == pytest.approx(0.02)
    assert bonus_sum(2, 1, 1) == pytest.approx(0.075)
