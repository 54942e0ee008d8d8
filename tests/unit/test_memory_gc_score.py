"""The daemon score with no interaction span, and the eviction score's renormalisation and
clamp (canonization.md §3 and §8), worked out by hand for one lone concept."""

from __future__ import annotations

import dataclasses
import math

import pytest

from lcg.domain.memory.gc import FactColumns, daemon_scores
from lcg.domain.memory.gc.graph import build_graph
from lcg.domain.memory.gc.score import eviction_scores
from lcg.domain.memory.text import ConceptType
from tests.unit.test_memory_gc import KNOBS, NOW, OLD, cid, concept, session


def test_a_session_without_a_span_gives_every_concept_a_recency_of_1() -> None:
    lone = session([concept(1)], [], hub=False)
    # 0.25 x R(1) + F, A, D and the bonus 0 + Entity's modifier 0.05
    assert daemon_scores(lone, None, KNOBS) == {cid(1): pytest.approx(0.30)}
    assert daemon_scores(lone, (NOW, NOW), KNOBS) == {cid(1): pytest.approx(0.30)}


def test_the_eviction_score_renormalises_the_live_dimensions_and_clamps_at_0() -> None:
    fresh = concept(1, created=NOW)
    forgotten = concept(2, ConceptType.OBSERVATION, created=OLD)
    graph = build_graph(FactColumns.of(session([fresh, forgotten], [], hub=False)))
    score = eviction_scores(graph, KNOBS, NOW)
    # R = 1, A = D = 0: 0.25 / (0.25 + 0.20 + 0.35) + Entity's 0.05
    assert score(0) == pytest.approx(0.25 / 0.80 + 0.05)
    # nothing live and Observation's -0.10: clamped to 0
    assert score(1) == 0.0


def test_a_score_that_is_not_finite_counts_as_0() -> None:
    # canonization.md §3: "non-finite values become 0" (an infinite weight makes R's term inf)
    fresh = concept(1, created=NOW)
    graph = build_graph(FactColumns.of(session([fresh], [], hub=False)))
    knobs = dataclasses.replace(KNOBS, weight_recency=math.inf)
    assert eviction_scores(graph, knobs, NOW)(0) == 0.0
    assert daemon_scores(session([fresh], [], hub=False), None, knobs) == {cid(1): 0.0}


def test_recency_places_the_last_touch_within_the_sessions_span() -> None:
    # R = (last touch - session start) / (session end - start): 1 at the end, 0 at the start
    span = (OLD, NOW)
    latest = session([concept(1, created=NOW)], [], hub=False)
    first = session([concept(1, created=OLD)], [], hub=False)
    assert daemon_scores(latest, span, KNOBS) == {cid(1): pytest.approx(0.30)}
    assert daemon_scores(first, span, KNOBS) == {cid(1): pytest.approx(0.05)}
