"""Search's pure parts: fusing legs and expanding through the graph (no storage, no model)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from lcg.queries.fusion import fuse
from lcg.queries.search import SearchContext, _expand


def test_rrf_puts_first_in_every_leg_at_one_and_max_takes_the_best_leg() -> None:
    legs = {"text": [("a", 9.0), ("b", 3.0)], "name_vector": [("a", 0.8), ("c", 0.7)]}
    rrf = {e.key: e for e in fuse(legs, "rrf")}
    assert rrf["a"].score == pytest.approx(1.0)
    assert rrf["a"].ranks == {"text": 1, "name_vector": 1}
    assert rrf["b"].score < rrf["a"].score
    best = {e.key: e for e in fuse(legs, "max")}
    assert best["b"].score == pytest.approx(3.0 / 9.0)
    assert best["c"].score == pytest.approx(0.7)


def test_graph_expansion_adds_neighbours_of_strong_hits_at_a_decayed_score() -> None:
    fused = fuse({"text": [("ada", 3.0), ("bob", 1.0)]}, "rrf")
    neighbours = {"ada": {"engine": "ada"}, "engine": {"babbage": "engine"}}

    def around(keys: list[str]) -> dict[str, str]:
        return {n: via for key in keys for n, via in neighbours.get(key, {}).items()}

    # _expand reads nothing from the context but expand_depth.
    nothing: Any = None
    ctx = SearchContext(conn=nothing, vectors=nothing, embed_query=nothing, expand_depth=2)
    expanded = {e.key: e for e in _expand(ctx, fused, around)}
    assert expanded["engine"].ranks == {"graph": 1}
    assert expanded["babbage"].ranks == {"graph": 2}
    assert expanded["engine"].score == pytest.approx(expanded["ada"].score * 0.5)
    assert expanded["babbage"].score == pytest.approx(expanded["ada"].score * 0.25)
    one_hop = {e.key for e in _expand(replace(ctx, expand_depth=1), fused, around)}
    assert one_hop == {"ada", "bob", "engine"}


@pytest.mark.parametrize("fusion", ["rrf", "max"])
def test_equal_scores_rank_by_key_whatever_order_the_legs_return_them(fusion: Any) -> None:
    """Issue 9: after a rebuild, ties came back in another order (FAISS and FTS5 return equal
    scores in storage order). Ties now rank by key, so the order never depends on storage."""
    text = [("c", 2.0), ("a", 2.0), ("d", 1.0), ("b", 2.0)]
    vector = [("d", 0.5), ("b", 0.5), ("a", 0.5)]
    expected = [e.key for e in fuse({"text": text, "fact_vector": vector}, fusion)]
    for shift in range(1, 4):
        turned = {"text": text[shift:] + text[:shift], "fact_vector": vector[::-1]}
        again = fuse(turned, fusion)
        assert [e.key for e in again] == expected
        assert {e.key: e.ranks for e in again} == {
            e.key: e.ranks for e in fuse({"text": text, "fact_vector": vector}, fusion)
        }
    first_three = [e.key for e in fuse({"text": text}, fusion)][:3]
    assert first_three == ["a", "b", "c"]


def test_issue_31_weighted_rrf_and_convex_scale_each_legs_terms() -> None:
    """ADR 0090: rrf adds weight / (k + rank) per leg, convex adds weight x the normalised
    score; both divided by what first place in every leg scores. A leg not named weighs 1."""
    legs = {"text": [("a", 8.0), ("b", 4.0)], "passage_vector": [("b", 0.9), ("c", 0.6)]}
    weights = {"passage_vector": 0.25}
    rrf = {e.key: e.score for e in fuse(legs, "rrf", 60, weights=weights)}
    best = 1.25 / 61
    assert rrf["a"] == pytest.approx((1 / 61) / best)
    assert rrf["b"] == pytest.approx((1 / 62 + 0.25 / 61) / best)
    assert rrf["c"] == pytest.approx((0.25 / 62) / best)
    assert [e.key for e in fuse(legs, "rrf", 60, weights=weights)] == ["b", "a", "c"]
    assert [e.key for e in fuse(legs, "rrf", 60, weights={"passage_vector": 0.0})] == [
        "a",
        "b",
        "c",
    ]
    convex = {
        e.key: e.score for e in fuse(legs, "convex", weights={"text": 0.6, "passage_vector": 0.4})
    }
    assert convex["a"] == pytest.approx(0.6 * 1.0)
    assert convex["b"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.9)
    assert convex["c"] == pytest.approx(0.4 * 0.6)
    # unweighted rrf is as before: first in every leg scores 1.0
    assert fuse({"text": [("a", 1.0)], "passage_vector": [("a", 0.5)]}, "rrf")[0].score == (
        pytest.approx(1.0)
    )
