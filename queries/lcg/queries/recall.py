"""lambo_recall's retrieval: keyword, vector and recent legs over a session's concepts, fused,
then expanded through the memory graph (seed 001, M-REC 4.2).

The legs read the search projections `knowledge_*` search reads (the `concept` kind of the
text projection and its in-memory BM25 scorer, the concept FAISS index), so one retrieval core
serves both families. `candidates` reads the legs of one or several sessions in one pass (a
layered recall's, ADR 0097): each session gets the candidates a recall of it alone reads.
`ranked` fuses one session's: `max` of the legs' raw scores by default (a hit's relevance is
the highest of its keyword, vector and recent scores, M-REC-026: bm25 is not capped at 1) or
`rrf`; graph expansion then adds, hop by hop up to `traversal_depth`, concepts one edge away
from the strongest hits at a decayed score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lcg.projections.embedding.port import Vectors
from lcg.projections.memory import state
from lcg.projections.text import reader as text
from lcg.projections.text.reader import TextHit
from lcg.projections.vectors import catalog
from lcg.queries.fusion import (
    Fused,
    Fusion,
    add_leg,
    best_per_key,
    first_place,
    fuse,
    fused_order,
)
from lcg.queries.search import GRAPH_DECAY, SearchContext, query_embedding
from lcg.queries.stages import boost_speakers, run_stages, speaker_of

RECENT_SCORE = 0.25  # the recent leg's fixed score: below a real match by meaning (ADR 0027)
RECENT_INTERACTIONS = 5  # how many of the session's last writes the recent leg reads
EXPAND_FROM = 3  # strong hits whose neighbours are added per hop
CONCEPT = "concept"  # the kind of document and vector a recall reads
EMBEDDER_DOWN = (
    "recall: the embedder failed ({}), so this recall read the keyword and recent legs only,"
    " not by meaning; the detail was logged"
)


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
) -> list[RecallHit]:
    """The session's best `top_k` concepts for `query`, best first (ties by node id).

    `take` returns that many of the ranked hits instead (skip_redundant reads past top_k for
    the hits it skips); the legs read as many candidates either way, so the first `top_k`
    are the same. A recall by vector (M-REC-270) gives a `ctx` whose `embed_query` answers
    its vector, which is neither stored nor cached; blank text then finds nothing through the
    keyword leg and leaves recent interactions out (M-REC-274)."""
    found = candidates(ctx, [session], query, top_k)[session]
    return ranked(ctx, session, query, found, top_k, traversal_depth, fusion, take)


@dataclass(frozen=True, slots=True)
class Candidates:
    """One session's keyword and vector leg hits, as its own recall reads them; `words`:
    whether the query has any (without, the keyword and recent legs find nothing);
    `warnings`: the recall's lines about a leg it could not read (the embedder down)."""

    text_hits: list[TextHit]
    vectors: list[tuple[tuple[str, int], float]]
    words: bool
    warnings: tuple[str, ...] = ()


def candidates(
    ctx: SearchContext, sessions: Sequence[str], query: str, top_k: int
) -> dict[str, Candidates]:
    """Each session's leg hits as a recall of that session alone reads them, from one
    retrieval (a layered recall's, ADR 0097): the query scored once by the keyword index and
    embedded once, each session's candidates cut from that pass, their owners and catalog
    rows read in one query each. Every leg reads as many candidates per session as a
    one-session recall does. An embedder that fails leaves the keyword and recent legs, with
    a warning: a server whose embedder is down still answers reads (M-DER-135)."""
    limit = max(50, top_k * 4)
    words = bool(query.strip())
    finish_text = _text_legs(ctx, query, sessions, limit) if words else _no_words
    embedding, warnings = _query_vector(ctx, query)
    vectors = {} if embedding is None else _vector_legs(ctx, embedding, sessions, limit)
    texts = finish_text()
    said = {sessions[0]: warnings} if sessions else {}  # one warning: the query is embedded once
    return {
        s: Candidates(texts.get(s, []), vectors.get(s, []), words, said.get(s, ()))
        for s in sessions
    }


def _query_vector(ctx: SearchContext, query: str) -> tuple[Vectors | None, tuple[str, ...]]:
    """The query's embedding, or None and the warning saying the embedder failed (its full
    detail logged, M-ERR-003)."""
    embedded, failed = query_embedding(ctx, query)
    return embedded, (() if failed is None else (EMBEDDER_DOWN.format(failed),))


