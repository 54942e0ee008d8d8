"""When a find hit is relevant: per-leg floors calibrated for an embedding model (ADR 0024).

The vector legs always return their k nearest, so a query nothing answers ("zebra") used to
return every entity. A candidate is kept when one piece of its evidence clears its floor: a
vector leg's cosine, or its BM25 match's coverage of the query's idf (`text.reader.coverage`).
Cosine scales differ by model and by what is embedded (a short name against a short query
scores higher than a sentence does), so the floors are per embedding and calibrated per model
on the labelled set in fixtures/ (`bench/bench_find.py`); a model without a calibration gets
no floor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from lcg.projections.embedding import minilm
from lcg.projections.vectors import catalog

K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Floors:
    """What a candidate needs to be kept: a cosine at or above its embedding's floor, or a
    BM25 match covering at least `coverage` of the query's idf."""

    name: float  # name_embedding cosine
    summary: float  # summary_embedding cosine
    fact: float  # fact_embedding cosine
    coverage: float  # share of the query's idf a BM25 match holds (0..1)
    # A vector hit must also be within `margin` of its leg's best cosine. Measured on the
    # labelled set and left off by default: it bought precision with recall (ADR 0024).
    margin: float | None = None

    def cosine(self, embedding: str) -> float:
        return {catalog.NAME: self.name, catalog.SUMMARY: self.summary}.get(embedding, self.fact)


# all-MiniLM-L6-v2, calibrated on the calibration set of fixtures/lcg/fixtures/data/
# find-labels.json. For its queries nothing answers, the nearest name reached a cosine of 0.40
# ("penguin" -> "Kestrel"), the nearest summary or fact 0.22 (0.29 for one sharing a word:
# "job interview tips"), and a BM25 match covered at most 0.35 of a query ("release the
# hounds"). Each floor sits above those; what it costs in recall: docs/adr/0024-find-floor.md.
MINILM = Floors(name=0.45, summary=0.30, fact=0.30, coverage=0.40)
CALIBRATED = {minilm.MODEL_NAME: MINILM}


def for_model(model: str) -> Floors | None:
    """The floors calibrated for an embedding model; None (no floor) for any other."""
    return CALIBRATED.get(model)


def relevant(
    floors: Floors,
    text: Iterable[tuple[K, float]],
    vectors: Mapping[str, Iterable[tuple[K, float]]],
) -> set[K]:
    """The keys with a piece of evidence at or above its floor.

    `text` is (key, coverage) per BM25 hit; `vectors` maps an embedding to its (key, cosine)
    hits, best first."""
    kept = {key for key, share in text if share >= floors.coverage}
    for embedding, hits in vectors.items():
        ranked = list(hits)
        floor = floors.cosine(embedding)
        if floors.margin is not None and ranked:
            floor = max(floor, max(cosine for _, cosine in ranked) - floors.margin)
        kept.update(key for key, cosine in ranked if cosine >= floor)
    return kept
