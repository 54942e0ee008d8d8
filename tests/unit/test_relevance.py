"""The find tools' relevance rule (ADR 0024): any evidence clearing its floor keeps a candidate."""

from __future__ import annotations

from dataclasses import replace

from lcg.projections.embedding.hashing import MODEL_NAME as HASHING
from lcg.projections.embedding.minilm import MODEL_NAME as MINILM_MODEL
from lcg.projections.vectors import catalog
from lcg.queries import relevance
from lcg.queries.relevance import Floors

FLOORS = Floors(name=0.45, summary=0.30, fact=0.30, coverage=0.40)


def test_a_candidate_is_kept_by_any_one_piece_of_evidence_clearing_its_floor() -> None:
    kept = relevance.relevant(
        FLOORS,
        [("by-words", 0.5), ("few-words", 0.39)],
        {
            catalog.NAME: [("by-name", 0.45), ("near-name", 0.44)],
            catalog.SUMMARY: [("by-summary", 0.30), ("near-name", 0.29)],
        },
    )
    assert kept == {"by-words", "by-name", "by-summary"}


def test_a_name_cosine_needs_more_than_a_summary_or_fact_cosine() -> None:
    """Short texts against a short query score high by chance: "zebra" meets "Kestrel" at
    0.37 by name, and no summary above 0.29."""
    for embedding, kept in ((catalog.NAME, set()), (catalog.SUMMARY, {"x"}), (catalog.FACT, {"x"})):
        assert relevance.relevant(FLOORS, [], {embedding: [("x", 0.40)]}) == kept


def test_nothing_clears_no_floor_and_nothing_comes_back() -> None:
    assert relevance.relevant(FLOORS, [("w", 0.2)], {catalog.SUMMARY: [("s", 0.21)]}) == set()


def test_a_margin_also_asks_a_vector_hit_to_be_near_its_legs_best() -> None:
    hits = {catalog.SUMMARY: [("best", 0.80), ("near", 0.66), ("far", 0.60)]}
    assert relevance.relevant(replace(FLOORS, margin=0.15), [], hits) == {"best", "near"}
    assert relevance.relevant(FLOORS, [], hits) == {"best", "near", "far"}


def test_only_the_bundled_minilm_has_a_calibration() -> None:
    assert relevance.for_model(MINILM_MODEL) is relevance.MINILM
    assert relevance.for_model(HASHING) is None  # the tests' stand-in: no floor
    assert relevance.for_model(f"{MINILM_MODEL}@128") is None
