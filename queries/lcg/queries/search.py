"""Hybrid retrieval: BM25 (FTS5) leg, vector (FAISS) legs, graph expansion, fused (P-110..P-112).

Every result row carries `score` (fused, 0..1) and `ranks` (its rank in each leg, and the
graph hop that found it), so a ranking can be explained.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from lcg.projections.embedding.port import Vectors
from lcg.projections.graph import reader
from lcg.projections.graph.reader import EdgeRow, EntityRow
from lcg.projections.text import reader as text
from lcg.projections.text.scorer import TextScorer
from lcg.projections.vectors import catalog
from lcg.projections.vectors.index import VectorIndex
from lcg.queries import relevance
from lcg.queries.fusion import Fused, Fusion, K, best_per_key, fuse, fused_order
from lcg.queries.graph_reads import collapsing_groups, exact_groups
from lcg.queries.relevance import Floors
from lcg.queries.stages import (
    ENTITY_FROM,
    OFF,
    Stages,
    boost_speakers,
    mentioned_names,
    run_stages,
    scaled_vectors,
    speaker_of,
)

# knowledge_search_passages' default min_score (P-112 proposed 0.5): on a passage's best leg
# score, it drops off-topic hits and none of the evidence two corpora hold (ADR 0098)
PASSAGE_FLOOR = 0.3
GRAPH_DECAY = 0.5  # a neighbour found through a hit scores half of that hit, per hop
EXPAND_FROM = 3  # strong hits whose neighbours are added

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SearchContext:
    """What a search reads: the graph connection, the vector indexes and the query embedder."""

    conn: sqlite3.Connection
    vectors: VectorIndex
    embed_query: Callable[[str], Vectors]
    fusion: Fusion = "rrf"
    expand_depth: int = 1
    text_scorer: TextScorer | None = None  # in-memory bm25; None: FTS5 scores the query
    # Where the in-memory BM25 leg runs while this thread embeds the query (onnxruntime and
    # numpy release the GIL); None: on this thread, before the vector legs.
    pool: Executor | None = None
    # Waits, bounded, for the vector indexes to hold the acknowledged writes of the groups
    # (None: all) and returns how many are still pending (ADR 0047); None: no wait.
    await_vectors: Callable[[Sequence[str] | None], int] | None = None
    stages: Stages = OFF  # passage search's and recall's stages after fusion (ADR 0068)


class VectorsPending(TypedDict):
    """A read's `warning` when its vector legs did not get every acknowledged write of the
    groups it read within the wait (ADR 0047; the shape of P-106's warning object)."""

    type: Literal["vectors_pending"]
    vector_pending: int
    waited_ms: int
    message: str


def vectors_pending(pending: int, waited_ms: int) -> VectorsPending:
    return VectorsPending(
        type="vectors_pending",
        vector_pending=pending,
        waited_ms=waited_ms,
        message=f"{pending} acknowledged write(s) of the groups read are not in the vector "
        f"indexes yet (waited {waited_ms} ms): the meaning (vector) legs may miss them, the "
        "word (BM25) legs and graph reads include them; ask again shortly",
    )


class EmbedderFailed(TypedDict):
    """A read's `warning` when the embedder failed on its query: it read the word (BM25) and
    graph legs only (the shape of P-106's warning object)."""

    type: Literal["embedder_failed"]
    message: str


def embedder_failed(error: str) -> EmbedderFailed:
    return EmbedderFailed(
        type="embedder_failed",
        message=f"the embedder failed ({error}), so this search read the word (BM25) index and"
        " the graph only, not by meaning; the detail was logged",
    )


def query_embedding(ctx: SearchContext, query: str) -> tuple[Vectors | None, str | None]:
    """The query's embedding; or None and the failure's type name when the embedder fails
    (its full detail logged here), so that a server whose embedder is down still answers
    reads by their words (M-DER-135)."""
    try:
        return ctx.embed_query(query), None
    except Exception as error:  # any embedder failure: unreachable, restarting, too slow
        log.exception("embedding the query failed; reading without the vector legs")
        return None, type(error).__name__


def await_vectors(ctx: SearchContext, groups: Sequence[str] | None) -> VectorsPending | None:
    """Wait (bounded) for the groups' vectors; the warning when some did not arrive."""
    if ctx.await_vectors is None:
        return None
    started = time.perf_counter()
    pending = ctx.await_vectors(groups)
    waited_ms = round((time.perf_counter() - started) * 1000)
    return vectors_pending(pending, waited_ms) if pending else None


class Scored(TypedDict):
    """How a hit ranked: the fused score (0..1) and its rank in each leg or graph hop."""

    score: float
    ranks: dict[str, int]


class ScoredEntity(EntityRow, Scored):
    """An entity row of a search result."""


class ScoredEdge(EdgeRow, Scored):
    """A relationship row of a search result."""


class EntitySearchResult(TypedDict):
    nodes: list[ScoredEntity]
    count: int
    warning: NotRequired[VectorsPending | EmbedderFailed]


class EdgeSearchResult(TypedDict):
    edges: list[ScoredEdge]
    count: int
    warning: NotRequired[VectorsPending | EmbedderFailed]


class Passage(TypedDict):
    episode_uuid: str
    name: str
    group_id: str
    source: str
    source_description: str
    content: str
    part: int
    score: float
    ranks: dict[str, int]


class PassageSearchResult(TypedDict):
    passages: list[Passage]
    count: int
    warning: NotRequired[VectorsPending | EmbedderFailed]


def _candidates(num_results: int) -> int:
    return max(50, num_results * 4)


def text_leg(
    ctx: SearchContext, kind: str, query: str, groups: Sequence[str] | None, limit: int
) -> Callable[[], list[text.TextHit]]:
    """Start the BM25 leg; the returned function waits for it. Only the in-memory scorer
    runs on the pool (it touches no connection); FTS5 runs at once, on this thread."""
    scorer = ctx.text_scorer
    if scorer is None or ctx.pool is None:
        found = text.search(ctx.conn, kind, query, groups, limit, scorer)
        return lambda: found
    future = ctx.pool.submit(text.scored_docs, scorer, kind, query, groups, limit)

    def finish() -> list[text.TextHit]:
        scored = future.result()
        if scored is None:  # a phrase: FTS5 answers
            return text.search(ctx.conn, kind, query, groups, limit)
        return text.hits(ctx.conn, scored)

    return finish


def vector_leg(
    ctx: SearchContext,
    kind: str,
    embedding: Vectors | None,
    groups: Sequence[str] | None,
    limit: int,
) -> dict[str, list[tuple[tuple[str, int], float]]]:
    """Vector hits of a kind, split by embedding, as best-first (owner, part) lists; none
    without the query's embedding."""
    if embedding is None:
        return {}
    hits = ctx.vectors.search(kind, groups, embedding, limit)
    entries = catalog.describe(ctx.conn, [hit.vec_id for hit in hits])
    legs: dict[str, list[tuple[tuple[str, int], float]]] = {}
    for hit in hits:
        entry = entries.get(hit.vec_id)
        if entry is not None:
            legs.setdefault(entry.embedding, []).append(((entry.owner_uuid, entry.part), hit.score))
    return legs


def _expand(
    ctx: SearchContext, fused: list[Fused[K]], neighbours: Callable[[list[K]], dict[K, K]]
) -> list[Fused[K]]:
    """Add neighbours of the strongest hits, hop by hop, at a decayed score."""
    known = {entry.key: entry for entry in fused}
    frontier = [entry.key for entry in fused[:EXPAND_FROM]]
    for hop in range(1, ctx.expand_depth + 1):
        found = neighbours(frontier)
        frontier = []
        for neighbour, via in found.items():
            if neighbour in known:
                continue
            parent = known[via]
            entry = Fused(
                neighbour,
                parent.score * GRAPH_DECAY,
                parent.relevance * GRAPH_DECAY,
                {"graph": hop},
            )
            known[neighbour] = entry
            frontier.append(neighbour)
    return sorted(known.values(), key=fused_order)


def _owner_ranking(
    ctx: SearchContext,
    kind: str,
    vector_legs: dict[str, str],
    query: str,
    groups: Sequence[str] | None,
    limit: int,
    neighbours: Callable[[list[str]], dict[str, str]],
    floors: Floors | None,
) -> tuple[list[Fused[str]], str | None]:
    """BM25 over the kind's documents plus one vector leg per embedding, fused, then expanded;
    and the embedder's failure, if it failed on the query (the vector legs then find nothing).

    `vector_legs` maps a leg name to the embedding it ranks (e.g. name_vector -> NAME). With
    `floors`, only candidates with evidence clearing a floor are kept (their ranking is the
    fused one), and only they are expanded from.
    """
    finish_text = text_leg(ctx, kind, query, groups, limit)
    embedded, failed = query_embedding(ctx, query)
    vector = vector_leg(ctx, kind, embedded, groups, limit)
    text_hits = finish_text()
    legs = {"text": [(h.owner_uuid, h.score) for h in text_hits]}
    by_embedding: dict[str, list[tuple[str, float]]] = {}
    for leg, embedding in vector_legs.items():
        hits = vector.get(embedding, [])
        legs[leg] = by_embedding[embedding] = best_per_key(
            [(owner, score) for (owner, _), score in hits]
        )
    fused = fuse(legs, ctx.fusion)
    if floors is not None:
        share = text.coverage(ctx.conn, kind, query, text_hits, ctx.text_scorer)
        covered = [(h.owner_uuid, share.get(h.doc_id, 0.0)) for h in text_hits]
        kept = relevance.relevant(floors, covered, by_embedding)
        fused = [entry for entry in fused if entry.key in kept]
    return (_expand(ctx, fused, neighbours) if ctx.expand_depth else fused), failed


def find_entities(
    ctx: SearchContext,
    query: str,
    group_ids: Sequence[str] | None,
    num_results: int = 10,
    floors: Floors | None = None,
) -> EntitySearchResult:
    """Name vector + summary vector + FTS over [name, summary], fused; [] matches nothing.
    With `floors`, candidates with no evidence clearing a floor are dropped (ADR 0024)."""
    groups = exact_groups(group_ids)
    if groups is not None and not groups:
        return EntitySearchResult(nodes=[], count=0)
    warning: VectorsPending | EmbedderFailed | None = await_vectors(ctx, groups)
    fused, failed = _owner_ranking(
        ctx,
        "entity",
        {"name_vector": catalog.NAME, "summary_vector": catalog.SUMMARY},
        query,
        groups,
        _candidates(num_results),
        lambda keys: reader.neighbor_ids(ctx.conn, keys, groups),
        floors,
    )
    fused = fused[:num_results]
    warning = embedder_failed(failed) if failed else warning
    rows = {row["uuid"]: row for row in reader.entities_by_uuids(ctx.conn, [e.key for e in fused])}
    nodes = [
        ScoredEntity(**rows[e.key], score=_score(e), ranks=e.ranks) for e in fused if e.key in rows
    ]
    result = EntitySearchResult(nodes=nodes, count=len(nodes))
    if warning is not None:
        result["warning"] = warning
    return result


def find_relationships(
    ctx: SearchContext,
    query: str,
    group_ids: Sequence[str] | None,
    num_results: int = 10,
    floors: Floors | None = None,
) -> EdgeSearchResult:
    """Fact vector + FTS over [name, fact], fused; [] matches nothing; invalidated edges
    skipped. With `floors`, candidates with no evidence clearing a floor are dropped."""
    groups = exact_groups(group_ids)
    if groups is not None and not groups:
        return EdgeSearchResult(edges=[], count=0)
    warning: VectorsPending | EmbedderFailed | None = await_vectors(ctx, groups)
    fused, failed = _owner_ranking(
        ctx,
        "edge",
        {"fact_vector": catalog.FACT},
        query,
        groups,
        _candidates(num_results),
        lambda keys: _edge_neighbours(ctx, keys, groups),
        floors,
    )
    warning = embedder_failed(failed) if failed else warning
    rows = {
        row["uuid"]: row
        for row in reader.edges_by_uuids(ctx.conn, [e.key for e in fused])
        if row["invalid_at"] is None
    }
    edges = [
        ScoredEdge(**rows[e.key], score=_score(e), ranks=e.ranks) for e in fused if e.key in rows
    ][:num_results]
    result = EdgeSearchResult(edges=edges, count=len(edges))
    if warning is not None:
        result["warning"] = warning
    return result


def _edge_neighbours(
    ctx: SearchContext, edge_uuids: list[str], groups: Sequence[str] | None
) -> dict[str, str]:
    """Edges sharing an endpoint with the given edges: neighbour edge -> the edge via which."""
    found: dict[str, str] = {}
    for row in reader.edges_by_uuids(ctx.conn, edge_uuids):
        ends = [row["source_node_uuid"], row["target_node_uuid"]]
        for other in reader.edges_touching(ctx.conn, ends, groups, EXPAND_FROM * 10):
            if other != row["uuid"]:
                found.setdefault(other, row["uuid"])
    return found


def _passage_neighbours(
    ctx: SearchContext, keys: list[tuple[str, int]], groups: Sequence[str] | None
) -> dict[tuple[str, int], tuple[str, int]]:
    """The first passage of each episode that mentions an entity a given passage's episode
    mentions (the mentions knowledge_process_chunk records): neighbour -> the passage via
    which."""
    first_part: dict[str, tuple[str, int]] = {}
    for episode, part in keys:
        first_part.setdefault(episode, (episode, part))
    found = reader.co_mentioned_episodes(ctx.conn, list(first_part), groups, EXPAND_FROM * 10)
    return {(neighbour, 0): first_part[via] for neighbour, via in found.items()}


def search_passages(
    ctx: SearchContext,
    query: str,
    group_ids: Sequence[str] | None,
    num_results: int = 10,
    min_score: float = PASSAGE_FLOOR,
) -> PassageSearchResult:
    """Passages of episodes by BM25 and passage vectors, fused; [] means all groups (K-GID).

    `min_score` is a floor on a passage's best leg score (its cosine, or its bm25 over the
    best bm25), so a strong match in either leg is kept. Then, as for entities and facts,
    the graph: the strongest passages' episodes lead to the episodes that mention the same
    entities, whose first passage joins at half the score per hop (`ranks: {"graph": 1}`),
    whatever min_score.
    """
    num_results = min(max(num_results, 1), 100)  # P-112: clamped, not refused
    min_score = min(max(min_score, 0.0), 1.0)
    groups = collapsing_groups(group_ids)
    limit = _candidates(num_results)
    warning: VectorsPending | EmbedderFailed | None = await_vectors(ctx, groups)
    text_hits = text_leg(ctx, "passage", query, groups, limit)
    embedded, failed = query_embedding(ctx, query)
    warning = embedder_failed(failed) if failed else warning
    vector = vector_leg(ctx, "passage", embedded, groups, limit)
    legs: dict[str, list[tuple[tuple[str, int], float]]] = {
        "text": [((h.owner_uuid, h.part), h.score) for h in text_hits()],
        "passage_vector": vector.get(catalog.PASSAGE, []),
    }
    fused = [e for e in _fuse_passages(ctx, legs) if e.relevance >= min_score]
    if ctx.stages.vector_weight > 0:  # the floor reads the cosines; the order, the scaled leg
        kept = {e.key for e in fused}
        scaled = legs | {
            "passage_vector": scaled_vectors(legs["passage_vector"], ctx.stages.vector_weight)
        }
        fused = [e for e in _fuse_passages(ctx, scaled) if e.key in kept]
    if ctx.stages.speaker_weight > 0:
        fused = boost_speakers(fused, _speakers(ctx, fused), query, ctx.stages.speaker_weight)
    if ctx.stages.entity_hop > 0:
        fused = _entity_hop(ctx, query, fused, groups, limit)
    if ctx.expand_depth:
        fused = _expand(ctx, fused, lambda keys: _passage_neighbours(ctx, keys, groups))
    if ctx.stages.reorders:
        fused = _staged(ctx, query, fused, num_results)
    fused = fused[:num_results]
    episodes = reader.episode_infos(ctx.conn, [e.key[0] for e in fused])
    contents = text.passage_texts(ctx.conn, [e.key for e in fused])
    passages: list[Passage] = []
    for entry in fused:
        episode_uuid, part = entry.key
        info = episodes.get(episode_uuid)
        content = contents.get(entry.key)
        if info is None or content is None:
            continue
        passages.append(
            Passage(
                episode_uuid=episode_uuid,
                name=info["name"],
                group_id=info["group_id"],
                source=info["source"],
                source_description=info["source_description"],
                content=content,
                part=part,
                score=_score(entry),
                ranks=entry.ranks,
            )
        )
    result = PassageSearchResult(passages=passages, count=len(passages))
    if warning is not None:
        result["warning"] = warning
    return result


def _fuse_passages(
    ctx: SearchContext, legs: dict[str, list[tuple[tuple[str, int], float]]]
) -> list[Fused[tuple[str, int]]]:
    """Passage search's fusion: reciprocal rank fusion with the vector leg weighted by
    stages.rrf_vector and k = stages.rrf_k (ADR 0090), or, with rrf_vector 0, ctx.fusion."""
    stages = ctx.stages
    if stages.rrf_vector <= 0:
        return fuse(legs, ctx.fusion)
    return fuse(legs, "rrf", stages.rrf_k, weights={"passage_vector": stages.rrf_vector})


def _entity_hop(
    ctx: SearchContext,
    query: str,
    fused: list[Fused[tuple[str, int]]],
    groups: Sequence[str] | None,
    limit: int,
) -> list[Fused[tuple[str, int]]]:
    """Multi-hop without an LLM: the names (capitalised words) the strongest hits mention
    and the query does not are searched by BM25; a passage found so, not found before,
    joins at stages.entity_hop x its source's score x its bm25 share (`ranks: {"entity": n}`)."""
    strongest = fused[:ENTITY_FROM]
    if not strongest:
        return fused
    texts = text.passage_texts(ctx.conn, [e.key for e in strongest])
    names = mentioned_names([texts.get(e.key, "") for e in strongest], query, text.STOP_WORDS)
    if not names:
        return fused
    found = text_leg(ctx, "passage", " ".join(names), groups, limit)()
    if not found:
        return fused
    known = {entry.key: entry for entry in fused}
    source = strongest[0]
    weight = ctx.stages.entity_hop
    top = found[0].score or 1.0
    for rank, hit in enumerate(found, start=1):
        key = (hit.owner_uuid, hit.part)
        if key in known:
            continue
        share = max(0.0, hit.score / top)
        known[key] = Fused(
            key,
            source.score * weight * share,
            source.relevance * weight * share,
            {"entity": rank},
        )
    return sorted(known.values(), key=fused_order)


def _speakers(
    ctx: SearchContext, fused: list[Fused[tuple[str, int]]]
) -> dict[tuple[str, int], str]:
    """The speaker of each candidate of a `message` episode ("Name: ..."), by key."""
    infos = reader.episode_infos(ctx.conn, list({e.key[0] for e in fused}))
    keys = [e.key for e in fused if e.key[0] in infos and infos[e.key[0]]["source"] == "message"]
    texts = text.passage_texts(ctx.conn, keys)
    found = {key: speaker_of(texts.get(key, "")) for key in keys}
    return {key: speaker for key, speaker in found.items() if speaker}


def _staged(
    ctx: SearchContext, query: str, fused: list[Fused[tuple[str, int]]], num_results: int
) -> list[Fused[tuple[str, int]]]:
    """The stages ctx.stages turns on, a passage placed by its episode's group and time."""
    infos = reader.episode_infos(ctx.conn, list({e.key[0] for e in fused}))
    placed = {
        e.key: (infos[e.key[0]]["group_id"], infos[e.key[0]]["valid_at"])
        for e in fused
        if e.key[0] in infos
    }
    return run_stages(ctx.stages, query, fused, placed, num_results)


def _score(entry: Fused[K]) -> float:
    return round(entry.score, 6)
