"""Fusing ranked legs (BM25, vectors, graph) into one ranking that keeps per-leg ranks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

# What a hit is keyed by: an owner uuid, or (episode uuid, passage part). Keys order ties, so
# equal scores rank the same way however a leg (FTS5, FAISS) happened to return them, and
# before and after a rebuild (issue 9).
K = TypeVar("K", str, tuple[str, int])
Fusion = Literal["rrf", "max", "convex"]
RRF_K = 60


@dataclass
class Fused(Generic[K]):
    """A candidate with its fused score, its best leg score, and its rank in each leg."""

    key: K
    score: float = 0.0
    relevance: float = 0.0  # best normalised leg score: cosine, or bm25 / best bm25
    ranks: dict[str, int] = field(default_factory=dict)


def normalise_leg(leg: str, hits: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    """Scores on 0..1: cosine clipped at 0 for vector legs, bm25 over the leg's best otherwise."""
    if not hits:
        return []
    if leg.endswith("vector"):
        return [(key, max(0.0, min(1.0, score))) for key, score in hits]
    top = max(score for _, score in hits) or 1.0
    return [(key, max(0.0, score / top)) for key, score in hits]


def fuse(
    legs: Mapping[str, Sequence[tuple[K, float]]],
    fusion: Fusion,
    rrf_k: float = RRF_K,
    *,
    raw: bool = False,
    weights: Mapping[str, float] | None = None,
) -> list[Fused[K]]:
    """Reciprocal rank fusion, max of leg scores, or their convex combination.

    Each leg is a best-first list of (key, raw score); a key appears once per leg. With `raw`,
    max takes the legs' raw scores (bm25 is then not capped at 1: lambo_recall, M-REC-026).
    `weights` (a leg not named: 1.0) weigh rrf's and convex's terms: rrf adds weight / (k +
    rank), convex adds weight x the normalised score (a leg that did not find a key adds 0);
    both are divided by what first place in every leg scores, so that is 1.0.
    """
    live = {
        name: by_score(hits) if raw else normalise_leg(name, by_score(hits))
        for name, hits in legs.items()
        if hits
    }
    by_key: dict[K, Fused[K]] = {}
    for name, hits in live.items():
        for rank, (key, score) in enumerate(hits, start=1):
            entry = by_key.setdefault(key, Fused(key))
            if name in entry.ranks:
                continue
            entry.ranks[name] = rank
            entry.relevance = max(entry.relevance, score)
            weight = 1.0 if weights is None else weights.get(name, 1.0)
            entry.score = add_leg(fusion, entry.score, rank, score, weight, rrf_k)
    if fusion != "max" and live:
        best = first_place(
            fusion, [1.0 if weights is None else weights.get(n, 1.0) for n in live], rrf_k
        )
        for entry in by_key.values():
            entry.score /= best
    return sorted(by_key.values(), key=fused_order)


def add_leg(
    fusion: Fusion, total: float, rank: int, score: float, weight: float = 1.0, rrf_k: float = RRF_K
) -> float:
    """A key's fused score so far with one more leg's hit taken in, as `fuse` takes it: rrf adds
    weight / (k + rank), convex adds weight x score, max keeps the larger score."""
    if fusion == "rrf":
        return total + weight / (rrf_k + rank)
    if fusion == "convex":
        return total + weight * score
    return max(total, score)


def first_place(fusion: Fusion, weights: Sequence[float], rrf_k: float = RRF_K) -> float:
    """What first place in every live leg (of these weights) scores before scaling: the divisor
    that makes it 1.0 under rrf and convex (max is not scaled: 1.0)."""
    if fusion == "max" or not weights:
        return 1.0
    total = sum(weights)
    return (total / (rrf_k + 1) if fusion == "rrf" else total) or 1.0


def by_score(hits: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    """Best first; equal scores by key."""
    return sorted(hits, key=lambda hit: (-hit[1], hit[0]))


def fused_order(entry: Fused[K]) -> tuple[float, float, K]:
    """Fused score, then best leg score, then key: the one order of every result list."""
    return (-entry.score, -entry.relevance, entry.key)


def best_per_key(hits: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    """Keep each key's first (best) hit of a best-first list."""
    seen: dict[K, float] = {}
    for key, score in hits:
        seen.setdefault(key, score)
    return list(seen.items())