def ranked(
    ctx: SearchContext,
    session: str,
    query: str,
    found: Candidates,
    top_k: int,
    traversal_depth: int,
    fusion: Fusion = "max",
    take: int | None = None,
) -> list[RecallHit]:
    """One session's candidates fused, expanded through its graph and staged: its best
    `top_k` (or `take`) concepts, best first (ties by node id)."""
    legs = {
        "bm25": best_per_key([(hit.owner_uuid, hit.score) for hit in found.text_hits]),
        "vector": best_per_key([(owner, score) for (owner, _), score in found.vectors]),
    }
    if found.words:
        recent = state.recent_concepts(ctx.conn, session, RECENT_INTERACTIONS)
        legs["recent"] = [(node, RECENT_SCORE) for node in recent]
    fused = fuse(legs, fusion, raw=fusion == "max")
    leg_hits = {e.key: e for e in fused}  # as fused: the stages replace, never change, them
    if ctx.stages.speaker_weight > 0:
        fused = _by_speaker(ctx, query, fused)
    if traversal_depth:
        fused = _expand(ctx, session, fused, traversal_depth)
    if ctx.stages.reorders:
        fused = _staged(ctx, session, query, fused, top_k)
    by_leg = {name: dict(hits) for name, hits in legs.items()}
    chosen = fused[: take or top_k]
    values = _both_fused(
        legs, by_leg, [leg_hits[e.key] for e in chosen if e.key in leg_hits], fusion
    )
    return [
        RecallHit(e.key, e.score, e.ranks, values.get(e.key, {}), _leg_scores(by_leg, e))
        for e in chosen
    ]


def _text_legs(
    ctx: SearchContext, query: str, sessions: Sequence[str], limit: int
) -> Callable[[], dict[str, list[TextHit]]]:
    """Start each session's keyword leg (search.text_leg's, the concept kind); the returned
    function waits for them. The in-memory scorer scores the query and finds its matching
    documents once, split by session (TextScorer.search_each), on the pool while this thread
    embeds the query; the documents' owners are then read in one query. FTS5 (a phrase, or
    bm25_engine "fts5") answers each session with its own query, at once, on this thread."""
    scorer = ctx.text_scorer
    if scorer is None or ctx.pool is None:
        ranked = (
            None if scorer is None else text.scored_each(scorer, CONCEPT, query, sessions, limit)
        )
        found = _owners(ctx, query, sessions, limit, ranked)
        return lambda: found
    future = ctx.pool.submit(text.scored_each, scorer, CONCEPT, query, sessions, limit)
    return lambda: _owners(ctx, query, sessions, limit, future.result())


def _owners(
    ctx: SearchContext,
    query: str,
    sessions: Sequence[str],
    limit: int,
    ranked: dict[str, list[tuple[int, float]]] | None,
) -> dict[str, list[TextHit]]:
    if ranked is None:  # FTS5 ranks each session
        return {s: text.search(ctx.conn, CONCEPT, query, [s], limit) for s in sessions}
    found = {
        hit.doc_id: hit for hit in text.hits(ctx.conn, [p for s in sessions for p in ranked[s]])
    }
    return {s: [found[doc] for doc, _ in ranked[s] if doc in found] for s in sessions}


def _vector_legs(
    ctx: SearchContext, embedding: Vectors, sessions: Sequence[str], limit: int
) -> dict[str, list[tuple[tuple[str, int], float]]]:
    """Each session's concept vector leg (search.vector_leg's): the query embedded once, each
    session's index searched, the hits' catalog rows read in one query."""
    found = {s: ctx.vectors.search(CONCEPT, [s], embedding, limit) for s in sessions}
    entries = catalog.describe(ctx.conn, [hit.vec_id for hits in found.values() for hit in hits])
    legs: dict[str, list[tuple[tuple[str, int], float]]] = {}
    for session, hits in found.items():
        leg = legs[session] = []
        for hit in hits:
            entry = entries.get(hit.vec_id)
            if entry is not None and entry.embedding == catalog.CONCEPT:
                leg.append(((entry.owner_uuid, entry.part), hit.score))
    return legs


def _leg_scores(by_leg: dict[str, dict[str, float]], entry: Fused[str]) -> dict[str, float]:
    return {
        name: round(by_leg[name][entry.key], 6)
        for name in entry.ranks
        if entry.key in by_leg.get(name, {})
    }


def _no_words() -> dict[str, list[TextHit]]:
    """The keyword legs of a recall by vector sent without text: they find nothing."""
    return {}


def _both_fused(
    legs: dict[str, list[tuple[str, float]]],
    by_leg: dict[str, dict[str, float]],
    fused: list[Fused[str]],
    fusion: Fusion,
) -> dict[str, dict[str, float]]:
    """The `max` and `rrf` values of the leg hits `fused` (as `fuse` left them): the one that
    ranked, and the other fusion of the same legs, taken leg by leg in the order `fuse` met
    them through its own arithmetic (`add_leg`, `first_place`) from each hit's leg ranks (rrf)
    or raw leg scores (`by_leg`, max), without fusing every candidate again."""
    other: Fusion = "rrf" if fusion == "max" else "max"
    best = first_place(other, [1.0 for hits in legs.values() if hits])
    both: dict[str, dict[str, float]] = {}
    for e in fused:
        score = 0.0
        for name, rank in e.ranks.items():
            score = add_leg(other, score, rank, by_leg[name][e.key])
        mine = {fusion: round(e.score, 6), other: round(score / best, 6)}
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
