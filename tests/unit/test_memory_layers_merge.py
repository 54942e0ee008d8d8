"""A layered recall's merge by relevance (`[serve] layer_merge = "relevance"`, ADR 0107)
beside the rank-by-rank merge (ADR 0080): the pure rules, on hand-made hits."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.domain.memory.context import AlsoItem, HitView
from lcg.domain.memory.layers import LayerMerge, SessionHits, merge
from lcg.interfaces.config import Settings


def _view(node: str, score: float, content: str | None = None, *lines: str) -> HitView:
    return HitView(node, content or f"concept {node}", "Logic", score, warning_lines=lines)


def _order(
    own: SessionHits, layers: list[SessionHits], top_k: int, by: LayerMerge
) -> list[tuple[str, str]]:
    return [(session, view.node_id) for session, view in merge(own, layers, top_k, by).hits]


# the project: five weak hits; the layer: five strong ones
PROJECT = SessionHits("lambo", tuple(_view(f"p{i}", 0.10 - i / 100) for i in range(5)))
LAYER = SessionHits("general", tuple(_view(f"g{i}", 0.90 - i / 10) for i in range(5)))


def test_m_rec_240_245_by_relevance_a_weak_project_does_not_crowd_out_the_layer() -> None:
    assert _order(PROJECT, [LAYER], 5, "relevance") == [("general", f"g{i}") for i in range(5)]
    # rank by rank (layer_merge = "rank") gives the weak project every other slot
    assert _order(PROJECT, [LAYER], 5, "rank") == [
        ("lambo", "p0"),
        ("general", "g0"),
        ("lambo", "p1"),
        ("general", "g1"),
        ("lambo", "p2"),
    ]


def test_m_rec_240_245_by_relevance_a_strong_project_hit_precedes_a_weaker_layer_hit() -> None:
    own = SessionHits("lambo", (_view("p0", 0.8), _view("p1", 0.05)))
    layer = SessionHits("general", (_view("g0", 0.9), _view("g1", 0.6), _view("g2", 0.01)))
    assert _order(own, [layer], 4, "relevance") == [
        ("general", "g0"),
        ("lambo", "p0"),
        ("general", "g1"),
        ("lambo", "p1"),
    ]


def test_m_rec_240_245_by_relevance_a_tie_goes_to_the_session_then_the_layers_in_order() -> None:
    own = SessionHits("lambo", (_view("p0", 0.5),))
    team = SessionHits("team", (_view("t0", 0.5),))
    general = SessionHits("general", (_view("g0", 0.5),))
    assert _order(own, [team, general], 3, "relevance") == [
        ("lambo", "p0"),
        ("team", "t0"),
        ("general", "g0"),
    ]
    assert _order(own, [general, team], 2, "relevance") == [("lambo", "p0"), ("general", "g0")]


def test_m_rec_245_by_relevance_each_sessions_own_order_is_kept() -> None:
    """A session's later hit never passes its earlier one, whatever their scores; the hits
    are then not monotone in score (M-REC-245)."""
    own = SessionHits("lambo", (_view("p0", 0.3), _view("p1", 0.95)))
    layer = SessionHits("general", (_view("g0", 0.5),))
    assert _order(own, [layer], 3, "relevance") == [
        ("general", "g0"),
        ("lambo", "p0"),
        ("lambo", "p1"),
    ]


def test_m_rec_147_by_relevance_a_companion_follows_its_hit_and_takes_no_slot() -> None:
    """A companion (score 0.0) is not weighed: it follows its contradicted hit, and goes
    when that hit is cut."""
    own = SessionHits(
        "lambo",
        (_view("p0", 0.5, None, "⚠ x"), _view("p1", 0.0), _view("p2", 0.2)),
        companions=frozenset({"p1"}),
    )
    layer = SessionHits(
        "general",
        (_view("g0", 0.9, None, "⚠ y"), _view("g1", 0.0), _view("g2", 0.7)),
        companions=frozenset({"g1"}),
    )
    assert _order(own, [layer], 3, "relevance") == [
        ("general", "g0"),
        ("general", "g1"),
        ("general", "g2"),
        ("lambo", "p0"),
        ("lambo", "p1"),
    ]
    assert _order(own, [layer], 2, "relevance") == [
        ("general", "g0"),
        ("general", "g1"),
        ("general", "g2"),
    ]


def test_m_rec_242_by_relevance_the_sessions_copy_wins_at_its_own_score() -> None:
    """The layer's copy of a memory the session holds is not shown, however it scores: the
    session's copy names it and takes its place by the session's own score."""
    same = "release notes are drafted before the tag"
    own = SessionHits("lambo", (_view("p0", 0.3, same),))
    layer = SessionHits("general", (_view("g0", 0.93, same), _view("g1", 0.4)))
    merged = merge(own, [layer], 5, "relevance")
    assert [(s, v.node_id) for s, v in merged.hits] == [("general", "g1"), ("lambo", "p0")]
    assert merged.hits[1][1].also == (AlsoItem("g0", "general"),)
    assert merged.absorbed == {"p0": (("general", "g0"),)}


def test_serve_layer_merge_is_read_and_a_bad_value_is_refused_naming_it(tmp_path: Path) -> None:
    assert Settings.load({}, tmp_path).tuning.layer_merge == "relevance"
    chosen = Settings.load({"LCG_SERVE_LAYER_MERGE": "rank"}, tmp_path)
    assert chosen.tuning.layer_merge == "rank"
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_SERVE_LAYER_MERGE": "score"}, tmp_path)
    assert error.value.field == "LCG_SERVE_LAYER_MERGE"
    assert "rank | relevance" in error.value.message
