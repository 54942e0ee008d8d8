"""lambo_recall's retrieval: keyword, vector and recent legs over a session's concepts, fused,
then expanded through the memory graph (seed 001, M-REC 4.2).

The legs are the search projections `knowledge_*` search reads (search.text_leg over the
`concept` kind of the text projection, search.vector_leg over the concept FAISS index), so one
retrieval core serves both families. Fusion is `max` of the legs' raw scores by default (a
hit's relevance is the highest of its keyword, vector and recent scores, M-REC-026: bm25 is
not capped at 1) or `rrf`. Graph expansion adds, hop by hop up to `traversal_depth`, concepts
one edge away from the strongest hits at a decayed score.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from lcg.projections.embedding.port import Vectors
from lcg.projections.memory import state
from lcg.projections.text.reader import TextHit
from lcg.projections.vectors import catalog
from lcg.queries.fusion import Fused, Fusion, best_per_key, fuse, fused_order
from lcg.queries.search import GRAPH_DECAY, SearchContext, text_leg, vector_leg
from lcg.queries.stages import boost_speakers, run_stages, speaker_of

RECENT_SCORE = 0.25  # the recent leg's fixed score: below a real match by meaning (ADR 0027)
RECENT_INTERACTIONS = 5  # how many of the session's last writes the recent leg reads
EXPAND_FROM = 3  # strong hits whose neighbours are added per hop


@dataclass
class RecallHit:
    """A concept recall returns: its score and how each leg (or graph hop) ranked it."""

    node_id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    # both fused values of a hit a query leg found, `max` and `rrf`, whichever ranked the
    # recall (the --ledger recall line's `fusion`, M-REC-028); empty for a graph neighbour
    fused: dict[str, float] = field(default_factory=dict)
    # each query leg's own score of the hit (bm25: the keyword score, higher is better, not
    # capped at 1; vector: the cosine; recent: its fixed RECENT_SCORE); a graph neighbour's
    # "graph" rank is its hop, with no score of its own (its score is its parent's, decayed)
    scores: dict[str, float] = field(default_factory=dict)


def recall_concepts(
    ctx: SearchContext,
    session: str,
    query: str,
    top_k: int,
    traversal_depth: int,
    fusion: Fusion = "max",
    take: int | None = None,
    by_vector: Vectors | None = None,
) -> list[RecallHit]:
    """The session's best `top_k` concepts for `query`, best first (ties by node id).

    `take` returns that many of the ranked hits instead (skip_redundant reads past top_k for
    the hits it skips); the legs read as many candidates either way, so the first `top_k`
    are the same. `by_vector`: the vector leg searches by it instead of the query's
    embedding (a recall by vector, M-REC-270), which is neither stored nor cached; blank
    text then finds nothing through the keyword leg and leaves recent interactions out
    (M-REC-274)."""
    limit = max(50, top_k * 4)
    groups = [session]
    if by_vector is not None:
        vector = by_vector
        ctx = replace(ctx, embed_query=lambda _text: vector)
    words = bool(query.strip())
    finish_text = text_leg(ctx, "concept", query, groups, limit) if words else _no_words
    vectors = vector_leg(ctx, "concept", query, groups, limit).get(catalog.CONCEPT, [])
    legs = {
        "bm25": best_per_key([(hit.owner_uuid, hit.score) for hit in finish_text()]),
        "vector": best_per_key([(owner, score) for (owner, _), score in vectors]),
    }
    if words:
        recent = state.recent_concepts(ctx.conn, session, RECENT_INTERACTIONS)
        legs["recent"] = [(node, RECENT_SCORE) for node in recent]
    fused = fuse(legs, fusion, raw=fusion == "max")
    values = _both_fused(legs, fused, fusion)
    if ctx.stages.speaker_weight > 0:
        fused = _by_speaker(ctx, query, fused)
    if traversal_depth:
        fused = _expand(ctx, session, fused, traversal_depth)
    if ctx.stages.reorders:
        fused = _staged(ctx, session, query, fused, top_k)
    by_leg = {name: dict(hits) for name, hits in legs.items()}
    return [
        RecallHit(e.key, e.score, e.ranks, values.get(e.key, {}), _leg_scores(by_leg, e))
        for e in fused[: take or top_k]
    ]


def _leg_scores(by_leg: dict[str, dict[str, float]], entry: Fused[str]) -> dict[str, float]:
    return {
        name: round(by_leg[name][entry.key], 6)
        for name in entry.ranks
        if entry.key in by_leg.get(name, {})
    }


def _no_words() -> list[TextHit]:
    """The keyword leg of a recall by vector sent without text: it finds nothing."""
    return []


def _both_fused(
    legs: dict[str, list[tuple[str, float]]], fused: list[Fused[str]], fusion: Fusion
) -> dict[str, dict[str, float]]:
    """Each leg hit's `max` and `rrf` values: the one that ranked, and the other fusion of
    the same legs (one more pass over the candidates)."""
    other: Fusion = "rrf" if fusion == "max" else "max"
    scores = {e.key: e.score for e in fuse(legs, other, raw=other == "max")}
    both: dict[str, dict[str, float]] = {}
    for e in fused:
        if e.key in scores:
            mine = {fusion: round(e.score, 6), other: round(scores[e.key], 6)}
            both[e.key] = {"max": mine["max"], "rrf": mine["rrf"]}
    return both


def _by_speaker(ctx: SearchContext, query: str, fused: list[Fused[str]]) -> list[Fused[str]]:
    """The speaker stage (ADR 0099): a concept whose content is a chat turn ("Name: ...")
    whose speaker the query names scores 1 + speaker_weight times its fused score."""
    nodes = state.nodes_by_uuid(ctx.conn, [e.key for e in fused])
    speakers = {uuid: speaker_of(node.content) for uuid, node in nodes.items()}
    named = {uuid: who for uuid, who in speakers.items() if who}
    return boost_speakers(fused, named, query, ctx.stages.speaker_weight)


def _staged(
    ctx: SearchContext, session: str, query: str, fused: list[Fused[str]], top_k: int
) -> list[Fused[str]]:
    """The stages ctx.stages turns on (ADR 0068), a concept placed in its session at its
    `about_time` (the entity hop is passage search's only)."""
    nodes = state.nodes_by_uuid(ctx.conn, [e.key for e in fused])
    placed = {uuid: (session, node.about_time) for uuid, node in nodes.items()}
    return run_stages(ctx.stages, query, fused, placed, top_k)


def _expand(
    ctx: SearchContext, session: str, fused: list[Fused[str]], depth: int
) -> list[Fused[str]]:
    known = {entry.key: entry for entry in fused}
    frontier = [entry.key for entry in fused[:EXPAND_FROM]]
    for hop in range(1, depth + 1):
        found = state.neighbours(ctx.conn, session, frontier)
        frontier = []
        for neighbour, via in sorted(found.items()):
            if neighbour in known:
                continue
            parent = known[via]
            known[neighbour] = Fused(
                neighbour,
                parent.score * GRAPH_DECAY,
                parent.relevance * GRAPH_DECAY,
                {"graph": hop},
            )
            frontier.append(neighbour)
    return sorted(known.values(), key=fused_order)
