"""Passage search's fusion (issue 31, ADR 0090): its BM25 and vector legs fused by reciprocal
rank fusion, the vector leg weighted 0.25 and k = 60, on a real workspace (hashing embedder,
in-memory BM25, FAISS), against the `max` fusion it replaced (`[retrieval] rrf_vector = 0`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.tools.search import search_context
from lcg.queries import search
from lcg.queries.stages import OFF, Stages
from tests.conftest import Call

MAX = replace(OFF, rrf_vector=0.0)  # the fusion before ADR 0090: [fusion] strategy (max)
FILLERS = (
    "is that where we were on the",
    "that is where we were to on the",
    "where is that, we were on the",
    "we were there, that is the one to",
    "is it the one that we were on",
)
TURNS = {
    # one of the question's rarer words, in a short turn: high by BM25, far by meaning
    "rare": "Emi: lighthouse",
    # two of its words among many of its stop words: third by BM25, nearest by meaning
    "near": "Elise: where is it that we like to be on the weekend, that is where we were",
    "kate-1": "Kate: the weekend was fine",
    "kate-2": "Kate: the weekend, we were there",
    "kate-3": "Kate: go go go",
    # stop words alone: no BM25 match, near by meaning (the hashing embedder reads them)
    **{f"filler-{n}": f"Kate: {words}" for n, words in enumerate(FILLERS)},
}
QUESTION = "where is the lighthouse that we like to go to on the weekend"


def _passages(app: App, stages: Stages, floor: float = 0.0) -> list[search.Passage]:
    ctx = replace(search_context(app), stages=stages, expand_depth=0)
    return search.search_passages(ctx, QUESTION, ["f"], 10, floor)["passages"]


@pytest.fixture
def turns(call: Call) -> None:
    for n, (name, body) in enumerate(TURNS.items()):
        call(
            "knowledge_add_episode",
            name=name,
            episode_body=body,
            group_id="f",
            source="text",
            reference_time=f"2024-03-{n + 1:02d}T10:00:00Z",
        )


def test_issue_31_default_passage_fusion_is_weighted_rrf(app: App, turns: None) -> None:
    """Every passage's score is (1 / (60 + text rank) + 0.25 / (60 + vector rank)), over what
    first place in both legs scores: a leg that did not find it adds nothing."""
    found = _passages(app, search_context(app).stages)
    assert found, "the question shares words with two turns"
    best = (1 + 0.25) / 61
    for passage in found:
        ranks = passage["ranks"]
        expected = 1 / (60 + ranks["text"]) if "text" in ranks else 0.0
        if "passage_vector" in ranks:
            expected += 0.25 / (60 + ranks["passage_vector"])
        assert passage["score"] == pytest.approx(expected / best, abs=1e-6)


def test_issue_31_a_passage_both_legs_rank_high_outranks_bm25s_first_far_by_meaning(
    app: App, turns: None
) -> None:
    """Under `max` the BM25 leg's first hit scores 1.0 and leads whatever the vector leg says
    (here "go go go", tenth by meaning); under the weighted rrf the passage third by BM25 and
    first by meaning leads, the two BM25 hits far by meaning after it."""
    before = _passages(app, MAX)
    assert before[0]["ranks"]["text"] == 1
    assert before[0]["score"] == pytest.approx(1.0)
    after = _passages(app, search_context(app).stages)
    assert after[0]["name"] == "near"
    assert after[0]["ranks"]["passage_vector"] == 1
    assert after[0]["ranks"]["text"] == 3
    assert [p["name"] for p in after[1:3]] == [p["name"] for p in before[:2]]
    assert {p["name"] for p in after} == {p["name"] for p in before}  # the same hits


def test_issue_31_the_relevance_floor_keeps_what_it_kept_under_max(app: App, turns: None) -> None:
    """min_score reads each passage's best leg score, not its fused one: the same passages
    clear the tool's default floor (0.5) under either fusion."""
    kept_max = {p["name"] for p in _passages(app, MAX, floor=0.5)}
    kept_rrf = {p["name"] for p in _passages(app, search_context(app).stages, floor=0.5)}
    assert kept_rrf == kept_max
    assert kept_rrf
