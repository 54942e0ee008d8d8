"""What a sweep is told about a session (canonization.md §8): a concept's facts before anything
happened to it, the columns' shape check, and a re-sent edge counted once unless the caller
says its edges are already distinct."""

from __future__ import annotations

import dataclasses

import pytest

from lcg.domain.memory.gc import (
    ConceptFacts,
    EdgeKind,
    FactColumns,
    daemon_scores,
)
from tests.unit.test_memory_gc import KNOBS, NOW, OLD, cid, concept, edge, session


def test_a_fresh_concept_was_never_recalled_never_survived_a_sweep_and_is_no_root_goal() -> None:
    fresh = ConceptFacts(cid(1), concept(1).concept_type, concept(1).status, OLD)
    assert (fresh.last_accessed, fresh.access_count, fresh.gc_survived, fresh.root_goal) == (
        None,
        0,
        0,
        False,
    )


def test_columns_of_different_lengths_are_refused() -> None:
    columns = FactColumns.of(session([concept(1), concept(2)], []))
    with pytest.raises(ValueError, match=r"^every concept column needs one value per concept$"):
        dataclasses.replace(columns, gc_survived=[0])


def test_a_re_sent_edge_counts_once_unless_the_edges_are_declared_distinct() -> None:
    facts = session([concept(1), concept(2), concept(3)], [edge(EdgeKind.DEPENDS_ON, 1, 2)])
    once = FactColumns.of(facts)
    assert once.edges_distinct is False
    twice = dataclasses.replace(once, edges=[*once.edges, ("depends_on", cid(1), cid(2))])
    span = (OLD, NOW)
    assert daemon_scores(twice, span, KNOBS) == daemon_scores(once, span, KNOBS)
    trusted = dataclasses.replace(twice, edges_distinct=True)
    assert daemon_scores(trusted, span, KNOBS) != daemon_scores(once, span, KNOBS)
